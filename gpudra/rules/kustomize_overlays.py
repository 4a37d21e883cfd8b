"""Audit of kustomize trees: device requests hidden in patches, and overlays that give a
container claims and device-plugin devices at once (GPU110), and renamed claims (GPU610).

A checker that runs once the whole input is read: it works from the file tree the source read
(AuditContext.tree), never on objects one by one, and raises rules its siblings declare
(GPU101-GPU109 by DeviceRequests, GPU110 and GPU610 by ClaimsBesideDevicePlugin).

Strategic-merge patch *files* are partial objects, which the file scanner already audits like
any manifest. What it cannot see is reported here, at the patch's file and line: JSON6902
operations on a device key (`/resources/limits/nvidia.com~1gpu`) and inline patches in a
kustomization. A patch is a variant of its target, not a workload of its own: the target is
counted once (a strategic-merge patch file the scan counted is folded into it), on the device
plugin while any variant asks the device plugin for GPUs, so migration progress never reads
100 % while an overlay still does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gpudra.kustomize import roots_among
from gpudra.results.model import InputError
from gpudra.k8s.objects import ManifestObject, as_mapping
from gpudra.rules.base import AuditContext, Checker
from gpudra.rules.device_requests import RULE_BY_KIND
from gpudra.rules.overlays import GPU110, GPU610

if TYPE_CHECKING:
    from gpudra.kustomize.build import Application, Build, Resource
    from gpudra.kustomize.touches import Touch


class KustomizeOverlays(Checker):
    """Patches and overlays of the kustomize trees among the inputs (file sources only)."""

    def finish(self, ctx: AuditContext) -> None:
        if ctx.tree is not None:
            ctx.input_errors += check_overlays(ctx.tree.paths, ctx.tree.files, ctx)


def check_overlays(paths: Iterable[str], files: Iterable[str],
                   ctx: AuditContext) -> list[InputError]:
    """Findings for the kustomize trees under `paths` (nothing when there is none); returns
    the patches gpudra refused to read (a device, a FIFO, past the size cap).

    `files`: the files the scan read; the kustomization files among them are the roots (a
    second walk of a large tree would cost as much as the scan's own).
    """
    roots = roots_among(files)
    if not roots:
        return []
    # The kustomize model (~40 ms of imports) loads only for a tree with a kustomization:
    # not for cluster audits, `gpudra rules`, or a plain tree.
    from gpudra.kustomize.build import Build
    from gpudra.kustomize.resource_files import file_objects
    from gpudra.kustomize.touches import touches
    from gpudra.kustomize.tree import inside, load_tree, real_roots

    paths = [p for p in paths if p != "-"]
    tree = load_tree(paths, roots=roots)
    if not tree.kustomizations:
        return tree.refused
    # tree.errors are not input errors of the audit: kustomization and patch files that are
    # not valid YAML are reported by the file scan, and a missing resource or patch is
    # kustomize's to report (a file generated in CI before the build, a remote base). A file
    # gpudra refused to read (tree.refused) is one: the overlay was not audited in full.
    build = Build(tree, file_objects)
    build.run()
    scope = real_roots(paths)
    seen: set[tuple[object, ...]] = set()
    counted = _Counted(ctx)
    for app in build.applications:
        if not inside(app.patch.file, scope):
            continue
        targets: list[Resource | None] = list(app.targets) or [None]
        for target in targets:
            counted.patch_file(app, target)
            data = build.data(target) if target is not None else None
            for touch in touches(app.patch, app.doc, target, data, ctx.table):
                key = (app.patch.file, touch.line, touch.patch_path, target and target.origin)
                if key in seen:
                    continue  # a component's patch, reached from several overlays
                seen.add(key)
                _report(app, target, touch, ctx, counted)
    _renamed_references(build, scope, ctx)
    return tree.refused


def _renamed_references(build: Build, scope: tuple[str, ...], ctx: AuditContext) -> None:
    """GPU610: a namePrefix/nameSuffix that renames claims but not the references to them."""
    from gpudra.kustomize.names import ReferenceConfigs, reference_specs
    from gpudra.kustomize.tree import inside

    configs = ReferenceConfigs(build.tree)
    for directory, k in build.tree.kustomizations.items():
        if k.is_component or not (k.name_prefix or k.name_suffix) or \
                not inside(k.file, scope):
            continue
        output = build.outputs.get(directory, [])
        renamed = {(r.kind, r.namespace or "default", r.name) for r in output
                   if r.group == "resource.k8s.io"}
        for r in output:
            data = build.data(r)
            if data is None or configs.has_references(r, k.file):
                continue
            for kind, _, _, _, name in reference_specs(r, data, ctx.table):
                if (kind, r.namespace or "default", name) not in renamed:
                    continue  # not part of this build: kustomize does not rename it
                key = "namePrefix" if k.name_prefix else "nameSuffix"
                obj = ManifestObject({"apiVersion": r.api_version, "kind": r.kind,
                                      "metadata": {"name": r.current_name}},
                                     k.file, k.lines.get((key,)) or 1, {}, "",
                                     ("kustomize", key, r.file, r.doc, *r.base))
                ctx.emit(GPU610, obj,
                         f"{key} renames {kind} {name!r} to {r.named(name)!r}, but kustomize "
                         f"does not rename the reference in {r.kind}/{r.name}: its pods would "
                         "ask for a claim that does not exist", line=k.lines.get((key,)))


class _Counted:
    """Where the audit counts the workload a patch changes: a patch is a variant of its target,
    not a workload of its own, so the target (the base object the scan counted, or the first
    patch of a target the scan did not count) is one GPU workload, on the device plugin while
    any variant asks for it."""

    def __init__(self, ctx: AuditContext) -> None:
        self.ctx = ctx
        self.keys: dict[tuple[object, ...], tuple[object, ...]] = {}  # place -> workload identity
        for key, status in ctx.workloads.items():
            if status.source == "file" and status.file:
                self.keys.setdefault(_where(status.file, status.kind, status.name,
                                            status.namespace), key)
        self.merged: set[tuple[object, ...]] = set()

    def note(self, obj: ManifestObject, target: Resource | None, *, device_plugin: bool,
             dra: bool = False) -> None:
        where = _target(target) if target is not None else None
        into = self.keys.get(where) if where is not None else None
        if into is None or into not in self.ctx.workloads:
            self.ctx.note_workload(obj, device_plugin=device_plugin, dra=dra)
            if where is not None:
                self.keys[where] = obj.identity
        else:
            self.ctx.note_variant(into, device_plugin=device_plugin, dra=dra)

    def patch_file(self, app: Application, target: Resource | None) -> None:
        """A strategic-merge patch document the scan counted as a workload of its own: count
        it as its target."""
        data = app.doc.data
        if target is None or app.patch.inline or app.patch.json6902 or \
                not isinstance(data, Mapping):
            return
        meta = as_mapping(data.get("metadata"))
        own = self.keys.get(_where(app.patch.file, str(data.get("kind") or ""),
                                   meta.get("name"), meta.get("namespace")))
        into = self.keys.get(_target(target))
        if own is None or own == into or (own, into) in self.merged:
            return
        status = self.ctx.workloads.get(own)
        if status is None:
            return
        self.merged.add((own, into))
        if into is None or into not in self.ctx.workloads:
            self.keys[_target(target)] = own  # the base asks for no GPU: the patch is its count
            return
        del self.ctx.workloads[own]
        self.ctx.note_variant(into, device_plugin=status.device_plugin, dra=status.dra)


def _target(target: Resource) -> tuple[object, ...]:
    return _where(target.file, target.kind, target.name, target.namespace)


def _where(file: str, kind: str, name: Any, namespace: Any) -> tuple[object, ...]:
    return (os.path.realpath(file), kind, name, namespace)


def _report(app: Application, target: Resource | None, touch: Touch, ctx: AuditContext,
            counted: _Counted) -> None:
    patch = app.patch
    obj = _patch_object(app, target, touch)
    count = touch.count
    visible = patch.json6902 or patch.inline  # the scanner saw strategic-merge patch files
    what = "JSON6902 patch" if patch.json6902 else "inline patch" if patch.inline else "patch"
    who = f"container {touch.container_name!r}" if touch.container_name else "its target"
    if visible and touch.raw is not None and count != 0:
        ctx.emit(RULE_BY_KIND[touch.resource.kind], obj,
                 f"{what} sets {touch.raw} × {touch.resource.name} on {who} of "
                 f"{obj.kind}/{obj.name} (device plugin)",
                 line=touch.line, container=touch.container_name, resource=touch.resource.name,
                 quantity=count)
        counted.note(obj, target, device_plugin=touch.resource.is_nvidia_device_plugin)
    if touch.container is not None and count and touch.resource.is_nvidia_device_plugin and \
            _has_claims(touch.container.data):
        ctx.emit(GPU110, obj,
                 f"{what} puts {touch.raw} × {touch.resource.name} back on {who} of "
                 f"{obj.kind}/{obj.name}, which the base gives DRA claims: the rendered overlay "
                 "asks for both", line=touch.line, container=touch.container_name,
                 resource=touch.resource.name, quantity=count)
        if visible:  # the scanner counted a strategic-merge patch file already
            counted.note(obj, target, device_plugin=True, dra=True)


def _has_claims(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources")
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    return isinstance(claims, list) and bool(claims)


def _patch_object(app: Application, target: Resource | None, touch: Touch) -> ManifestObject:
    """The patch as a located object, named after its target, for findings and progress."""
    patch, doc = app.patch, app.doc
    name: object  # the patch's own metadata may hold anything
    ns: object
    if target is not None:
        api_version, kind, name, ns = (target.api_version, target.kind, target.current_name,
                                       target.current_namespace)
    else:
        data = doc.data if isinstance(doc.data, Mapping) else {}
        meta = as_mapping(data.get("metadata"))
        selector = patch.target or {}
        api_version = str(data.get("apiVersion") or selector.get("version") or "")
        kind = str(data.get("kind") or selector.get("kind") or "")
        name = meta.get("name") or selector.get("name")
        ns = meta.get("namespace") or selector.get("namespace")
    metadata = {k: v for k, v in (("name", name), ("namespace", ns)) if v}
    return ManifestObject({"apiVersion": api_version, "kind": kind, "metadata": metadata},
                          patch.file, touch.line, {}, "",
                          ("kustomize", patch.field, patch.index, doc.index))
