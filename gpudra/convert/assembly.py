"""Edited documents into files: a file's new text, verified, and the files convert adds
(--claims-file and the kustomizations that list it, the bridge DeviceClass).

Every other byte of a file is copied as read (BOM, CRLF, comments, blank lines, separators).
A document whose edit cannot be verified is left as it was, and its workloads are reported as
blocked.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.convert.reading import Doc, File
from gpudra.convert.records import ConvertOptions, WorkloadResult
from gpudra.convert.spool import Spool, Spooled, contents
from gpudra.dra import emit
from gpudra.errors import UnreadableInputError, UsageError
from gpudra.kustomize.tree import Tree, kustomization_file
from gpudra.sources.file_bytes import read_regular
from gpudra.sources.discovery import STDIN, InputFile
from gpudra.yamledit.yaml_nodes import compose
from gpudra.yamledit.yaml_nodes import load as load_document
from gpudra.yamledit.ops import Append, Extend, apply_to_data, apply_to_text
from gpudra.yamledit.render import document
from gpudra.yamledit.textedit import LayoutError, Style, detect_style

# New objects per directory for --claims-file, each with the style of the file it came from.
ClaimsByDir = dict[Path, list[tuple[dict[str, Any], Style]]]


@dataclass(frozen=True)
class FileChange:
    """A file's bytes as read and as convert leaves it (either perhaps in a Spool)."""

    label: str
    path: Path | None
    stored_old: bytes | Spooled
    stored_new: bytes | Spooled
    created: bool = False  # the file does not exist yet

    @property
    def old(self) -> bytes:
        return contents(self.stored_old)

    @property
    def new(self) -> bytes:
        return contents(self.stored_new)


def edited_chunk(f: File, doc: Doc) -> tuple[str, Style] | None:
    """The document's new text, verified; None when it must stay as it is."""
    if doc.nodes is None or not (doc.ops or doc.new_objects):
        return None
    style = detect_style(doc.chunk.text, doc.nodes.root)
    # The editor works on whole lines: a last line without a newline gets one while editing
    # (node marks stay valid, it is past them) and loses it again afterwards.
    unterminated = not doc.chunk.text.endswith("\n")
    source = doc.chunk.text + (style.newline if unterminated else "")
    try:
        text = apply_to_text(source, doc.nodes, doc.ops, style) if doc.ops else source
        if unterminated and text.endswith(style.newline):
            text = text[: -len(style.newline)]
        expected = apply_to_data(doc.nodes.data, doc.ops)
        if load_document(text) != expected:
            raise LayoutError("the edited text does not read back as intended")
    except (LayoutError, yaml.YAMLError) as exc:
        doc.results[:] = [_blocked(r, f"cannot edit this layout faithfully ({exc})")
                          for r in doc.results]
        doc.ops.clear()
        doc.new_objects.clear()
        return None
    return text, style


def blocked_result(result: WorkloadResult, reason: str) -> WorkloadResult:
    """`result` blocked for `reason`, when convert would have changed it."""
    return _blocked(result, reason)


def _blocked(result: WorkloadResult, reason: str) -> WorkloadResult:
    if result.strategy not in ("rewrite", "repair", "quota"):
        return result
    return WorkloadResult(result.file, result.kind, result.name, result.namespace, "blocked",
                          reason)



def render_objects(objects: list[dict[str, Any]], style: Style) -> str:
    nl = style.newline
    out = ""
    for obj in objects:
        # A JSON document's new objects are JSON too, indented as JSON usually is.
        text = nl.join(json.dumps(obj, indent=2, ensure_ascii=False).split("\n")) + nl \
            if style.json else nl.join(document(obj, style)) + nl
        if load_document(text) != obj:  # the renderer's own guarantee, checked every time
            raise LayoutError("rendered object does not read back")
        out += f"---{nl}{text}"
    return out


def assemble(f: File, claims_file: str | None, spool: Spool | None = None
             ) -> FileChange | None:
    if not any(doc.ops or doc.new_objects for doc in f.docs):
        return None
    parts: list[str] = []
    changed = False
    for doc in f.docs:
        edited = edited_chunk(f, doc)
        if edited is None:
            parts.append(doc.chunk.text)
            continue
        text, style = edited
        changed |= text != doc.chunk.text
        parts.append(text)
        if doc.new_objects and claims_file is None and not f.json:  # JSON: json_files
            if not text.endswith("\n"):
                parts.append(style.newline)
            parts.append(render_objects(doc.new_objects, style))
            changed = True
    if not changed:
        return None
    new = ("\ufeff" if f.bom else "") + "".join(parts)
    if not f.raw.endswith(b"\n"):  # keep a file without a final newline that way
        new = new.removesuffix("\r\n" if new.endswith("\r\n") else "\n")
    return file_change(f.entry, f.raw, new.encode("utf-8"), spool)


def file_change(entry: InputFile, old: bytes, new: bytes, spool: Spool | None) -> FileChange:
    """An input file's change, its bytes kept in `spool` when there is one."""
    path = Path(entry.path) if entry.path is not None else None
    if spool is None:
        return FileChange(entry.label, path, old, new)
    return FileChange(entry.label, path, spool.keep(old), spool.keep(new))


def claims_objects(f: File) -> list[tuple[dict[str, Any], Style]]:
    """The new objects of `f` that go to its directory's --claims-file (edited files only:
    a document whose edit failed keeps none), each with its document's style."""
    if f.entry.path is None:
        return []
    return [(o, detect_style(doc.chunk.text, doc.nodes.root)) for doc in f.docs
            if doc.new_objects and doc.nodes is not None for o in doc.new_objects]


def claims_files(per_dir: ClaimsByDir, claims_file: str | None,
                 converted: set[str], tree: Tree | None = None) -> list[FileChange]:
    """New objects per directory in `claims_file`, and the kustomization that lists it.

    Any trouble with these files stops the whole run before anything is written: the
    converted workloads would otherwise name templates that were never written.
    """
    if claims_file is None:
        return []
    try:
        return _claims_file_changes(per_dir, claims_file, converted, tree)
    except (UnicodeDecodeError, yaml.YAMLError, LayoutError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc).splitlines()[0]
        raise UnreadableInputError(f"--claims-file {claims_file}: cannot update it or its "
                             f"kustomization ({reason}); nothing was written") from None


def _claims_file_changes(per_dir: ClaimsByDir, claims_file: str,
                         converted: set[str], tree: Tree | None = None) -> list[FileChange]:
    changes: list[FileChange] = []
    for directory, objects in per_dir.items():
        target = directory / claims_file
        if str(target) in converted:
            raise UsageError(f"--claims-file {claims_file}: {target} holds workloads that are "
                             "being converted; choose another name")
        old, exists = _existing(target, f"--claims-file {claims_file}")
        style = objects[0][1]
        text = old.decode("utf-8-sig")
        if text and not text.endswith("\n"):
            text += style.newline
        rendered = render_objects([o for o, _ in objects], style)
        # A new file starts with its first document, not with a separator.
        text += rendered if text.strip() else rendered[len("---" + style.newline):]
        changes.append(FileChange(str(target), target, old, text.encode("utf-8"), not exists))
        kustomization = _kustomization_change(directory, claims_file)
        if kustomization is not None:
            changes.append(kustomization)
        changes += _listing_changes(tree, directory, claims_file, changes)
    return changes


def _listing_changes(tree: Tree | None, directory: Path, claims_file: str,
                     pending: list[FileChange]) -> list[FileChange]:
    """Kustomizations elsewhere that list this directory's files (`resources: [apps/x.yaml]`)
    must list its claims file too, or their output would lack the templates."""
    if tree is None:
        return []
    here = os.path.normpath(str(directory))
    out: list[FileChange] = []
    for k in tree.kustomizations.values():
        if os.path.normpath(k.directory) == here or \
                not any(os.path.dirname(r) == here for r in k.resources if os.path.isfile(r)):
            continue
        entry = os.path.relpath(os.path.join(here, claims_file), k.directory).replace(os.sep, "/")
        earlier = next((c for c in pending + out
                        if os.path.normpath(c.label) == os.path.normpath(k.file)), None)
        change = _kustomization_change(Path(k.directory), entry,
                                       earlier.new if earlier is not None else None)
        if change is not None:
            if earlier is not None:
                change = FileChange(earlier.label, earlier.path, earlier.old, change.new)
                (pending if earlier in pending else out).remove(earlier)
            out.append(change)
    return out


def kustomization_listing(tree: Tree | None, listed: str, new_file: str,
                          pending: list[FileChange]) -> list[FileChange]:
    """Every kustomization that lists the file `listed` as a resource, listing `new_file` too
    (each kustomization changed once, over what `pending` already changes in it)."""
    if tree is None:
        return []
    out: list[FileChange] = []
    for k in tree.kustomizations.values():
        if os.path.realpath(listed) not in {os.path.realpath(r) for r in k.resources}:
            continue
        entry = os.path.relpath(new_file, k.directory).replace(os.sep, "/")
        earlier = next((c for c in pending + out
                        if os.path.normpath(c.label) == os.path.normpath(k.file)), None)
        change = _kustomization_change(Path(k.directory), entry,
                                       earlier.new if earlier is not None else None)
        if change is not None:
            if earlier is not None:
                change = FileChange(earlier.label, earlier.path, earlier.old, change.new)
                (pending if earlier in pending else out).remove(earlier)
            out.append(change)
    return out


def _kustomization_change(directory: Path, claims_file: str,
                          current: bytes | None = None) -> FileChange | None:
    found = kustomization_file(str(directory))
    if found is None:
        return None
    path = Path(found)
    raw = current if current is not None else _existing(path, "the kustomization")[0]
    text = raw.decode("utf-8-sig")
    nodes = compose(text)
    data = nodes.data if isinstance(nodes.data, dict) else {}
    resources = data.get("resources")
    if isinstance(resources, list) and claims_file in resources:
        return None
    op = Extend(("resources",), (claims_file,)) if isinstance(resources, list) and resources \
        else Append((), "resources", [claims_file])
    new = apply_to_text(text, nodes, [op], detect_style(text, nodes.root))
    prefix = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
    return FileChange(str(path), path, raw, (prefix + new).encode("utf-8"))


def bridge_class(paths: list[str], options: ConvertOptions) -> FileChange:
    """The bridge DeviceClass goes to the first path argument (its directory for a file)."""
    first = next((Path(p) for p in paths if p != STDIN), None)
    directory = (first if first.is_dir() else first.parent) if first is not None else Path(os.curdir)
    target = directory / "deviceclass-gpu-bridge.yaml"
    style = Style()
    text = ("# gpudra: serves nvidia.com/gpu requests from DRA (KEP-5004). The NVIDIA DRA driver "
            "chart (v0.4+)\n# renders the same class on resource.k8s.io/v1: apply this only if "
            "yours lacks extendedResourceName.\n")
    text += render_objects([emit.device_class_bridge(options.target)], style)[len("---\n"):]
    old, exists = _existing(target, str(target))
    return FileChange(str(target), target, old, text.encode("utf-8"), not exists)


def _existing(target: Path, what: str) -> tuple[bytes, bool]:
    """What a file convert adds to holds (b"" when there is none), and whether it exists. A
    FIFO or a device there is refused, not read (it would block or never end), and so is a
    file over the input cap: UnreadableInputError, before anything is written."""
    if not os.path.lexists(target):
        return b"", False
    try:
        return read_regular(str(target)), True
    except FileNotFoundError:
        if os.path.islink(target):  # a dangling link: the write refuses or creates its target
            return b"", False
        raise
    except (OSError, UnreadableInputError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UnreadableInputError(f"{what}: cannot read {target}: {reason}; nothing was "
                                   "written") from None


def merge(changes: list[FileChange]) -> list[FileChange]:
    """One change per file (a claims file can also be an input), the last one winning."""
    merged: dict[str, FileChange] = {}
    for change in changes:
        merged[change.label] = change
    return [c for c in merged.values() if c.old != c.new]
