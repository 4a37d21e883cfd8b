"""Which files a tree holds: the walk (stable order, skipped directories, excludes) and
which files are Helm chart text."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpudra.k8s.charts import chart_of_file as _chart_of_file
from gpudra.k8s.charts import enclosing_chart as _enclosing_chart
from gpudra.results.model import InputError
from gpudra.sources.file_bytes import decode, read_regular
from gpudra.errors import UnreadableInputError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "vendor", "third_party",
                          ".terraform", "__pycache__", ".venv", ".tox"})
STDIN = "-"
# Here, the floor every reader of a tree stands on; gpudra.kustomize names them for its model.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# The fields whose entries kustomize reads as files or kustomization directories.
_NAMING_FIELDS = ("resources", "bases", "components")


@dataclass(frozen=True, slots=True)
class InputFile:
    """A file to read. `chart` is set for files inside a Helm chart (Chart.yaml above them)."""

    label: str
    path: str | None
    chart: str | None = None
    role: str = "manifest"  # manifest | helm-template | helm-values


def discover(paths: Iterable[str], excludes: Iterable[str] = (), *,
             leave_out: str | None = None,
             outputs: frozenset[str] = frozenset()) -> Iterator[InputFile | InputError]:
    """Expand paths into input files, in a stable order. Missing paths become errors.
    `leave_out`: a directory (its real path) that is never walked, such as convert's
    `--output-dir` inside the tree. `outputs`: files (real paths) this run writes, such as
    the reports of `-o FORMAT=PATH`, never read: a report inside the tree is not input."""
    patterns = tuple(excludes)
    for raw in paths:
        if raw == STDIN:
            yield InputFile(STDIN, None)
            continue
        root = Path(raw)
        if outputs and os.path.realpath(raw) in outputs:
            continue
        if root.is_file():
            # One file of a chart (as pre-commit passes them) is still a chart's file.
            yield _classify(raw, _chart_of_file(raw))
        elif root.is_dir():
            yield from _walk(root, patterns, leave_out, outputs)
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


def _walk(root: Path, patterns: tuple[str, ...], leave_out: str | None = None,
          outputs: frozenset[str] = frozenset()) -> Iterator[InputFile | InputError]:
    """Depth-first, names sorted, a directory's files before its subdirectories (os.walk's
    top-down order). os.scandir with str paths: no Path objects per file, no stat calls.

    The chart a directory belongs to travels down the stack: a directory with Chart.yaml is a
    chart root, and its templates/ tree inherits it.
    """
    start = os.fspath(root)
    output_names = {os.path.basename(p) for p in outputs}  # realpath only for these names
    real_start = os.path.realpath(start).rstrip(os.sep) + os.sep
    stack: list[tuple[str, str | None]] = [(start, _enclosing_chart(start))]
    named = _Named(start, real_start, patterns, leave_out)
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
                if name in output_names and os.path.realpath(full) in outputs:
                    continue
                if named.files and named.key(full) in named.files:
                    continue  # a named file of a skipped directory, read already
                yield _classify(full, chart)
        kustomization = next((n for n in KUSTOMIZATION_FILES if n in filenames), None)
        if kustomization is not None:
            files, directories = named.resources(prefix + kustomization, dirpath)
            yield from (_classify(full, None) for full in files)
            stack += ((directory, None) for directory in directories)
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


class _Named:
    """What a walk's kustomizations name that the walk itself would not read: a resource file
    of any name (`resources: [gpu.txt]`), and files and kustomization directories under the
    directories it skips (`vendor/`, `third_party/`, `.terraform/`). kustomize reads them all
    (docs/facts.md), so the walk does too, once each, within its root, excludes honoured."""

    def __init__(self, start: str, real_start: str, patterns: tuple[str, ...],
                 leave_out: str | None) -> None:
        self.start = start
        self.real_start = real_start
        self.patterns = patterns
        self.leave_out = leave_out
        self.files: set[str] = set()  # by `key`: read once, whoever names them
        self.directories: set[str] = set()

    @staticmethod
    def key(path: str) -> str:
        return os.path.normpath(os.path.abspath(path))

    def resources(self, kustomization: str, directory: str) -> tuple[list[str], list[str]]:
        """The files to read and the skipped directories to walk that `kustomization` names."""
        files: list[str] = []
        directories: list[str] = []
        for entry in _named_entries(kustomization):
            full = os.path.normpath(os.path.join(directory, entry))
            if not self._within(full):
                continue
            if os.path.isfile(full):
                if self._walk_skips(full, file=True) and self.key(full) not in self.files:
                    self.files.add(self.key(full))
                    files.append(full)
            elif os.path.isdir(full) and self._walk_skips(full, file=False) and \
                    self.key(full) not in self.directories:
                self.directories.add(self.key(full))
                directories.append(full)
        return files, directories

    def _within(self, path: str) -> bool:
        real = os.path.realpath(path)
        if not (real + os.sep).startswith(self.real_start):
            return False  # outside the tree given: the Kustomize overlay audit follows those
        if self.leave_out is not None and (real + os.sep).startswith(self.leave_out + os.sep):
            return False
        relative = os.path.relpath(path, self.start)
        parts = relative.split(os.sep)
        return not (self.patterns and any(_excluded(os.path.join(self.start, *parts[:i + 1]),
                                                    self.patterns) for i in range(len(parts))))

    def _walk_skips(self, path: str, *, file: bool) -> bool:
        """Whether the walk leaves `path` out: a skipped directory on its way, below any that
        a kustomization named (those are walked), or a file name the walk does not read."""
        parts = os.path.relpath(path, self.start).split(os.sep)
        walked = True
        for i, part in enumerate(parts[:-1] if file else parts):
            if self.key(os.path.join(self.start, *parts[:i + 1])) in self.directories:
                walked = True
            elif part in SKIPPED_DIRS:
                walked = False
        if not walked:
            return True
        if os.path.islink(path):
            return False  # the walk reads what a link inside the tree points to, not the link
        return file and not path.endswith(MANIFEST_SUFFIXES)


def _named_entries(kustomization: str) -> list[str]:
    """The local paths a kustomization file names; nothing when it cannot be read (the
    Kustomize model reports that)."""
    import yaml

    from gpudra.sources.documents import safe_load

    try:
        data = safe_load(decode(read_regular(kustomization)))
    except (OSError, UnreadableInputError, UnicodeDecodeError, yaml.YAMLError, ValueError,
            TypeError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    return [entry for field in _NAMING_FIELDS if isinstance(data.get(field), list)
            for entry in data[field]
            if isinstance(entry, str) and entry.strip() and "\0" not in entry]


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
