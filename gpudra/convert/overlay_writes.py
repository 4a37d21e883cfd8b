"""Writing an overlay plan: the edits of patch files and kustomizations that move device counts
onto the claims (:func:`write_plan`), and the `configurations:` files that teach kustomize the
DRA claims' name references (:func:`name_references`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpudra.convert.overlay_records import (
    DRA_GROUP,
    Binding,
    ClaimTarget,
    ConvertedTree,
    FileEdit,
    OverlayPlan,
    PatchKey,
    PatchWork,
    ReferenceSpec,
    add_edit,
    current_text,
    patch_result,
    uses_claims,
)
from gpudra.convert.records import WorkloadResult
from gpudra.kustomize.build import Build
from gpudra.kustomize.kfile import KustomizationEdit, edit_kustomization
from gpudra.kustomize.names import NAME_REFERENCES, ReferenceConfigs, reference_specs
from gpudra.kustomize.patches import pointer
from gpudra.kustomize.tree import Kustomization
from gpudra.k8s.objects import PathT, dig
from gpudra.sources.documents import split_documents
from gpudra.k8s.workloads import WorkloadTable
from gpudra.yamledit.ops import Delete, apply_to_data, apply_to_text
from gpudra.yamledit.textedit import LayoutError, detect_style
from gpudra.yamledit.yaml_nodes import compose, load


def write_plan(plan: OverlayPlan, view: ConvertedTree, work: dict[PatchKey, PatchWork],
           counts: dict[str, dict[ClaimTarget, list[tuple[Binding, int]]]]) -> None:
    k_edits: dict[str, KustomizationEdit] = {}
    file_docs: dict[str, tuple[bool, dict[int, list[PathT]]]] = {}
    for pw in work.values():
        if not pw.deletes:
            continue
        patch = pw.patch
        where = patch.kustomization if patch.inline else patch.file
        if not view.writable(where) or not view.writable(patch.kustomization):
            pw.results[:] = [patch_result(patch, None, "blocked", f"{where} is outside the paths "
                                     "being converted")]
            continue
        ops = patch.docs[0].data if patch.json6902 and patch.docs else []
        if patch.json6902 and len(set(pw.deletes.get(0, []))) >= len(ops):
            # An empty operation list is not a valid patch for kustomize: the entry goes.
            _merge(k_edits, patch.kustomization,
                   KustomizationEdit(remove=((patch.field, patch.index),)))
            if not patch.inline:
                note = (f"{patch.file} held only device-plugin operations: its entry left "
                        f"{patch.kustomization}, and the file is no longer used (delete it)")
                pw.results[:] = [replace(r, notes=r.notes + (note,)) for r in pw.results]
            continue
        if patch.inline:
            new_text = _edit_text(patch.text, pw.deletes, patch.json6902)
            _merge(k_edits, patch.kustomization,
                   KustomizationEdit(inline=(((patch.field, patch.index), new_text),)))
        else:
            docs = file_docs.setdefault(patch.file, (patch.json6902, {}))[1]
            for index, paths in pw.deletes.items():
                docs.setdefault(index, []).extend(paths)
    for file, (json6902, docs) in file_docs.items():
        raw = current_text(plan, view, file)
        new = _edit_text(raw.decode("utf-8-sig"), docs, json6902)
        prefix = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
        add_edit(plan, FileEdit(file, raw, (prefix + new).encode("utf-8")))
    for kfile, targets in counts.items():
        for (kind, name, namespace), bindings in targets.items():
            selector = {"group": DRA_GROUP, "kind": kind, "name": name}
            if namespace:
                selector["namespace"] = namespace
            ops_text = "\n".join(_count_op(b, c) for b, c in bindings)
            _merge(k_edits, kfile, KustomizationEdit(add_patches=(
                {"target": selector, "patch": ops_text},)))
    for kfile, edit in k_edits.items():
        raw = current_text(plan, view, kfile)
        add_edit(plan, FileEdit(kfile, raw, edit_kustomization(raw, edit)))


def _count_op(binding: Binding, count: int) -> str:
    head = ("spec", "spec", "devices") if binding.kind == "ResourceClaimTemplate" \
        else ("spec", "devices")
    path = head + ("requests", binding.index) + (() if binding.flat else ("exactly",)) + ("count",)
    return f"- op: add\n  path: {pointer(path)}\n  value: {count}"


def _merge(edits: dict[str, KustomizationEdit], kfile: str, more: KustomizationEdit) -> None:
    old = edits.get(kfile, KustomizationEdit())
    edits[kfile] = KustomizationEdit(old.add_patches + more.add_patches,
                                     old.inline + more.inline, old.remove + more.remove,
                                     old.add_configurations + more.add_configurations)


def _edit_text(text: str, deletes: dict[int, list[PathT]], json6902: bool) -> str:
    """The patch text with `deletes` applied to its documents, verified by re-reading."""
    chunks = split_documents(text)
    by_index = {}
    index = 0
    for chunk in chunks:
        if load(chunk.text) is None:
            continue
        by_index[index] = chunk
        index += 1
    parts = []
    edited = {id(by_index[i]): paths for i, paths in deletes.items() if i in by_index}
    for chunk in chunks:
        paths = edited.get(id(chunk))
        parts.append(_edit_chunk(chunk.text, paths, json6902) if paths else chunk.text)
    return "".join(parts)


def _edit_chunk(text: str, paths: list[PathT], json6902: bool) -> str:
    nodes = compose(text)
    ops = [Delete(p) for p in dict.fromkeys(paths)]
    if not json6902:
        ops = _prune(nodes.data, ops)
    style = detect_style(text, nodes.root)
    unterminated = not text.endswith("\n")
    source = text + (style.newline if unterminated else "")
    for op in ops:
        if not nodes.editable(op.path):
            raise LayoutError("YAML anchors, aliases or merge keys on the edit path")
    new = apply_to_text(source, nodes, ops, style)
    if unterminated and new.endswith(style.newline):
        new = new[: -len(style.newline)]
    if load(new) != apply_to_data(nodes.data, ops):
        raise LayoutError("the edited patch does not read back as intended")
    return new


def _prune(data: Any, ops: list[Delete]) -> list[Delete]:
    """Deletions that leave a map empty (or a container with only its name) delete it
    instead, up to the patch's identity (apiVersion, kind, metadata stay)."""
    paths = [op.path for op in ops]
    changed = True
    while changed:
        changed = False
        for path in list(paths):
            parent = path[:-1]
            if len(parent) < 1:
                continue
            value = dig(data, *parent)
            gone = [p for p in paths if p[:-1] == parent]
            remaining = [k for k in (value if isinstance(value, Mapping)
                                     else range(len(value)) if isinstance(value, list) else [])
                         if parent + (k,) not in gone]
            empty = not remaining or (isinstance(value, Mapping) and remaining == ["name"]
                                      and isinstance(parent[-1], int))
            if empty and not (len(parent) == 1 and parent[0] in ("apiVersion", "kind",
                                                                 "metadata")):
                paths = [p for p in paths if p[: len(parent)] != parent] + [parent]
                changed = True
                break
    return [Delete(p) for p in paths]


def name_references(plan: OverlayPlan, build: Build, view: ConvertedTree,
                     table: WorkloadTable) -> None:
    """`configurations:` for kustomizations whose namePrefix/nameSuffix would leave a
    workload's claim reference pointing at the old name."""
    needed: dict[str, dict[ReferenceSpec, None]] = {}
    configs = ReferenceConfigs(build.tree)
    for directory, k in build.tree.kustomizations.items():
        if not (k.name_prefix or k.name_suffix) or k.is_component:
            continue
        for r in build.outputs.get(directory, []):
            state = view.state(r.origin)
            if state is None or not (state.converted_now or uses_claims(state.before)):
                continue
            specs = [spec[:4] for spec in reference_specs(r, state.after, table)]
            if not specs:
                continue
            lister = r.via[0] if r.via else k.file
            if configs.has_references(r, k.file):
                continue
            home = lister if view.writable(lister) else k.file
            if not view.writable(home):
                plan.results.append(WorkloadResult(
                    k.file, r.kind, r.current_name, r.current_namespace, "blocked",
                    f"{k.file} renames {r.kind}/{r.name} (namePrefix/nameSuffix), and kustomize "
                    "does not rename its claim references: add a nameReference configuration"))
                continue
            for spec in specs:
                needed.setdefault(home, {})[spec] = None
    by_file = {k.file: k for k in build.tree.kustomizations.values()}
    for kfile, wanted in needed.items():
        _write_references(plan, view, by_file[kfile], list(wanted))


def _write_references(plan: OverlayPlan, view: ConvertedTree, k: Kustomization,
                      specs: list[ReferenceSpec]) -> None:
    kfile = k.file
    directory = os.path.dirname(kfile)
    target = os.path.join(directory, NAME_REFERENCES)
    by_kind: dict[str, list[tuple[str, str, str]]] = {}  # (group, workload kind, path)
    for kind, group, workload_kind, path in specs:
        by_kind.setdefault(kind, []).append((group, workload_kind, path))
    lines = ["# kustomize does not rename DRA claim references by itself (kustomize v5.5.0);",
             "# written by gpudra convert so that namePrefix/nameSuffix keep them pointing at",
             "# the renamed ResourceClaimTemplates and ResourceClaims.", "nameReference:"]
    for kind in sorted(by_kind):
        lines += [f"- kind: {kind}", f"  group: {DRA_GROUP}", "  fieldSpecs:"]
        for group, workload_kind, path in sorted(by_kind[kind]):
            lines.append(f"  - path: {path}")
            if group:
                lines.append(f"    group: {group}")
            lines.append(f"    kind: {workload_kind}")
    new = ("\n".join(lines) + "\n").encode()
    old = current_text(plan, view, target) if os.path.exists(target) else b""
    if old != new:
        add_edit(plan, FileEdit(target, old, new))
    # Always true today: a kustomization that lists the file already is on the way up that
    # has_references checked, so it is never `home`. Kept as a guard, on the tree's parse (no
    # edit in this run touches configurations).
    if NAME_REFERENCES not in (os.path.basename(c) for c in k.configurations):
        raw = current_text(plan, view, kfile)
        add_edit(plan, FileEdit(kfile, raw, edit_kustomization(
            raw, KustomizationEdit(add_configurations=(NAME_REFERENCES,)))))
