"""Kustomize patches: where they are, which kind they are, and the device requests they set.

A patch is a strategic-merge patch (a partial object) or a JSON6902 patch (a YAML or JSON list
of operations). `patches:` holds both kinds, told apart by their shape, as kustomize does;
`patchesStrategicMerge:` and `patchesJson6902:` hold one kind each. A patch is a file (`path:`)
or inline text in the kustomization (`patch:`, or a YAML string in `patchesStrategicMerge`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudra.k8s.devices import DeviceResource, classify
from gpudra.errors import UnreadableInputError
from gpudra.results.model import InputError
from gpudra.sources.documents import Chunk, ParseError, parse_chunk, split_documents
from gpudra.sources.file_bytes import read_regular

if TYPE_CHECKING:
    from gpudra.k8s.objects import LineIndex, PathT


@dataclass(frozen=True)
class PatchDoc:
    """One document of a patch: its data and the file line of each path in it."""

    data: Any
    lines: LineIndex
    chunk: Chunk
    index: int  # position among the patch's documents


@dataclass(frozen=True)
class Patch:
    kustomization: str          # the kustomization file that lists it
    field: str                  # patches | patchesStrategicMerge | patchesJson6902
    index: int                  # position in that field
    file: str                   # the patch file; the kustomization file for inline patches
    inline: bool
    text: str
    exact_lines: bool           # lines in `text` map one to one onto the file's
    entry_line: int             # line of the entry in the kustomization
    target: Mapping[str, Any] | None
    json6902: bool
    docs: tuple[PatchDoc, ...]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.entry_line}" if self.inline else self.file

    def line_of(self, doc: PatchDoc, path: PathT) -> int:
        """The file line of `path` in `doc` (the entry's line when lines are not exact)."""
        if not self.exact_lines:
            return self.entry_line
        while path:
            line = doc.lines.get(path)
            if line is not None:
                return line
            path = path[:-1]
        return doc.chunk.first_line


def read_patches(file: str, directory: str, data: Mapping[str, Any], lines: LineIndex,
                 literal_starts: Mapping[PathT, int], errors: list[InputError],
                 refused: list[InputError] | None = None) -> list[Patch]:
    """Every patch a kustomization lists, parsed. Unreadable patches are reported in `errors`,
    those gpudra would not read (not a regular file, past the size cap) in `refused`."""
    found: list[Patch] = []
    for field_name in ("patchesStrategicMerge", "patches", "patchesJson6902"):
        entries = data.get(field_name)
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            where: PathT = (field_name, index)
            text_path: PathT
            path_or_text: object
            target = None
            if isinstance(entry, str):  # patchesStrategicMerge: a file name or inline YAML
                is_inline = "\n" in entry.strip() or entry.lstrip().startswith(("{", "apiVersion"))
                path_or_text, text_path = entry, where
            elif isinstance(entry, Mapping):
                target = entry.get("target") if isinstance(entry.get("target"), Mapping) else None
                is_inline = "patch" in entry
                path_or_text = entry.get("patch") if is_inline else entry.get("path")
                text_path = where + ("patch",)
            else:
                continue
            if not isinstance(path_or_text, str):
                continue
            entry_line = lines.get(text_path) or lines.get(where) or 1
            if is_inline:
                start = literal_starts.get(text_path)
                patch_file, text, first, exact = file, path_or_text, start or entry_line, \
                    start is not None
            else:
                patch_file = os.path.normpath(os.path.join(directory, path_or_text.strip()))
                try:
                    text = read_regular(patch_file).decode("utf-8-sig")
                except (OSError, UnicodeDecodeError, UnreadableInputError) as exc:
                    unreadable = isinstance(exc, UnreadableInputError)
                    into = refused if unreadable and refused is not None \
                        else errors
                    into.append(InputError(file, f"patch {path_or_text!r} cannot be read "
                                           f"({getattr(exc, 'strerror', None) or exc})",
                                           entry_line))
                    continue
                first, exact = 1, True
            try:
                docs = tuple(_parse(text, first))
            except ParseError as exc:
                errors.append(InputError(patch_file, f"patch is not valid YAML ({exc.message})",
                                         exc.line if exact else entry_line))
                continue
            json6902 = field_name == "patchesJson6902" or (
                field_name == "patches" and bool(docs) and isinstance(docs[0].data, list))
            found.append(Patch(file, field_name, index, patch_file, is_inline, text, exact,
                               entry_line, target, json6902, docs))
    return found


def _parse(text: str, first_line: int) -> Iterator[PatchDoc]:
    index = 0
    for chunk in split_documents(text):
        parsed = parse_chunk(Chunk(chunk.text, chunk.first_line + first_line - 1))
        if parsed.data is None:
            continue
        yield PatchDoc(parsed.data, parsed.lines, parsed.chunk, index)
        index += 1


# --- JSON pointers and device-plugin operations ---------------------------------------------

def pointer_tokens(pointer: str) -> tuple[str, ...]:
    """`/a/nvidia.com~1gpu` -> ('a', 'nvidia.com/gpu') (RFC 6901: `~1` is `/`, `~0` is `~`)."""
    if not pointer:
        return ()
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer.lstrip("/").split("/"))


def pointer(tokens: tuple[Any, ...]) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def as_path(tokens: tuple[str, ...]) -> tuple[Any, ...]:
    """Pointer tokens as a data path: digit tokens become list indexes."""
    return tuple(int(t) if t.isdigit() else t for t in tokens)


@dataclass(frozen=True)
class DeviceOp:
    """A JSON6902 operation that sets, removes or moves an NVIDIA device-plugin request."""

    index: int                  # position in the operation list
    op: str
    path: tuple[Any, ...]       # data path of the device key (for `value` mappings: inside it)
    resource: DeviceResource
    value: Any                  # the count it sets (None for remove/move/copy/test)
    whole: bool                 # the op's path is the device key itself (not a mapping above it)


def device_ops(ops: Any) -> list[DeviceOp]:
    """Operations of a JSON6902 list that touch an NVIDIA resource name, in their path, their
    `from`, or as a key inside their value."""
    found: list[DeviceOp] = []
    for index, op in enumerate(ops if isinstance(ops, list) else ()):
        if not isinstance(op, Mapping):
            continue
        name = str(op.get("op", ""))
        path = as_path(pointer_tokens(str(op.get("path", ""))))
        for tokens in (path, as_path(pointer_tokens(str(op.get("from", ""))))):
            last = tokens[-1] if tokens else None
            device = classify(last) if isinstance(last, str) else None
            if device is not None and str(last).startswith("nvidia.com/") \
                    and _in_resources(tokens):
                found.append(DeviceOp(index, name, tokens, device, op.get("value"), True))
                break
        else:
            for sub, key, value in _nested_keys(op.get("value")):
                device = classify(key)
                if device is not None and key.startswith("nvidia.com/") and \
                        _in_resources(path + sub):
                    found.append(DeviceOp(index, name, path + sub, device, value, False))
    return found


def _in_resources(path: tuple[Any, ...]) -> bool:
    """A resource name under `limits`/`requests` is a request; elsewhere it is a label or data."""
    return len(path) >= 2 and path[-2] in ("limits", "requests")


def _nested_keys(value: Any, prefix: PathT = ()) -> Iterator[tuple[PathT, str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                if key in ("labels", "annotations", "nodeSelector", "matchLabels"):
                    continue
                yield prefix + (key,), key, item
                yield from _nested_keys(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nested_keys(item, prefix + (i,))
