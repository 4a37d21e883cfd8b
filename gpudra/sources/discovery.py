"""Which files a tree holds: the walk (stable order, skipped directories, excludes) and
which files are Helm chart text."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpudra.model import InputError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "vendor", "third_party",
                          ".terraform", "__pycache__", ".venv", ".tox"})
STDIN = "-"


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
