"""Convert a manifest tree: plan each document, edit its text, verify, and assemble new files.

Only documents that need a change are touched; every other byte of a file is copied as read
(BOM, CRLF, comments, blank lines, separators). A document whose edit cannot be verified is
left as it was, and its workloads are reported as blocked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from gpudra.convert.openshift import into_objects, objects_of
from gpudra.convert.overlays import ObjectState, OverlayPlan, plan_overlays
from gpudra.convert.planner import ConvertOptions, ObjectPlan, Planner, WorkloadResult
from gpudra.convert.records import result_for
from gpudra.devices import DEVICE_NAME_PATTERN
from gpudra.dra import emit
from gpudra.errors import UnreadableInputError, UsageError
from gpudra.kustomize.build import Build
from gpudra.kustomize.resource_files import file_objects
from gpudra.kustomize.tree import (
    Tree,
    inside,
    kustomization_file,
    load_tree,
    real_roots,
    roots_among,
)
from gpudra.model import InputError, Skipped
from gpudra.sources import ScanStats
from gpudra.sources.documents import Chunk
from gpudra.sources.files import STDIN, InputFile, ReadFile, documents, read_files
from gpudra.sources.prescan import CONVERT_NEEDLES
from gpudra.workloads import WorkloadTable
from gpudra.yamledit.ops import Append, Extend, Op, apply_to_data, apply_to_text
from gpudra.yamledit.render import document
from gpudra.yamledit.textedit import LayoutError, Style, detect_style
from gpudra.yamledit.yaml_nodes import NodeDocument, compose, compose_chunk
from gpudra.yamledit.yaml_nodes import load as load_document

_DEVICE = re.compile(DEVICE_NAME_PATTERN)


@dataclass(frozen=True)
class FileChange:
    label: str
    path: Path | None
    old: bytes
    new: bytes
    created: bool = False  # the file does not exist yet


@dataclass(frozen=True)
class ConvertReport:
    results: tuple[WorkloadResult, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[InputError, ...]
    files_scanned: int
    inputs: tuple[InputFile, ...] = ()
    stdin_data: bytes = b""  # what was read from '-', echoed when nothing changes
    documents_parsed: int = 0  # counted as the audit counts them (one reading of inputs)
    skipped: tuple[Skipped, ...] = ()  # documents that are no Kubernetes objects
    unwritten: frozenset[str] = frozenset()  # labels of changes a write failed or refused

    @property
    def nothing_read(self) -> bool:
        """As for an audit: a run that read nothing never passes (exit 3)."""
        return self.files_scanned == 0

    @property
    def blocked(self) -> tuple[WorkloadResult, ...]:
        return tuple(r for r in self.results if r.strategy == "blocked")


@dataclass
class _Doc:
    chunk: Chunk
    nodes: NodeDocument | None = None
    ops: list[Op] = field(default_factory=list)
    new_objects: list[dict] = field(default_factory=list)
    results: list[WorkloadResult] = field(default_factory=list)
    outcomes: dict[tuple, WorkloadResult] = field(default_factory=dict)  # by object path
    loaded: list[WorkloadResult] = field(default_factory=list)  # found while reading it
    existing: Any = None  # the data of a document read but never edited (JSON)


@dataclass
class _File:
    entry: InputFile
    raw: bytes
    docs: list[_Doc] = field(default_factory=list)

    @property
    def bom(self) -> bool:
        return self.raw.startswith(b"\xef\xbb\xbf")


def convert_paths(paths: Iterable[str], options: ConvertOptions, *,
                  table: WorkloadTable | None = None, excludes: Iterable[str] = (),
                  claims_file: str | None = None,
                  stdin: Callable[[], bytes] | None = None,
                  leave_out: str | None = None) -> ConvertReport:
    """`leave_out`: a directory whose files are not inputs (the --output-dir of an earlier
    run inside the tree)."""
    paths = list(paths)
    errors: list[InputError] = []
    results: list[WorkloadResult] = []
    files: list[_File] = []
    inputs: list[InputFile] = []
    stats = ScanStats()
    for read in read_files(paths, excludes, stats=stats, stdin=stdin, leave_out=leave_out):
        if isinstance(read, InputError):
            errors.append(read)
            continue
        inputs.append(read.entry)
        loaded = _load(read, stats, errors)
        if loaded is not None:
            files.append(loaded)
    roots = roots_among(e.path for e in inputs if e.path is not None)
    tree = load_tree(paths, roots=roots) if roots else None
    errors += tree.refused if tree is not None else ()
    tree = tree if tree is not None and tree.kustomizations else None
    patch_files = {os.path.normpath(p) for p in tree.patch_files()} if tree else set()
    build = None
    if tree is not None:
        # Once for every pass: the build depends on the tree and the files as read, and
        # nothing is written before the passes settle.
        build = Build(tree, file_objects)
        build.run()
    table = table or WorkloadTable()
    vetoes: dict[tuple, str] = {}
    while True:  # each pass that plans again adds vetoes, of which there are finitely many
        changes = _plan_and_assemble(files, Planner(options, table), claims_file, patch_files,
                                     vetoes, tree)
        overlay = None
        if build is None:
            break
        view = _TreeView(files, paths, changes, build)
        overlay = plan_overlays(build, view, table)
        if not overlay.vetoes:
            break
        if set(overlay.vetoes) <= set(vetoes):  # a vetoed object is never converted again
            raise UnreadableInputError("kustomize overlays: planning did not settle; nothing was "
                                 "written")
        vetoes.update(overlay.vetoes)
    if overlay is not None:
        labels = _labels(inputs)
        changes = _with_overlay(changes, overlay, labels)
        results += [replace(r, file=_label(labels, r.file)) for r in overlay.results]
    results += [r for f in files for doc in f.docs for r in doc.results]
    if options.strategy == "bridge" and any(r.strategy == "bridge" for r in results):
        changes.append(_bridge_class(paths, options))
    stdin_data = next((f.raw for f in files if f.entry.label == STDIN), b"")
    return ConvertReport(tuple(results), tuple(_merge(changes)), tuple(errors), stats.files,
                         tuple(inputs), stdin_data, stats.documents, tuple(stats.skipped))


# --- reading -------------------------------------------------------------------------------

def _load(read: ReadFile, stats: ScanStats, errors: list[InputError]) -> _File | None:
    """A file's documents as convert plans them, read as the audit reads them: the documents
    audit calls broken are errors here too (and their file is left untouched), the ones it
    skips are skipped. Of the parsed ones, only those with a convert needle are planned."""
    entry = read.entry
    if read.text is None:
        # Nothing to convert: keep no bytes, except stdin's, which is echoed back unchanged.
        return _File(entry, read.raw) if entry.label == STDIN else None
    f = _File(entry, read.raw)
    broken = False
    for document in documents(read, compose_chunk, stats):
        doc = _Doc(document.chunk)
        f.docs.append(doc)
        text = document.chunk.text
        if document.error is not None:
            error = document.error
            errors.append(InputError(error.file, f"{error.message}; file left untouched",
                                     error.line))
            broken = True
        elif document.template is not None and _DEVICE.search(text):
            where = "" if entry.role != "manifest" else f" (line {document.chunk.first_line})"
            doc.loaded.append(WorkloadResult(
                entry.label, "", None, None, "blocked",
                "Helm chart file: change the chart's values/templates to render claims"
                if entry.role != "manifest" else
                "Go/Helm template: change the template or its values; gpudra never edits "
                f"templates{where}"))
        elif read.json:
            if document.parsed is not None and _DEVICE.search(text):
                doc.loaded.append(WorkloadResult(
                    entry.label, "", None, None, "blocked",
                    "JSON manifest: convert rewrites YAML only; convert it by hand"))
            elif document.parsed is not None:
                doc.existing = document.parsed.data  # its DRA objects' names stay taken
        elif document.parsed is not None and any(n in text for n in CONVERT_NEEDLES):
            # Skipped documents (no Kubernetes object) are planned too: a request-shaped GPU
            # limit in one (a values file) is reported as blocked, for a human to move.
            doc.nodes = document.parsed
            malformed = _malformed_metadata(doc.nodes.data)
            if malformed:
                errors.append(InputError(entry.label, f"{malformed}: the API server rejects such "
                                         "an object; file left untouched",
                                         document.chunk.first_line))
                broken = True
    return None if broken else f


def _malformed_metadata(data: Any) -> str | None:
    """What makes an object of the document unreadable to the planner: a `metadata` (its own,
    or its pod template's) that is not a mapping, or a name or namespace that is not a
    string."""
    for obj, _ in objects_of(data):
        kind = obj.get("kind") or "object"
        for where, value in (("metadata", obj.get("metadata")),
                             ("spec.template.metadata",
                              _get(_get(obj.get("spec"), "template"), "metadata"))):
            if value is not None and not isinstance(value, dict):
                shape = "a list" if isinstance(value, list) else f"the scalar {value!r}"
                return f"{kind} {where} is {shape}, not a mapping"
            for key in ("name", "generateName", "namespace"):
                field = _get(value, key)
                if field is not None and not isinstance(field, str):
                    return f"{kind} {where}.{key} is {field!r}, not a string"
    return None


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _plan_and_assemble(files: list[_File], planner: Planner, claims_file: str | None,
                       patch_files: set[str], vetoes: dict[tuple, str],
                       tree: Tree | None = None) -> list[FileChange]:
    """One planning pass over every file, and the changes it makes. Kustomize patch files are
    partial objects, not workloads: the overlay planner handles them."""
    planned = [f for f in files
               if f.entry.path is None or os.path.normpath(f.entry.path) not in patch_files]
    for f in files:
        for doc in f.docs:
            doc.ops.clear()
            doc.new_objects.clear()
            doc.results[:] = doc.loaded
            doc.outcomes.clear()
    planner.reserve_existing(data for f in planned for doc in f.docs
                             for data, _ in objects_of(doc.nodes.data if doc.nodes is not None
                                                       else doc.existing))
    for f in planned:
        for index, doc in enumerate(f.docs):
            _plan_document(f, doc, _vetoed(planner.plan, f, index, vetoes))
    # Quotas last: whether their device-plugin keys can go depends on every workload.
    staying = frozenset(r.namespace for f in planned for doc in f.docs for r in doc.results
                        if r.kind and r.strategy in ("blocked", "bridge", "ignored", "waived"))
    for f in planned:
        for index, doc in enumerate(f.docs):
            _plan_document(f, doc, _vetoed(
                lambda file, data, base, _nodes: planner.plan_quota(file, data, base, staying),
                f, index, vetoes, report=False))
    changes = [c for c in (_assemble(f, claims_file) for f in planned) if c is not None]
    changes += _claims_files(planned, claims_file, {c.label for c in changes}, tree)
    return changes


def _vetoed(plan_one: Callable[..., ObjectPlan], f: _File, index: int,
            vetoes: dict[tuple, str], report: bool = True) -> Callable[..., ObjectPlan]:
    """`plan_one`, except for objects an overlay patch vetoed: those are blocked (reported
    by the first pass only)."""
    if not vetoes or f.entry.path is None:
        return plan_one
    file = os.path.normpath(f.entry.path)

    def plan(label: str, data: Any, base: tuple, nodes: NodeDocument) -> ObjectPlan:
        reason = vetoes.get((file, index, base))
        if reason is None:
            return plan_one(label, data, base, nodes)
        if not report:
            return ObjectPlan()
        return ObjectPlan(result=result_for(label, data, "blocked", reason=reason))
    return plan


# --- planning and editing ------------------------------------------------------------------

def _plan_document(f: _File, doc: _Doc, plan_one: Callable[..., ObjectPlan]) -> None:
    """Apply one planning pass (`Planner.plan` or a quota pass) to every object of `doc`."""
    if doc.nodes is None:
        return
    new_objects: list[dict] = []
    for data, base in objects_of(doc.nodes.data):
        plan = plan_one(f.entry.label, data, base, doc.nodes)
        if plan.result is not None:
            doc.results.append(plan.result)
            doc.outcomes[base] = plan.result
        doc.ops += plan.ops
        new_objects += [obj for obj, _ in plan.new_objects]
    inside = into_objects(doc.nodes.data, new_objects)  # a Template keeps them in `objects:`
    doc.ops += inside
    if not inside:
        doc.new_objects += new_objects


def _edited_chunk(f: _File, doc: _Doc) -> tuple[str, Style] | None:
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


def _blocked(result: WorkloadResult, reason: str) -> WorkloadResult:
    if result.strategy not in ("rewrite", "repair", "quota"):
        return result
    return WorkloadResult(result.file, result.kind, result.name, result.namespace, "blocked",
                          reason)



def _render_objects(objects: list[dict], style: Style) -> str:
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


def _assemble(f: _File, claims_file: str | None) -> FileChange | None:
    if not any(doc.ops or doc.new_objects for doc in f.docs):
        return None
    parts: list[str] = []
    changed = False
    for doc in f.docs:
        edited = _edited_chunk(f, doc)
        if edited is None:
            parts.append(doc.chunk.text)
            continue
        text, style = edited
        changed |= text != doc.chunk.text
        parts.append(text)
        if doc.new_objects and claims_file is None:
            if not text.endswith("\n"):
                parts.append(style.newline)
            parts.append(_render_objects(doc.new_objects, style))
            changed = True
    if not changed:
        return None
    new = ("\ufeff" if f.bom else "") + "".join(parts)
    if not f.raw.endswith(b"\n"):  # keep a file without a final newline that way
        new = new.removesuffix("\r\n" if new.endswith("\r\n") else "\n")
    path = Path(f.entry.path) if f.entry.path is not None else None
    return FileChange(f.entry.label, path, f.raw, new.encode("utf-8"))


# --- kustomize overlays ---------------------------------------------------------------------

class _TreeView:
    """The tree as this planning pass leaves it, for the overlay planner."""

    def __init__(self, files: list[_File], paths: list[str], changes: list[FileChange],
                 build: Build) -> None:
        self._build = build  # reads each file of the tree once, for every pass
        self._files = {os.path.normpath(f.entry.path): f for f in files if f.entry.path}
        self._roots = real_roots(paths)
        self._pending = {os.path.normpath(c.label): c.new for c in changes}
        self._after: dict[int, Any] = {}
        self._claims: dict[tuple, Any] | None = None
        self._outside_read = False

    def state(self, origin: tuple) -> ObjectState | None:
        file, index, base = origin
        f = self._files.get(os.path.normpath(file))
        doc = f.docs[index] if f is not None and index < len(f.docs) else None
        if doc is None or doc.nodes is None:
            data = next((d for i, b, d in self._build.objects(file) if (i, b) == (index, base)),
                        None)
            return ObjectState(data, data, False) if data is not None else None
        before = _at(doc.nodes.data, base)
        after = _at(self._after_data(doc), base)
        outcome = doc.outcomes.get(base)
        strategy = outcome.strategy if outcome is not None else None
        return ObjectState(before, after, strategy in ("rewrite", "quota"),
                           outcome.reason if strategy == "blocked" else None,
                           outcome.claims if outcome is not None else ())

    def _after_data(self, doc: _Doc) -> Any:
        if id(doc) not in self._after:
            self._after[id(doc)] = apply_to_data(doc.nodes.data, doc.ops) if doc.ops \
                else doc.nodes.data
        return self._after[id(doc)]

    def writable(self, file: str) -> bool:
        return inside(file, self._roots)

    def read(self, path: str) -> bytes:
        pending = self._pending.get(os.path.normpath(path))
        if pending is not None:
            return pending
        with open(path, "rb") as handle:
            return handle.read()

    def claim_object(self, namespace: str | None, name: str, kind: str) -> Any:
        if self._claims is None:
            self._claims = {}
            for f in self._files.values():
                for doc in f.docs:
                    found = [obj for obj, _ in objects_of(self._after_data(doc))] \
                        if doc.nodes is not None else []
                    for obj in found + doc.new_objects:
                        self._index_claim(obj)
        found = self._claims.get((kind, namespace or "default", name))
        if found is None and not self._outside_read:
            # A base outside the paths, converted in an earlier run: its files are indexed
            # once (indexing keeps the first object per name, so again would add nothing).
            self._outside_read = True
            for file in self._outside_files():
                for _, _, obj in self._build.objects(file):
                    self._index_claim(obj)
            found = self._claims.get((kind, namespace or "default", name))
        return found

    def _index_claim(self, obj: Any) -> None:
        if isinstance(obj, dict) and str(obj.get("apiVersion", "")).startswith("resource.k8s.io/"):
            meta = obj.get("metadata") or {}
            key = (obj.get("kind"), meta.get("namespace") or "default", meta.get("name"))
            self._claims.setdefault(key, obj)

    def _outside_files(self) -> list[str]:
        listed = {r for k in self._build.tree.kustomizations.values() for r in k.resources
                  if os.path.isfile(r)}
        return [p for p in sorted(listed) if os.path.normpath(p) not in self._files]


def _at(data: Any, base: tuple) -> Any:
    for part in base:
        data = data[part]
    return data


def _labels(inputs: list[InputFile]) -> dict[str, str]:
    return {os.path.normpath(e.path): e.label for e in inputs if e.path is not None}


def _label(labels: dict[str, str], path: str) -> str:
    """How the file scanner names `path`; a file it did not list is named like its
    directory's files (`./overlays/prod/Kustomization`, a new file)."""
    key = os.path.normpath(path)
    if key in labels:
        return labels[key]
    directory = os.path.dirname(key)
    for known, label in labels.items():
        if os.path.dirname(known) == directory:
            return os.path.join(os.path.dirname(label), os.path.basename(key))
    return path


def _with_overlay(changes: list[FileChange], overlay: OverlayPlan,
                  labels: dict[str, str]) -> list[FileChange]:
    """The pass's changes with the overlay planner's edits on top (an edit of a file that
    already changes was made from that change's content)."""
    by_path = {os.path.normpath(c.label): c for c in changes}
    for edit in overlay.edits:
        key = os.path.normpath(edit.path)
        earlier = by_path.get(key)
        if earlier is not None:
            by_path[key] = FileChange(earlier.label, earlier.path, earlier.old, edit.new,
                                      earlier.created)
        else:
            exists = os.path.exists(edit.path)
            by_path[key] = FileChange(_label(labels, edit.path), Path(edit.path), edit.old,
                                      edit.new, not exists)
    return list(by_path.values())


# --- claims files, kustomize, bridge -------------------------------------------------------

def _claims_files(files: list[_File], claims_file: str | None,
                  converted: set[str], tree: Tree | None = None) -> list[FileChange]:
    """New objects per directory in `claims_file`, and the kustomization that lists it.

    Any trouble with these files stops the whole run before anything is written: the
    converted workloads would otherwise name templates that were never written.
    """
    if claims_file is None:
        return []
    try:
        return _claims_file_changes(files, claims_file, converted, tree)
    except (UnicodeDecodeError, yaml.YAMLError, LayoutError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc).splitlines()[0]
        raise UnreadableInputError(f"--claims-file {claims_file}: cannot update it or its "
                             f"kustomization ({reason}); nothing was written") from None


def _claims_file_changes(files: list[_File], claims_file: str,
                         converted: set[str], tree: Tree | None = None) -> list[FileChange]:
    per_dir: dict[Path, list[tuple[dict, Style]]] = {}
    for f in files:
        if f.entry.path is None:
            continue
        for doc in f.docs:
            if doc.new_objects and doc.nodes is not None:
                style = detect_style(doc.chunk.text, doc.nodes.root)
                per_dir.setdefault(Path(f.entry.path).parent, []).extend((o, style) for o in doc.new_objects)
    changes: list[FileChange] = []
    for directory, objects in per_dir.items():
        target = directory / claims_file
        if str(target) in converted:
            raise UsageError(f"--claims-file {claims_file}: {target} holds workloads that are "
                             "being converted; choose another name")
        exists = target.exists()
        old = target.read_bytes() if exists else b""
        style = objects[0][1]
        text = old.decode("utf-8-sig")
        if text and not text.endswith("\n"):
            text += style.newline
        rendered = _render_objects([o for o, _ in objects], style)
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


def _kustomization_change(directory: Path, claims_file: str,
                          current: bytes | None = None) -> FileChange | None:
    found = kustomization_file(str(directory))
    if found is None:
        return None
    path = Path(found)
    raw = current if current is not None else path.read_bytes()
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


def _bridge_class(paths: list[str], options: ConvertOptions) -> FileChange:
    """The bridge DeviceClass goes to the first path argument (its directory for a file)."""
    first = next((Path(p) for p in paths if p != STDIN), None)
    directory = (first if first.is_dir() else first.parent) if first is not None else Path(os.curdir)
    target = directory / "deviceclass-gpu-bridge.yaml"
    style = Style()
    text = ("# gpudra: serves nvidia.com/gpu requests from DRA (KEP-5004). The NVIDIA DRA driver "
            "chart (v0.4+)\n# renders the same class on resource.k8s.io/v1: apply this only if "
            "yours lacks extendedResourceName.\n")
    text += _render_objects([emit.device_class_bridge(options.target)], style)[len("---\n"):]
    exists = target.exists()
    old = target.read_bytes() if exists else b""
    return FileChange(str(target), target, old, text.encode("utf-8"), not exists)


def _merge(changes: list[FileChange]) -> list[FileChange]:
    """One change per file (a claims file can also be an input), the last one winning."""
    merged: dict[str, FileChange] = {}
    for change in changes:
        merged[change.label] = change
    return [c for c in merged.values() if c.old != c.new]
