"""Manifest trees as a source: walk, read bytes, pre-scan, and parse only what can matter.

Most files in a real tree have nothing to do with GPUs. Reading bytes and looking for a few
needles first keeps a 10,000-file tree close to grep's speed; only documents that contain a
needle are parsed.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from gpudra.errors import UnreadableInputError
from gpudra.model import InputError, Skipped
from gpudra.objects import ManifestObject, TemplateText, template_objects
from gpudra.sources import FileTree, Item, ScanStats
from gpudra.sources.documents import (
    Chunk,
    ParsedDocument,
    ParseError,
    parse_chunk,
    parse_data,
    split_documents,
)
from gpudra.sources.json_lines import load_json
from gpudra.sources.prescan import AUDIT_NEEDLES, might_matter

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "vendor", "third_party",
                          ".terraform", "__pycache__", ".venv", ".tox"})
# The audit's pre-scan needles (gpudra.sources.prescan explains both lists).
NEEDLES = AUDIT_NEEDLES
STDIN = "-"
# From this many files on, worker processes read and parse them. Below it a pool's start-up
# and transfer cost about what it saves; benchmarks/bench_audit.py (audit vs audit-1cpu)
# measures the gain. The walk stays in the parent: about a third of the single-process CPU.
POOL_FROM = 10_000
# A YAML file at least this long (characters) has its documents parsed by worker processes:
# a 59 MB inventory of 100,000 devices takes a minute in one.
BIG_FILE = 4 << 20
EMPTY_STDIN = "stdin is empty (did the command before the pipe fail?)"
# Helm/Go template actions; Argo's `{{inputs.parameters.x}}` (no leading dot) is not one.
GO_TEMPLATE = re.compile(r"\{\{-?\s*(?:[.$]|/\*|(?:if|else|end|range|with|define|include|template|"
                         r"toYaml|tpl|printf|default|required|quote|nindent|indent)\b)")



@dataclass(frozen=True, slots=True)
class InputFile:
    """A file to read. `chart` is set for files inside a Helm chart (Chart.yaml above them)."""

    label: str
    path: str | None
    chart: str | None = None
    role: str = "manifest"  # manifest | helm-template | helm-values


def discover(paths: Iterable[str], excludes: Iterable[str] = (), *,
             leave_out: str | None = None) -> Iterator[InputFile | InputError]:
    """Expand paths into input files, in a stable order. Missing paths become errors.
    `leave_out`: a directory (its real path) that is never walked, such as convert's
    `--output-dir` inside the tree."""
    patterns = tuple(excludes)
    for raw in paths:
        if raw == STDIN:
            yield InputFile(STDIN, None)
            continue
        root = Path(raw)
        if root.is_file():
            # One file of a chart (as pre-commit passes them) is still a chart's file.
            yield _classify(raw, _chart_of_file(raw))
        elif root.is_dir():
            yield from _walk(root, patterns, leave_out)
        elif root.exists():
            yield InputError(raw, "not a regular file or directory")
        else:
            yield InputError(raw, _missing(raw))


def _missing(path: str) -> str:
    """Why `path` cannot be read: absent, or a symbolic link that leads nowhere."""
    try:
        os.stat(path)
    except OSError as exc:
        if os.path.islink(path):
            return f"a symbolic link that cannot be followed ({exc.strerror or exc})"
    return "no such file or directory"


def _walk(root: Path, patterns: tuple[str, ...],
          leave_out: str | None = None) -> Iterator[InputFile | InputError]:
    """Depth-first, names sorted, a directory's files before its subdirectories (os.walk's
    top-down order). os.scandir with str paths: no Path objects per file, no stat calls.

    The chart a directory belongs to travels down the stack: a directory with Chart.yaml is a
    chart root, and its templates/ tree inherits it.
    """
    start = os.fspath(root)
    real_start = os.path.realpath(start).rstrip(os.sep) + os.sep
    stack: list[tuple[str, str | None]] = [(start, _enclosing_chart(start))]
    while stack:
        dirpath, inherited = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError as err:
            yield InputError(str(err.filename or dirpath), err.strerror or str(err))
            continue
        filenames: list[str] = []
        subdirs: list[str] = []
        broken: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                # FIFOs, sockets and devices named *.yaml would block or fail a read: skip them.
                is_file = not is_dir and entry.is_file()
            except OSError:
                is_dir = is_file = False
            if is_file and entry.is_symlink() and \
                    os.path.realpath(entry.path).startswith(real_start):
                continue  # a second name for a file of this tree: read (and written) once
            if is_file:
                filenames.append(entry.name)
            elif not is_dir and entry.name.endswith(MANIFEST_SUFFIXES) and entry.is_symlink():
                broken.append(entry.name)  # dangling or a loop: said, not skipped silently
            elif is_dir and entry.name not in SKIPPED_DIRS and not entry.is_symlink():
                subdirs.append(entry.name)
        chart = dirpath if "Chart.yaml" in filenames else inherited
        prefix = os.path.join(dirpath, "")
        for name in sorted(filenames):
            if name.endswith(MANIFEST_SUFFIXES) or (chart and name.endswith(".tpl")):
                full = prefix + name
                if patterns and _excluded(full, patterns):
                    continue
                yield _classify(full, chart)
        for name in sorted(broken):
            full = prefix + name
            if not (patterns and _excluded(full, patterns)):
                yield InputError(full, _missing(full))
        subdirs.sort(reverse=True)
        for name in subdirs:
            sub = prefix + name
            if patterns and _excluded(sub, patterns):
                continue
            if leave_out is not None and os.path.realpath(sub) == leave_out:
                continue
            # Only a chart's templates/ tree is template text; subcharts have their own Chart.yaml.
            below = chart if chart and (chart != dirpath or name == "templates") else None
            stack.append((sub, below))


def _enclosing_chart(dirpath: str) -> str | None:
    """The chart whose templates/ tree holds `dirpath` (when a walk starts inside one)."""
    probe = os.path.abspath(dirpath)
    for _ in range(6):
        parent, leaf = os.path.split(probe)
        if leaf == "templates" and os.path.isfile(os.path.join(parent, "Chart.yaml")):
            return parent if os.path.isabs(dirpath) else os.path.relpath(parent)
        if not parent or parent == probe:
            return None
        probe = parent
    return None


def _chart_of_file(path: str) -> str | None:
    """The chart `path` belongs to, if any: a values file or Chart.yaml beside Chart.yaml, or
    a file in a chart's templates/ tree."""
    directory = os.path.dirname(path) or os.curdir
    if os.path.isfile(os.path.join(directory, "Chart.yaml")):
        return directory
    return _enclosing_chart(directory)


def _classify(path: str, chart: str | None) -> InputFile:
    if chart is None:
        return InputFile(path, path)
    relative = os.path.relpath(path, chart)
    if relative.split(os.sep)[0] == "templates":
        return InputFile(path, path, chart, "helm-template")
    if os.path.basename(relative).startswith("values") and os.sep not in relative:
        return InputFile(path, path, chart, "helm-values")
    return InputFile(path, path, chart)  # Chart.yaml, crds/: plain YAML


def _excluded(path: str, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    normalized = path.replace(os.sep, "/")
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(normalized, p) or fnmatch.fnmatch(name, p)
               or fnmatch.fnmatch(normalized, f"*/{p}") for p in patterns)


def read_input(entry: InputFile, stdin: Callable[[], bytes] | None = None) -> bytes:
    """Read a whole input. Raises UnreadableInputError with a one-line reason."""
    try:
        if entry.path is None:
            return (stdin or _read_stdin)()
        return read_regular(entry.path)
    except OSError as exc:
        raise UnreadableInputError(exc.strerror or str(exc)) from None


# O_NONBLOCK: opening a FIFO must not wait for a writer (the fstat below then refuses it).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | \
    getattr(os, "O_NONBLOCK", 0)
# The largest input read. Kubernetes objects are at most ~1.5 MiB (etcd's request limit), but a
# file can be a List of many: a `kubectl get pods -A -o json` dump of 20,000 pods is 84 MB. 256
# MiB holds such dumps with room to spare, while /dev/zero or a runaway generator stops at a
# bounded allocation instead of exhausting memory.
MAX_FILE_BYTES = 256 << 20


def read_regular(path: str, limit: int | None = None) -> bytes:
    """A whole regular file, at most `limit` bytes (MAX_FILE_BYTES). FIFOs, devices and
    sockets (a kustomize patch `path: /dev/zero`) are refused, not read: they can block forever
    or never end. Raises OSError; UnreadableInputError past the cap."""
    limit = MAX_FILE_BYTES if limit is None else limit
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableInputError(
                "not a regular file (a device, FIFO or socket is never read)")
        if info.st_size > limit:
            raise UnreadableInputError(_too_large(limit))
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int) -> bytes:
    """Via os.read: a third of Path.read_bytes' cost (no io objects)."""
    data = os.read(fd, 65536)
    if not data:
        return data
    parts = [data]
    size = len(data)
    while True:
        more = os.read(fd, 1 << 20)
        if not more:
            break
        size += len(more)
        if size > limit:  # the file grew after fstat, or a pipe (stdin)
            raise UnreadableInputError(_too_large(limit))
        parts.append(more)
    return data if len(parts) == 1 else b"".join(parts)


def _too_large(limit: int) -> str:
    return f"larger than {limit >> 20} MiB, the most gpudra reads from one input"


def _read_stdin() -> bytes:
    if _has_fileno():
        return _read_fd(sys.stdin.buffer.fileno(), MAX_FILE_BYTES)
    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableInputError(_too_large(MAX_FILE_BYTES))
    return data


def _has_fileno() -> bool:
    try:
        sys.stdin.buffer.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # a test's in-memory stdin
    return True


def decode(data: bytes) -> str:
    """UTF-8 (BOM tolerated; kubectl accepts it). Raises UnicodeDecodeError otherwise."""
    return data.decode("utf-8-sig")


@dataclass(frozen=True, slots=True)
class ReadFile:
    """One input as read: its bytes, and its text when a pre-scan needle says it can matter."""

    entry: InputFile
    raw: bytes
    text: str | None = None

    @property
    def json(self) -> bool:
        """A .json file that is JSON (a .json file of YAML is read as YAML, as kubectl does)."""
        return self.text is not None and self.entry.label.endswith(".json") and \
            self.text.lstrip().startswith(("{", "["))


def read_files(paths: Iterable[str], excludes: Iterable[str] = (), *, stats: ScanStats,
               stdin: Callable[[], bytes] | None = None,
               on_file: Callable[[str], None] | None = None,
               leave_out: str | None = None) -> Iterator[ReadFile | InputError]:
    """Every input under `paths`, read once: the one reading every command shares, so audit
    and convert agree on what was scanned and on what could not be read. A file counts as
    scanned once its bytes are read, whatever comes next; it is decoded only when it holds a
    needle (docs/exit-codes.md)."""
    return read_entries(discover(paths, excludes, leave_out=leave_out), stats=stats,
                        stdin=stdin, on_file=on_file)


def read_entries(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                 stdin: Callable[[], bytes] | None = None,
                 on_file: Callable[[str], None] | None = None
                 ) -> Iterator[ReadFile | InputError]:
    """read_files for entries already discovered."""
    for entry in entries:
        if isinstance(entry, InputError):
            yield entry
            continue
        if on_file is not None:
            on_file(entry.label)
        try:
            data = read_input(entry, stdin)
        except UnreadableInputError as exc:
            yield InputError(entry.label, str(exc))
            continue
        stats.files += 1
        if entry.label == STDIN and not data.strip():
            yield ReadFile(entry, data)
            yield InputError(STDIN, EMPTY_STDIN)
            continue
        if not might_matter(data, NEEDLES):
            yield ReadFile(entry, data)
            continue
        try:
            text = decode(data)
        except UnicodeDecodeError as exc:
            yield ReadFile(entry, data)
            yield InputError(entry.label, f"not UTF-8 text (byte {exc.start})")
            continue
        yield ReadFile(entry, data, text)


T = TypeVar("T")
NOT_AN_OBJECT = "not a Kubernetes object (no apiVersion and kind{})"


@dataclass(frozen=True, slots=True)
class Document(Generic[T]):
    """One document of a file and what reading it gave: nothing (no needle: never parsed),
    template text, a parsed Kubernetes object (or list), a skipped non-object, or an error."""

    chunk: Chunk
    relevant: bool = False
    template: str | None = None  # read as text: helm-template, helm-values or go-template
    parsed: T | ParsedDocument | None = None  # ParsedDocument for a JSON file
    skipped: str | None = None  # why it is no Kubernetes object (still read as text)
    error: InputError | None = None


def documents(read: ReadFile, parse: Callable[[Chunk], T], stats: ScanStats, *,
              ahead: Callable[[list[Chunk]], Callable[[Chunk], T]] | None = None
              ) -> Iterator[Document[T]]:
    """The documents of a read file, every byte of it in order, each classified the same way
    for every command; `parse` turns a YAML document into what the command works on (audit:
    data and lines; convert: the node tree it edits) and raises ParseError. `ahead`, given
    the documents `parse` would be called for, returns the parse to use instead (one that
    parses them in advance, in worker processes: gpudra.sources.files_pool)."""
    if read.text is None:
        return
    label = read.entry.label
    if read.entry.role != "manifest":
        yield Document(Chunk(read.text, 1), True, template=read.entry.role)
        return
    if read.json:
        stats.documents += 1
        yield _classified(Chunk(read.text, 1), _parse_json, label, stats)
        return
    needles = tuple(n.decode() for n in NEEDLES)
    chunks = split_documents(read.text)
    # None: no needle; True: a Helm/Go template (even when it happens to parse, it is not the
    # final manifest); False: parsed.
    templates = [None if not any(n in chunk.text for n in needles)
                 else bool(GO_TEMPLATE.search(chunk.text)) for chunk in chunks]
    if ahead is not None:
        parse = ahead([c for c, t in zip(chunks, templates) if t is False])
    for chunk, template in zip(chunks, templates):
        if template is None:
            yield Document(chunk)
            continue
        stats.documents += 1
        if template:
            yield Document(chunk, True, template="go-template")
            continue
        yield _classified(chunk, parse, label, stats)


def _classified(chunk: Chunk, parse: Callable[[Chunk], Any], label: str,
                stats: ScanStats) -> Document:
    try:
        parsed = parse(chunk)
    except ParseError as exc:
        if exc.not_an_object:
            return _skip(chunk, NOT_AN_OBJECT.format(f"; {exc.message}"), label, stats)
        if "{{" in chunk.text:
            return Document(chunk, True, template="go-template")
        return Document(chunk, True, error=InputError(label, exc.message, exc.line))
    data = parsed.data
    if not (isinstance(data, dict) and "kind" in data and "apiVersion" in data) and \
            not isinstance(data, list):
        return _skip(chunk, NOT_AN_OBJECT.format(""), label, stats, parsed)
    return Document(chunk, True, parsed=parsed)


def _skip(chunk: Chunk, reason: str, label: str, stats: ScanStats,
          parsed: Any = None) -> Document:
    stats.skipped.append(Skipped(label, chunk.first_line, reason))
    return Document(chunk, True, parsed=parsed, skipped=reason)


def _parse_json(chunk: Chunk) -> ParsedDocument:
    """JSON through the json module (a YAML parse of a 30 MB List costs 30-100x as much);
    lines come from gpudra.sources.json_lines. YAML is only the fallback for the rare .json
    file that is not JSON but is YAML (unquoted keys, comments), as kubectl reads those too."""
    try:
        data, lines = load_json(chunk.text)
    except (ValueError, RecursionError) as exc:
        try:
            return parse_chunk(chunk)
        except ParseError:
            if isinstance(exc, json.JSONDecodeError):
                raise ParseError(exc.msg, exc.lineno) from None
            raise ParseError(f"cannot load document: {type(exc).__name__}", 1) from None
    return ParsedDocument(data, lines, chunk)


def load_items(read: ReadFile, stats: ScanStats, *, lines: bool = True) -> Iterator[Item]:
    """Turn one read file into objects, template texts and errors (`lines=False`: objects
    without a line index, see parse_chunk)."""
    label = read.entry.label
    ahead = None
    if read.text is not None and len(read.text) >= BIG_FILE and usable_cpus() > 1:
        from gpudra.sources.files_pool import parse_ahead, pool_allowed

        if pool_allowed():
            ahead = functools.partial(parse_ahead, lines=lines, workers=usable_cpus())
    for doc in documents(read, parse_chunk if lines else parse_data, stats, ahead=ahead):
        if doc.error is not None:
            yield doc.error
        elif doc.template is not None:
            yield TemplateText(label, doc.chunk.text, doc.chunk.first_line, doc.template,
                               read.entry.chart if doc.template.startswith("helm") else None)
        elif doc.skipped is not None:
            # Values and config files: text rules read them, since their structure is unknown.
            yield TemplateText(label, doc.chunk.text, doc.chunk.first_line, "not-a-manifest")
        elif doc.parsed is not None:
            yield from objects_of(doc.parsed, label)


def objects_of(parsed: ParsedDocument, label: str) -> Iterator[ManifestObject]:
    """Objects in a parsed document. The document itself always comes first (text rules read
    it; non-object documents such as dashboards are kept); a List yields its items after it,
    an OpenShift Template the objects `oc process` creates from it."""
    data = parsed.data
    chunk = parsed.chunk
    template = chunk.helm_source
    items = None
    prefix: tuple = ("items",)  # where the items sit in the document's line table
    if isinstance(data, list):
        data, items, prefix = {"items": data}, data, ()
    elif isinstance(data, dict) and str(data.get("kind", "")).endswith("List"):
        items = data.get("items") if isinstance(data.get("items"), list) else None
    elif template_objects(data) is not None:
        items, prefix = template_objects(data), ("objects",)
    if not isinstance(data, dict):
        return
    yield ManifestObject(data, label, chunk.first_line, parsed.lines, chunk.text, (), template,
                         listing=items is not None)
    for i, item in enumerate(items or ()):
        if isinstance(item, dict):
            base = (*prefix, i)
            line = parsed.lines.get(base, chunk.first_line)
            yield ManifestObject(item, label, line, parsed.lines, chunk.text, base,
                                 template, in_list=True)


def scan(paths: Iterable[str], excludes: Iterable[str] = (), *, stats: ScanStats,
         stdin: Callable[[], bytes] | None = None,
         on_file: Callable[[str], None] | None = None, lines: bool = True,
         pool_from: int = POOL_FROM) -> Iterator[Item]:
    """The whole file source: every object, template text and input error under `paths`.
    From `pool_from` files on, files are read, pre-scanned and parsed by worker processes
    (gpudra.sources.files_pool); the items, the stats and the order are the same."""
    entries = discover(paths, excludes)
    head = list(itertools.islice(entries, pool_from))
    if len(head) >= pool_from and usable_cpus() > 1:
        from gpudra.sources.files_pool import scan_pooled

        yield from scan_pooled(itertools.chain(head, entries), stats=stats, stdin=stdin,
                               on_file=on_file, lines=lines, workers=usable_cpus())
        return
    yield from scan_entries(itertools.chain(head, entries), stats=stats, stdin=stdin,
                            on_file=on_file, lines=lines)


def scan_entries(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                 stdin: Callable[[], bytes] | None = None,
                 on_file: Callable[[str], None] | None = None,
                 lines: bool = True) -> Iterator[Item]:
    """scan, in this process, for entries already discovered."""
    for read in read_entries(entries, stats=stats, stdin=stdin, on_file=on_file):
        if isinstance(read, InputError):
            yield read
        else:
            yield from load_items(read, stats, lines=lines)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass
class FileSource:
    """Manifest files and directories (and `-` for stdin) as a source."""

    paths: Iterable[str]
    excludes: Iterable[str] = ()
    stdin: Callable[[], bytes] | None = None
    on_file: Callable[[str], None] | None = None
    kind: str = "file"
    lines: bool = True  # False: objects without a line index (an inventory: nothing cites it)
    pool_from: int = POOL_FROM  # from this many files on, worker processes read them
    stats: ScanStats = field(default_factory=ScanStats)
    read: list[str] = field(default_factory=list)  # the labels of every file read

    def __post_init__(self) -> None:
        self.paths = list(self.paths)  # read by the scan and again for `tree`

    def items(self) -> Iterator[Item]:
        return scan(self.paths, self.excludes, stats=self.stats, stdin=self.stdin,
                    on_file=self._seen, lines=self.lines, pool_from=self.pool_from)

    def _seen(self, label: str) -> None:
        self.read.append(label)
        if self.on_file is not None:
            self.on_file(label)

    @property
    def tree(self) -> FileTree:
        return FileTree(tuple(self.paths), tuple(self.read))
