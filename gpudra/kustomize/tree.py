"""Reading kustomization files and following them: resources, components and patches.

Only what GPU analysis needs is read: resources (files and directories, recursively),
components, the three patch fields, namePrefix/nameSuffix/namespace and configurations.
Remote resources (URLs, git) are recorded as not followed. Paths are normalised
(`os.path.normpath`) and relative to the working directory, as the file scanner names them.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from gpudra.errors import UnreadableInputError
from gpudra.kustomize import KUSTOMIZATION_FILES
from gpudra.results.model import InputError
from gpudra.sources.documents import Chunk, ParseError, parse_chunk
from gpudra.sources.file_bytes import read_regular

if TYPE_CHECKING:
    from gpudra.k8s.objects import LineIndex, PathT
    from gpudra.kustomize.patches import Patch

_NO_LINES: Mapping[PathT, int] = {}
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "vendor", "third_party",
                           ".terraform", "__pycache__", ".venv", ".tox"})
# kustomize's remote forms: URLs, scp-like git addresses, host/org/repo paths with a ref.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)"
                     r"|\?ref=|\.git(?:$|/|\?)|//")


@dataclass(frozen=True)
class Kustomization:
    """One kustomization file (kind Kustomization or Component), its references resolved."""

    file: str
    directory: str
    kind: str                                  # Kustomization | Component
    resources: tuple[str, ...] = ()            # local files and kustomization directories
    components: tuple[str, ...] = ()
    patches: tuple[Patch, ...] = ()
    name_prefix: str = ""
    name_suffix: str = ""
    namespace: str | None = None
    configurations: tuple[str, ...] = ()
    remote: tuple[str, ...] = ()               # resources not followed (URLs, git)
    lines: LineIndex = field(default_factory=lambda: _NO_LINES)

    @property
    def is_component(self) -> bool:
        return self.kind == "Component"


@dataclass
class Tree:
    """Every kustomization reached from the roots, by directory, and what could not be read
    or followed (for callers that want to show it; audit and convert leave it to kustomize and
    to the file scan)."""

    kustomizations: dict[str, Kustomization] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    # Files gpudra would not read (a device or FIFO, past the size cap): input errors of any
    # run, since they are not kustomize's to report.
    refused: list[InputError] = field(default_factory=list)

    def patch_files(self) -> set[str]:
        return {p.file for k in self.kustomizations.values() for p in k.patches if not p.inline}


def kustomization_file(directory: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def real_roots(paths: Iterable[str]) -> tuple[str, ...]:
    """The path arguments (stdin aside) with symlinks resolved, for `inside`."""
    return tuple(os.path.realpath(p) for p in paths if p != "-")


def inside(file: str, roots: Iterable[str]) -> bool:
    """Whether `file` is one of `roots` (from `real_roots`) or under one."""
    return inside_real(os.path.realpath(file), roots)


def inside_real(real: str, roots: Iterable[str]) -> bool:
    """`inside` for a path whose symlinks are already resolved."""
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def find_roots(paths: Iterable[str], excludes: Iterable[str] = ()) -> list[str]:
    """Directories under `paths` that hold a kustomization file, in walk order."""
    patterns = tuple(excludes)
    found: list[str] = []
    for raw in paths:
        if raw == "-":
            continue
        if os.path.isfile(raw):
            if os.path.basename(raw) in KUSTOMIZATION_FILES:
                found.append(os.path.normpath(os.path.dirname(raw) or "."))
            continue
        stack = [raw]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue  # the file scanner reports unreadable directories
            names = {e.name for e in entries}
            if any(n in names for n in KUSTOMIZATION_FILES):
                found.append(os.path.normpath(directory))
            subdirs = sorted((e.name for e in entries
                              if e.name not in _SKIPPED_DIRS and _is_dir(e)), reverse=True)
            for name in subdirs:
                sub = os.path.join(directory, name)
                if not any(fnmatch.fnmatch(sub, p) or fnmatch.fnmatch(name, p)
                           for p in patterns):
                    stack.append(sub)
    return list(dict.fromkeys(found))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir() and not entry.is_symlink()
    except OSError:
        return False


def load_tree(paths: Iterable[str], excludes: Iterable[str] = (),
              roots: Iterable[str] | None = None) -> Tree:
    """The kustomizations under `paths` and every one they reach (outside the paths too).

    `roots`: the directories with a kustomization file, when the caller knows them already
    (audit collects them during its own walk); otherwise `paths` are walked for them.
    """
    found = find_roots(paths, excludes) if roots is None else \
        list(dict.fromkeys(os.path.normpath(r) for r in roots))
    tree = Tree(roots=found)
    pending = list(tree.roots)
    while pending:
        directory = pending.pop()
        if directory in tree.kustomizations:
            continue
        loaded = read_kustomization(directory, tree.errors, tree.refused)
        if loaded is None:
            continue
        tree.kustomizations[directory] = loaded
        pending += [r for r in (*loaded.resources, *loaded.components) if os.path.isdir(r)]
    return tree


def read_kustomization(directory: str, errors: list[InputError],
                       refused: list[InputError] | None = None) -> Kustomization | None:
    file = kustomization_file(directory)
    if file is None:
        errors.append(InputError(directory, "listed as a kustomize resource or component but "
                                 "holds no kustomization file"))
        return None
    try:
        parsed = parse_chunk(Chunk(read_regular(file).decode("utf-8-sig"), 1))
    except (OSError, UnicodeDecodeError, UnreadableInputError) as exc:
        into = refused if isinstance(exc, UnreadableInputError) and refused is not None else errors
        into.append(InputError(file, f"cannot read kustomization: {exc}"))
        return None
    except ParseError as exc:
        errors.append(InputError(file, f"not valid YAML ({exc.message})", exc.line))
        return None
    data = parsed.data if isinstance(parsed.data, Mapping) else {}
    resources: list[str] = []
    remote: list[str] = []
    for entry in [*_strings(data.get("resources")), *_strings(data.get("bases"))]:
        if _REMOTE.search(entry):
            remote.append(entry)
            continue
        resolved = os.path.normpath(os.path.join(directory, entry))
        if os.path.isdir(resolved) or os.path.isfile(resolved):
            resources.append(resolved)
        else:
            errors.append(InputError(file, f"resource {entry!r} does not exist"))
    components = [os.path.normpath(os.path.join(directory, c))
                  for c in _strings(data.get("components")) if not _REMOTE.search(c)]
    remote += [c for c in _strings(data.get("components")) if _REMOTE.search(c)]
    # Here: this module's path helpers serve every convert, its patches only kustomize trees.
    from gpudra.kustomize.patches import read_patches

    text = parsed.chunk.text
    patches = read_patches(file, directory, data, parsed.lines, _inline_starts(text), errors,
                           refused)
    return Kustomization(
        file=file, directory=directory, kind=str(data.get("kind") or "Kustomization"),
        resources=tuple(resources), components=tuple(components), patches=tuple(patches),
        name_prefix=str(data.get("namePrefix") or ""),
        name_suffix=str(data.get("nameSuffix") or ""),
        namespace=str(data["namespace"]) if data.get("namespace") else None,
        configurations=tuple(os.path.normpath(os.path.join(directory, c))
                             for c in _strings(data.get("configurations"))),
        remote=tuple(remote), lines=parsed.lines)


def _strings(value: Any) -> Iterator[str]:
    for item in value if isinstance(value, list) else ():
        if isinstance(item, str) and item.strip():
            yield item.strip() if "\n" not in item else item


def _inline_starts(text: str) -> dict[PathT, int]:
    """For each string scalar written as a literal block (`|`, `|-`), the 1-based line its
    content starts on: such a patch's lines map one to one onto the file's."""
    out: dict[PathT, int] = {}
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return out
    stack: list[tuple[PathT, Any]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack += [(path + (k.value,), v) for k, v in node.value
                      if isinstance(k, yaml.ScalarNode)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(path + (i,), v) for i, v in enumerate(node.value)]
        elif isinstance(node, yaml.ScalarNode) and node.style == "|":
            out[path] = node.start_mark.line + 2
    return out
