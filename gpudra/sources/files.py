"""Manifest trees as a source: read bytes, pre-scan, and parse only what can matter.

The walk is `discovery`'s, the reading of one file `file_bytes`'.

Most files in a real tree have nothing to do with GPUs. Reading bytes and looking for a few
needles first keeps a 10,000-file tree close to grep's speed; only documents that contain a
needle are parsed.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gpudra.errors import UnreadableInputError
from gpudra.results.model import InputError, Skipped
from gpudra.k8s.objects import (
    ManifestObject,
    TemplateText,
    is_list,
    list_members,
    template_objects,
)
from gpudra.printable import may_hold_surrogates, replace_lone_surrogates
from gpudra.sources import FileTree, Item, ScanStats
from gpudra.sources.discovery import STDIN, InputFile, discover
from gpudra.sources.documents import (
    NESTED_TOO_DEEPLY,
    Chunk,
    ParsedDocument,
    ParseError,
    parse_chunk,
    parse_data,
    split_documents,
)
from gpudra.sources.file_bytes import (
    UTF16_BOMS,
    WIDE_BOMS,
    decode,
    read_input,
    undecodable,
)
from gpudra.sources.json_lines import load_json
from gpudra.sources.prescan import AUDIT_NEEDLES, might_matter

# The audit's pre-scan needles (gpudra.sources.prescan explains both lists).
NEEDLES = AUDIT_NEEDLES
TEXT_NEEDLES = tuple(needle.decode() for needle in NEEDLES)
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
class ReadFile:
    """One input as read: its bytes, and its text when a pre-scan needle says it can matter."""

    entry: InputFile
    raw: bytes
    text: str | None = None
    # What read_all's `after` made of the file in the worker process that read it.
    ahead: Any = None

    @property
    def utf16(self) -> bool:
        """Read as UTF-16 (kubectl reads it so; convert writes UTF-8 only)."""
        return self.raw.startswith(UTF16_BOMS)

    @property
    def json(self) -> bool:
        """A .json file that is JSON (a .json file of YAML is read as YAML, as kubectl does)."""
        return self.text is not None and self.entry.label.endswith(".json") and \
            self.text.lstrip().startswith(("{", "["))


def read_all(entries: Sequence[InputFile | InputError], *, stats: ScanStats,
             stdin: Callable[[], bytes] | None = None,
             on_file: Callable[[str], None] | None = None,
             pool_from: int = POOL_FROM,
             after: tuple[Callable[[ReadFile, Any], Any], Any] | None = None
             ) -> Iterator[ReadFile | InputError]:
    """read_entries; from `pool_from` entries on, worker processes read and pre-scan
    (gpudra.sources.files_pool.read_pooled: a file without text comes without its bytes).
    `after` (function, argument): with worker processes, each of them calls
    function(read, argument) on every file it read with text, and a result other than None
    comes back as that ReadFile's `ahead` (the function must be picklable by name).
    Close the iterator when it is left before its end."""
    if _pool_pays(len(entries), pool_from):
        from gpudra.sources.files_pool import read_pooled

        return read_pooled(entries, stats=stats, stdin=stdin, on_file=on_file,
                           workers=usable_cpus(), after=after)
    return read_entries(entries, stats=stats, stdin=stdin, on_file=on_file)


@dataclass(frozen=True)
class Listing:
    """A walk's entries, all listed, and their reading, which worker processes began while the
    walk went on (list_and_read)."""

    entries: list[InputFile | InputError]
    reads: Iterator[ReadFile | InputError]

    def hand_over(self, after: tuple[Callable[[ReadFile, Any], Any], Any] | None) -> None:
        """read_all's `after` for the files the workers have not been given yet."""
        from gpudra.sources.files_pool import Pooled

        if isinstance(self.reads, Pooled):
            self.reads.option = after

    def release_entries(self) -> None:
        """Let go of the listed entries (the reading holds its own): the caller has what it
        needed of them, and a large tree's are a fifth of a convert's memory."""
        self.entries.clear()

    def close(self) -> None:
        close = getattr(self.reads, "close", None)
        if close is not None:
            close()


def list_and_read(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                  stdin: Callable[[], bytes] | None = None,
                  pool_from: int = POOL_FROM,
                  after: tuple[Callable[[ReadFile, Any], Any], Any] | None = None) -> Listing:
    """read_all over entries still being found (a walk, `discover`), for a caller that needs
    them all listed before it takes the first read (convert: a kustomization anywhere changes
    how every file is planned). From `pool_from` entries on, worker processes start reading
    the first of them while this process lists the rest (as far as they read ahead of the
    caller), running `after` (read_all's) on them until the caller hands over another (or
    None). Close the Listing when it is left before the end of its reads."""
    walk = iter(entries)
    listed = list(itertools.islice(walk, pool_from))
    if not _pool_pays(len(listed), pool_from):
        listed += walk
        return Listing(listed, read_all(listed[:], stats=stats, stdin=stdin,
                                        pool_from=pool_from))
    import queue

    from gpudra.sources.files_pool import read_pooled

    handed: queue.SimpleQueue[InputFile | InputError | None] = queue.SimpleQueue()
    listing = Listing(listed, read_pooled(itertools.chain(listed[:], iter(handed.get, None)),
                                          stats=stats, stdin=stdin, workers=usable_cpus(),
                                          after=after))
    try:
        for entry in walk:
            listed.append(entry)
            handed.put(entry)
    except BaseException:
        handed.put(None)  # first: the pool's feeder waits for the walk's end to stop
        listing.close()
        raise
    handed.put(None)
    return listing


def read_entries(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                 stdin: Callable[[], bytes] | None = None,
                 on_file: Callable[[str], None] | None = None
                 ) -> Iterator[ReadFile | InputError]:
    """Every input file, read once: the one reading every command shares, so audit and convert
    agree on what was scanned and on what could not be read. A file counts as scanned once its
    bytes are read, whatever comes next; it is decoded only when it holds a needle
    (docs/exit-codes.md)."""
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
        # UTF-16 (and UTF-32) text holds no needle as bytes: decoded first, then searched.
        wide = data.startswith(WIDE_BOMS)
        if not wide and not might_matter(data, NEEDLES):
            yield ReadFile(entry, data)
            continue
        try:
            text = decode(data)
        except UnicodeDecodeError as exc:
            yield ReadFile(entry, data)
            yield InputError(entry.label, undecodable(exc))
            continue
        if wide and not any(needle in text for needle in TEXT_NEEDLES):
            yield ReadFile(entry, data)
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
              ahead: Callable[[list[Chunk]], Callable[[Chunk], T]] | None = None,
              lines: bool = True) -> Iterator[Document[T]]:
    """The documents of a read file, every byte of it in order, each classified the same way
    for every command; `parse` turns a YAML document into what the command works on (audit:
    data and lines; convert: the node tree it edits) and raises ParseError. `ahead`, given
    the documents `parse` would be called for, returns the parse to use instead (one that
    parses them in advance, in worker processes: gpudra.sources.files_pool). `lines=False`:
    a JSON file is read without its line index, as `parse` is then for YAML."""
    if read.text is None:
        return
    label = read.entry.label
    if read.entry.role != "manifest":
        yield Document(Chunk(read.text, 1), True, template=read.entry.role)
        return
    if read.json:
        parse_json = _parse_json if lines else functools.partial(_parse_json, lines=False)
        yield _classified(Chunk(read.text, 1), parse_json, label, stats)
        return
    needles = TEXT_NEEDLES
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
        if template:
            stats.documents += 1
            yield Document(chunk, True, template="go-template")
            continue
        yield _classified(chunk, parse, label, stats)


def _classified(chunk: Chunk, parse: Callable[[Chunk], Any], label: str,
                stats: ScanStats) -> Document:
    # Counted as parsed unless it fails to parse (issue 36, item 5: "2 documents parsed" with
    # one of the two unreadable).
    stats.documents += 1
    try:
        parsed = parse(chunk)
    except ParseError as exc:
        if exc.not_an_object:
            return _skip(chunk, NOT_AN_OBJECT.format(f"; {exc.message}"), label, stats)
        if "{{" in chunk.text:
            return Document(chunk, True, template="go-template")
        stats.documents -= 1
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


def _parse_json(chunk: Chunk, *, lines: bool = True) -> ParsedDocument:
    """JSON through the json module (a YAML parse of a 30 MB List costs 30-100x as much);
    lines come from gpudra.sources.json_lines (`lines=False`: none, as parse_data). YAML is
    only the fallback for the rare .json file that is not JSON but is YAML (unquoted keys,
    comments), as kubectl reads those too."""
    try:
        data, index = load_json(chunk.text) if lines else (json.loads(chunk.text), {})
    except (ValueError, RecursionError) as exc:
        try:
            return parse_chunk(chunk, lines=lines)
        except ParseError:
            if isinstance(exc, json.JSONDecodeError):
                raise ParseError(exc.msg, exc.lineno) from None
            if isinstance(exc, RecursionError):
                raise ParseError(NESTED_TOO_DEEPLY, 1) from None
            raise ParseError(f"cannot load document: {type(exc).__name__}", 1) from None
    if may_hold_surrogates(chunk.text):  # `"\ud800"`: U+FFFD, as kubectl decodes it
        replace_lone_surrogates(data)
    return ParsedDocument(data, index, chunk)


def load_items(read: ReadFile, stats: ScanStats, *, lines: bool = True) -> Iterator[Item]:
    """Turn one read file into objects, template texts and errors (`lines=False`: objects
    without a line index, see parse_chunk)."""
    label = read.entry.label
    ahead = None
    if read.text is not None and _pool_pays(len(read.text), BIG_FILE):
        from gpudra.sources.files_pool import parse_ahead, pool_allowed

        if pool_allowed():
            ahead = functools.partial(parse_ahead, lines=lines, workers=usable_cpus())
    for doc in documents(read, parse_chunk if lines else parse_data, stats, ahead=ahead,
                         lines=lines):
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
    it; non-object documents such as dashboards are kept); a List yields its items after it
    (the items of Lists inside it too, at any depth, as kubectl and kustomize flatten them), an
    OpenShift Template the objects `oc process` creates from it."""
    data = parsed.data
    chunk = parsed.chunk
    template = chunk.helm_source
    members = None
    if isinstance(data, list):
        data, members = {"items": data}, list_members(data)
    elif is_list(data):
        members = list_members(data["items"], ("items",))
    elif template_objects(data) is not None:
        members = ((item, ("objects", i)) for i, item in enumerate(template_objects(data))
                   if isinstance(item, dict))
    if not isinstance(data, dict):
        return
    yield ManifestObject(data, label, chunk.first_line, parsed.lines, chunk.text, (), template,
                         listing=members is not None)
    for item, base in members or ():
        line = parsed.lines.get(base, chunk.first_line)
        yield ManifestObject(item, label, line, parsed.lines, chunk.text, base, template,
                             in_list=True)


def scan(paths: Iterable[str], excludes: Iterable[str] = (), *, stats: ScanStats,
         stdin: Callable[[], bytes] | None = None,
         on_file: Callable[[str], None] | None = None, lines: bool = True,
         pool_from: int = POOL_FROM, read_ahead: bool = False,
         outputs: frozenset[str] = frozenset()) -> Iterator[Item]:
    """The whole file source: every object, template text and input error under `paths`.
    From `pool_from` files on, files are read, pre-scanned and parsed by worker processes
    (gpudra.sources.files_pool), which start on this call and read a few batches ahead of the
    caller (`read_ahead`: the whole tree, for a caller that keeps every item and has other
    work meanwhile); the items, the stats and the order are the same. Close the iterator when
    it is left before its end."""
    entries = discover(paths, excludes, outputs=outputs)
    head = list(itertools.islice(entries, pool_from))
    if _pool_pays(len(head), pool_from):
        from gpudra.sources.files_pool import AHEAD, scan_pooled

        return scan_pooled(itertools.chain(head, entries), stats=stats, stdin=stdin,
                           on_file=on_file, lines=lines, workers=usable_cpus(),
                           ahead=None if read_ahead else AHEAD)
    return scan_entries(itertools.chain(head, entries), stats=stats, stdin=stdin,
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


def _pool_pays(size: int, threshold: int) -> bool:
    """Worker processes for work of `size` (files, or a file's characters): from `threshold`
    on, and only with another CPU to run them on."""
    return size >= threshold and usable_cpus() > 1


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
    read_ahead: bool = False  # True: the workers read the whole tree ahead (see scan)
    stats: ScanStats = field(default_factory=ScanStats)
    read: list[str] = field(default_factory=list)  # the labels of every file read
    outputs: frozenset[str] = frozenset()  # real paths of the files this run writes: not input

    def __post_init__(self) -> None:
        self.paths = list(self.paths)  # read by the scan and again for `tree`

    def items(self) -> Iterator[Item]:
        return scan(self.paths, self.excludes, stats=self.stats, stdin=self.stdin,
                    on_file=self._seen, lines=self.lines, pool_from=self.pool_from,
                    read_ahead=self.read_ahead, outputs=self.outputs)

    def _seen(self, label: str) -> None:
        self.read.append(label)
        if self.on_file is not None:
            self.on_file(label)

    @property
    def tree(self) -> FileTree:
        return FileTree(tuple(self.paths), tuple(self.read))
