"""Convert kustomize overlays consistently with their converted bases.

The base is converted as usual. For each patch that sets a device-plugin count on a converted
workload, the count moves onto the workload's claim: the device-plugin keys leave the patch
(strategic merge: the keys, and the maps they empty; JSON6902: the operations), and the
kustomization that lists the patch gets a JSON6902 patch of the ResourceClaimTemplate
(`/spec/spec/devices/requests/<i>/exactly/count`). JSON6902, not strategic merge, because
kustomize does not know a ResourceClaimTemplate's merge keys: a strategic-merge patch would
replace the whole `requests` list.

Anything else that touches a converted workload's devices (a patch that adds a GPU, changes
the resource, patches by index into a list convert changes, a target gpudra cannot resolve)
vetoes the conversion of that workload: the caller plans again without it, so the base stays
as it is and every overlay still builds and still gets what it got.

kustomize's built-in name references do not include `resourceClaimTemplateName` (kustomize
v5.5.0: a `namePrefix` renames the template but not the reference). Where a kustomization
renames objects that reference DRA claims, the kustomization that lists the workload gets a
`configurations:` file with the nameReference entries (or the renaming one, when the lister is
not being converted).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gpudra.convert.records import ContainerClaim, WorkloadResult
from gpudra.devices import DeviceKind, classify
from gpudra.dra.emit import GPU_CLASS, MIG_CLASS
from gpudra.gpu_use import device_keys
from gpudra.kustomize.build import Application, Build, Resource
from gpudra.kustomize.kfile import KustomizationEdit, edit_kustomization
from gpudra.kustomize.names import NAME_REFERENCES, ReferenceConfigs, reference_specs
from gpudra.kustomize.patches import Patch, as_path, device_ops, pointer, pointer_tokens
from gpudra.kustomize.touches import Touch, touches
from gpudra.kustomize.tree import Kustomization
from gpudra.objects import dig
from gpudra.sources.documents import split_documents
from gpudra.workloads import WorkloadTable
from gpudra.yamledit.nodes import compose, load
from gpudra.yamledit.ops import Delete, apply_to_data, apply_to_text
from gpudra.yamledit.textedit import LayoutError, detect_style

Origin = tuple[str, int, tuple]
_DRA = "resource.k8s.io"
# Kinds whose strategic-merge schema kustomize knows (containers merge by name); custom
# resources are merged as JSON merge patches, where a patch's list replaces the base's.
_MERGE_KEYED = frozenset({("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController"),
                          ("apps", "Deployment"), ("apps", "ReplicaSet"),
                          ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job"),
                          ("batch", "CronJob")})


@dataclass(frozen=True)
class ObjectState:
    """One object of the tree before and after this run, and what this run does with it."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    converted_now: bool          # this run rewrites it (its result is `rewrite` or `quota`)
    reason: str | None = None    # why this run leaves it (blocked), if it has a GPU
    claims: tuple[ContainerClaim, ...] = ()  # the planner's record of what it references


class ConvertedTree(Protocol):
    def state(self, origin: Origin) -> ObjectState | None: ...

    def writable(self, file: str) -> bool: ...

    def claim_object(self, namespace: str | None, name: str,
                     kind: str) -> Mapping[str, Any] | None: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class FileEdit:
    path: str
    old: bytes
    new: bytes


@dataclass
class OverlayPlan:
    vetoes: dict[Origin, str] = field(default_factory=dict)
    results: list[WorkloadResult] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)


class _Block(Exception):
    """This patch cannot follow its converted target; the message says why."""


@dataclass(frozen=True)
class _Binding:
    kind: str            # ResourceClaimTemplate | ResourceClaim
    name: str            # the object's name in the base
    index: int
    flat: bool           # v1beta1: count sits on the request itself


@dataclass
class _PatchWork:
    patch: Patch
    deletes: dict[int, list[tuple]] = field(default_factory=dict)   # doc index -> paths
    results: list[WorkloadResult] = field(default_factory=list)
    targets: list[Resource] = field(default_factory=list)           # workloads it follows


def plan_overlays(build: Build, view: ConvertedTree, table: WorkloadTable) -> OverlayPlan:
    """What the overlays of `build` (a build that has run) need for this planning pass."""
    plan = OverlayPlan()
    work: dict[tuple, _PatchWork] = {}
    counts: dict[str, dict[tuple, list[tuple[_Binding, int]]]] = {}  # kustomization -> target
    names_seen: dict[tuple, set[str]] = {}
    for app in build.applications:
        key = (app.patch.kustomization, app.patch.field, app.patch.index)
        pw = work.setdefault(key, _PatchWork(app.patch))
        _application(app, view, table, plan, pw, counts, names_seen)
    for (kfile, _, _, _), names in names_seen.items():
        if len(names) > 1:  # a component reached from overlays that name the claim differently
            for app in build.applications:
                if app.patch.kustomization == kfile:
                    for target in app.targets:
                        _veto(plan, view, target, f"the component patch in {kfile} reaches "
                              "a claim that its overlays name differently "
                              f"({', '.join(sorted(names))})")
    if plan.vetoes:
        return plan
    try:
        _write(plan, view, work, counts)
        _name_references(plan, build, view, table)
    except LayoutError as exc:
        # A patch or kustomization gpudra cannot edit faithfully: its workloads stay as they
        # are, so that nothing is written that the overlays would not build or agree with.
        reason = f"cannot edit the overlay faithfully ({exc})"
        for pw in work.values():
            for target in pw.targets:
                _veto(plan, view, target, reason)
            pw.results[:] = [replace(r, strategy="blocked", reason=reason, notes=())
                             if r.strategy == "rewrite" else r for r in pw.results]
        plan.edits.clear()
    for pw in work.values():
        plan.results += pw.results
    return plan


# --- one patch applied in one place ---------------------------------------------------------

def _application(app: Application, view: ConvertedTree, table: WorkloadTable,
                 plan: OverlayPlan, pw: _PatchWork, counts: dict, names_seen: dict) -> None:
    patch = app.patch
    if not app.targets:
        if _mentions_devices(app.doc.data):
            why = app.unresolved or "no target"
            for r in app.scope:
                _veto(plan, view, r, f"a GPU patch in {patch.where} has a target gpudra "
                      f"cannot resolve ({why})")
            pw.results.append(_result(patch, None, "blocked",
                                      f"its target cannot be resolved ({why})"))
        return
    for target in app.targets:
        state = view.state(target.origin)
        before = state.before if state else None
        found = touches(patch, app.doc, target, before, table)
        try:
            work = _plan_target(app, target, state, found, view)
        except _Block as exc:
            if state is not None and state.converted_now:
                _veto(plan, view, target, f"overlay patch {patch.where}: {exc}")
            blocked = _result(patch, target, "blocked", str(exc))
            if found and blocked not in pw.results:
                pw.results.append(blocked)
            continue
        if work is None:
            continue
        deletes, bindings = work
        pw.deletes.setdefault(app.doc.index, []).extend(deletes)
        pw.targets.append(target)
        name = _claim_name(app, target, bindings[0][0])
        names_seen.setdefault((patch.kustomization, patch.field, patch.index, app.doc.index),
                              set()).add(name)
        slot = counts.setdefault(patch.kustomization, {}).setdefault(
            (bindings[0][0].kind, name, target.current_namespace), [])
        # A component's patch is applied once per overlay that includes it: one entry each.
        slot += [b for b in bindings if b not in slot]
        result = _result(patch, target, "rewrite", None, notes=tuple(
            f"overlay: {b.kind} {name} request {b.index} gets count {c} (moved out of the patch)"
            for b, c in bindings))
        if result not in pw.results:
            pw.results.append(result)


def _plan_target(app: Application, target: Resource, state: ObjectState | None,
                 found: list[Touch], view: ConvertedTree):
    """The patch's deletions and the counts its target's claim gets; None: nothing to do."""
    patch = app.patch
    converted = state is not None and (state.converted_now or _uses_claims(state.before))
    if not found:
        if converted and state.converted_now:
            _check_neutral(app, state)
        return None
    if state is None:
        raise _Block(f"its target {target.kind}/{target.current_name} is not in the tree")
    if not patch.json6902 and (target.group, target.kind) not in _MERGE_KEYED:
        raise _Block(f"kustomize merges a {target.kind} with JSON merge-patch semantics "
                     "(a list in the patch replaces the base's): move the count by hand")
    for t in found:
        if t.shape is not None:
            raise _Block(f"{t.resource.name}: {t.shape}")
        if t.resource.kind is DeviceKind.OTHER_NVIDIA:
            raise _Block(f"{t.resource.name} has no DRA equivalent")
        if t.op not in (None, "add", "replace"):
            raise _Block(f"a JSON6902 {t.op!r} operation on {t.resource.name}")
        if t.container is None:
            raise _Block(f"it adds {t.resource.name} to container "
                         f"{t.container_name or '?'}, which {target.kind}/{target.name} does "
                         "not have in the base")
        base = _device_plugin(t.container.data)
        if not base and not _claims(t.container.data):
            raise _Block(f"it adds {t.resource.name} to container {t.container_name!r}, which "
                         "has no GPU in the base: give it a claim by hand")
        if base and t.resource.name not in base:
            raise _Block(f"it changes container {t.container_name!r}'s resource from "
                         f"{', '.join(base)} to {t.resource.name}")
        if t.resource.kind is DeviceKind.SHARED:
            raise _Block(f"{t.resource.name}: time-slicing replicas in an overlay")
        count = t.count
        if count is None or count <= 0:
            raise _Block(f"{t.resource.name}: {t.raw!r} is not a device count gpudra can move "
                         "(a placeholder, zero or invalid)")
    if not converted:
        if state.reason:
            raise _Block(f"its target {target.kind}/{target.current_name} is not converted "
                         f"({state.reason})")
        if not view.writable(target.file):
            raise _Block(f"its target {target.kind}/{target.name} comes from {target.file}, "
                         "outside the paths being converted: convert the base and its "
                         "overlays in one run")
        return None  # the base still uses the device plugin: the patch agrees with it
    per_container: dict[tuple, dict[str, Touch]] = {}
    for t in found:
        per_container.setdefault(t.container.path, {})[t.section or "limits"] = t
    bindings: list[tuple[_Binding, int]] = []
    for path, sections in per_container.items():
        if "limits" not in sections:
            raise _Block(f"{next(iter(sections.values())).resource.name} in requests without a "
                         "limit")
        if "requests" in sections and sections["requests"].count != sections["limits"].count:
            raise _Block("requests and limits differ")
        t = sections["limits"]
        bindings.append((_binding(state.after, t, path, view, state.claims), t.count))
    _check_other_content(app, found, state)
    if patch.json6902:
        deletes = sorted({(t.patch_path[0],) for t in found})
    else:
        deletes = [t.patch_path for t in found]
    return deletes, bindings


def _binding(after: Mapping[str, Any], t: Touch, path: tuple, view: ConvertedTree,
             state_claims: tuple[ContainerClaim, ...] = ()) -> _Binding:
    container = dig(after, *path) or {}
    claims = dig(container, "resources", "claims") or []
    label = f"container {t.container_name!r}"
    if _device_plugin(container):
        raise _Block(f"{label} keeps a device-plugin request after conversion")
    if len(claims) != 1 or not isinstance(claims[0], Mapping):
        raise _Block(f"{label} references {len(claims)} claims (init containers take devices "
                     "from it): change the count by hand")
    pod_claim, request = claims[0].get("name"), claims[0].get("request")
    pod = dig(after, *t.pod) or {}
    sharing = [c for c in _all_containers(pod) if c is not container and any(
        isinstance(x, Mapping) and x.get("name") == pod_claim
        for x in dig(c, "resources", "claims") or [])]
    if sharing:
        raise _Block(f"{label}'s claim is also used by container "
                     f"{sharing[0].get('name')!r}: change the count by hand")
    entry = next((e for e in pod.get("resourceClaims") or []
                  if isinstance(e, Mapping) and e.get("name") == pod_claim), None)
    if entry is None:
        raise _Block(f"{label}: pod claim {pod_claim!r} is not in resourceClaims")
    kind = "ResourceClaim" if entry.get("resourceClaimName") else "ResourceClaimTemplate"
    name = entry.get("resourceClaimName") or entry.get("resourceClaimTemplateName")
    meta = after.get("metadata") or {}
    obj = view.claim_object(meta.get("namespace"), str(name), kind)
    if obj is None:
        raise _Block(f"{kind} {name!r} is not in the tree")
    spec = obj.get("spec") or {}
    devices = (spec.get("spec") or {}).get("devices") if kind == "ResourceClaimTemplate" \
        else spec.get("devices")
    requests = (devices or {}).get("requests") or []
    names = [r.get("name") for r in requests if isinstance(r, Mapping)]
    if request is None and len(requests) == 1:
        index = 0
    elif request in names:
        index = names.index(request)
    else:
        raise _Block(f"{label}: request {request!r} is not in {kind} {name!r}")
    body = requests[index]
    flat = "exactly" not in body
    exact = body if flat else body["exactly"]
    device_class = exact.get("deviceClassName")
    resource = t.resource
    if resource.kind is DeviceKind.MIG:
        selectors = " ".join(str(dig(s, "cel", "expression")) for s in exact.get("selectors") or [])
        if device_class != MIG_CLASS or f'profile == "{resource.mig_profile}"' not in selectors:
            raise _Block(f"{label}: the claim's request is not MIG profile {resource.mig_profile}")
    elif device_class not in (GPU_CLASS, MIG_CLASS):
        raise _Block(f"{label}: the claim's request has class {device_class!r}")
    # The claim is followed in the converted data (a base converted in an earlier run has
    # nothing else); for one converted now, the planner's record must say the same.
    planned = [c for c in state_claims if c.pod_spec == t.pod and c.container == t.container_name]
    if planned and [(c.kind, c.object, c.index) for c in planned] != [(kind, str(name), index)]:
        raise _Block(f"{label}: the plan and the converted workload disagree about its claim")
    return _Binding(kind, str(name), index, flat)


def _claim_name(app: Application, target: Resource, binding: _Binding) -> str:
    """What the claim object is called where the patch applies: found among the resources
    there (an existing object), or renamed as its workload was (one this run writes)."""
    namespace = target.namespace or "default"
    for r in app.scope:
        if r.kind == binding.kind and r.group == _DRA and r.name == binding.name and \
                (r.namespace or "default") == namespace:
            return r.current_name
    return target.named(binding.name)


def _check_neutral(app: Application, state: ObjectState) -> None:
    """A patch without device keys on a workload this run converts must still apply."""
    if app.patch.json6902:
        for op in app.doc.data if isinstance(app.doc.data, list) else ():
            if isinstance(op, Mapping):
                for key in ("path", "from"):
                    if key in op:
                        _check_pointer(str(op[key]), str(op.get("op")), state)
    elif _mentions_devices(app.doc.data, gpu_labels=True):
        raise _Block("the patch sets NVIDIA node labels or NVIDIA_VISIBLE_DEVICES, which "
                     "convert moves into the claim")
    else:
        _check_directives(app.doc.data)


def _check_other_content(app: Application, found: list[Touch], state: ObjectState) -> None:
    """What a GPU patch sets besides the counts must still apply to the converted target."""
    if app.patch.json6902:
        moved = {t.patch_path[0] for t in found}
        for index, op in enumerate(app.doc.data if isinstance(app.doc.data, list) else ()):
            if index not in moved and isinstance(op, Mapping) and state.converted_now:
                for key in ("path", "from"):
                    if key in op:
                        _check_pointer(str(op[key]), str(op.get("op")), state)
        return
    data = app.doc.data
    _check_directives(data)
    rest = apply_to_data(data, [Delete(t.patch_path) for t in found])
    if _mentions_devices(rest, gpu_labels=True):
        raise _Block("the patch also sets NVIDIA node labels or NVIDIA_VISIBLE_DEVICES, which "
                     "convert moves into the claim")


def _check_directives(data: Any) -> None:
    """`$patch: replace|delete` and friends can drop what convert added (claims)."""
    text = repr(data)
    if "'$patch'" in text or "'$retainKeys'" in text:
        raise _Block("strategic-merge directives ($patch, $retainKeys) on a workload convert "
                     "changes: check the patch by hand")


def _check_pointer(text: str, op: str, state: ObjectState) -> None:
    path = as_path(pointer_tokens(text))
    before, after = state.before, state.after
    for depth in range(1, len(path) + 1):
        b, a = dig(before, *path[: depth - 1]), dig(after, *path[: depth - 1])
        if isinstance(b, list) and isinstance(path[depth - 1], int) and \
                (not isinstance(a, list) or len(a) != len(b)):
            raise _Block(f"JSON6902 path {text} indexes into a list that convert changes")
    must_exist = op in ("replace", "remove", "test", "move", "copy")
    if must_exist and (dig(before, *path) is None) != (dig(after, *path) is None):
        raise _Block(f"JSON6902 path {text} names something convert removes")
    if op != "test" and any(changed[: len(path)] == path for changed in _changes(before, after)):
        raise _Block(f"JSON6902 {op} of {text} would overwrite what convert changes there")


def _changes(before: Any, after: Any, path: tuple = ()) -> list[tuple]:
    """The deepest paths where `after` differs from `before` (a list that changes length
    counts as changed as a whole)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[tuple] = []
        for key in dict.fromkeys([*before, *after]):
            if key not in before or key not in after:
                out.append(path + (key,))
            elif before[key] != after[key]:
                out += _changes(before[key], after[key], path + (key,))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for i, (b, a) in enumerate(zip(before, after)) if b != a
                for p in _changes(b, a, path + (i,))]
    return [path] if before != after else []


def _mentions_devices(data: Any, gpu_labels: bool = False) -> bool:
    """Device-plugin keys anywhere; with `gpu_labels`, also GFD node labels and
    NVIDIA_VISIBLE_DEVICES (tolerations do not count: convert keeps them)."""
    if any(True for _ in device_keys(data)):
        return True
    if isinstance(data, list):  # JSON6902 operations
        return bool(device_ops(data))
    if not gpu_labels:
        return False
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key == "tolerations":
                    continue
                if isinstance(key, str) and "nvidia.com/" in key:  # labels, quota keys
                    return True
                if item == "NVIDIA_VISIBLE_DEVICES" or (
                        isinstance(item, str) and item.startswith("nvidia.com/")):
                    return True
                stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _veto(plan: OverlayPlan, view: ConvertedTree, target: Resource, reason: str) -> None:
    state = view.state(target.origin)
    if state is not None and state.converted_now and target.origin not in plan.vetoes:
        plan.vetoes[target.origin] = reason


# --- writing ---------------------------------------------------------------------------------

def _write(plan: OverlayPlan, view: ConvertedTree, work: dict[tuple, _PatchWork],
           counts: dict[str, dict[tuple, list[tuple[_Binding, int]]]]) -> None:
    k_edits: dict[str, KustomizationEdit] = {}
    file_docs: dict[str, tuple[bool, dict[int, list[tuple]]]] = {}
    for pw in work.values():
        if not pw.deletes:
            continue
        patch = pw.patch
        where = patch.kustomization if patch.inline else patch.file
        if not view.writable(where) or not view.writable(patch.kustomization):
            pw.results[:] = [_result(patch, None, "blocked", f"{where} is outside the paths "
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
        raw = _current(plan, view, file)
        new = _edit_text(raw.decode("utf-8-sig"), docs, json6902)
        prefix = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
        _add_edit(plan, FileEdit(file, raw, (prefix + new).encode("utf-8")))
    for kfile, targets in counts.items():
        for (kind, name, namespace), bindings in targets.items():
            selector = {"group": _DRA, "kind": kind, "name": name}
            if namespace:
                selector["namespace"] = namespace
            ops_text = "\n".join(_count_op(b, c) for b, c in bindings)
            _merge(k_edits, kfile, KustomizationEdit(add_patches=(
                {"target": selector, "patch": ops_text},)))
    for kfile, edit in k_edits.items():
        raw = _current(plan, view, kfile)
        _add_edit(plan, FileEdit(kfile, raw, edit_kustomization(raw, edit)))


def _count_op(binding: _Binding, count: int) -> str:
    head = ("spec", "spec", "devices") if binding.kind == "ResourceClaimTemplate" \
        else ("spec", "devices")
    path = head + ("requests", binding.index) + (() if binding.flat else ("exactly",)) + ("count",)
    return f"- op: add\n  path: {pointer(path)}\n  value: {count}"


def _merge(edits: dict[str, KustomizationEdit], kfile: str, more: KustomizationEdit) -> None:
    old = edits.get(kfile, KustomizationEdit())
    edits[kfile] = KustomizationEdit(old.add_patches + more.add_patches,
                                     old.inline + more.inline, old.remove + more.remove,
                                     old.add_configurations + more.add_configurations)


def _edit_text(text: str, deletes: dict[int, list[tuple]], json6902: bool) -> str:
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


def _edit_chunk(text: str, paths: list[tuple], json6902: bool) -> str:
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


# --- name references -------------------------------------------------------------------------

def _name_references(plan: OverlayPlan, build: Build, view: ConvertedTree,
                     table: WorkloadTable) -> None:
    """`configurations:` for kustomizations whose namePrefix/nameSuffix would leave a
    workload's claim reference pointing at the old name."""
    needed: dict[str, dict[tuple, None]] = {}
    configs = ReferenceConfigs(build.tree)
    for directory, k in build.tree.kustomizations.items():
        if not (k.name_prefix or k.name_suffix) or k.is_component:
            continue
        for r in build.outputs.get(directory, []):
            state = view.state(r.origin)
            if state is None or not (state.converted_now or _uses_claims(state.before)):
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
    for kfile, specs in needed.items():
        _write_references(plan, view, by_file[kfile], list(specs))


def _write_references(plan: OverlayPlan, view: ConvertedTree, k: Kustomization,
                      specs: list[tuple]) -> None:
    kfile = k.file
    directory = os.path.dirname(kfile)
    target = os.path.join(directory, NAME_REFERENCES)
    by_kind: dict[str, list[tuple]] = {}
    for kind, group, workload_kind, path in specs:
        by_kind.setdefault(kind, []).append((group, workload_kind, path))
    lines = ["# kustomize does not rename DRA claim references by itself (kustomize v5.5.0);",
             "# written by gpudra convert so that namePrefix/nameSuffix keep them pointing at",
             "# the renamed ResourceClaimTemplates and ResourceClaims.", "nameReference:"]
    for kind in sorted(by_kind):
        lines += [f"- kind: {kind}", f"  group: {_DRA}", "  fieldSpecs:"]
        for group, workload_kind, path in sorted(by_kind[kind]):
            lines.append(f"  - path: {path}")
            if group:
                lines.append(f"    group: {group}")
            lines.append(f"    kind: {workload_kind}")
    new = ("\n".join(lines) + "\n").encode()
    old = _current(plan, view, target) if os.path.exists(target) else b""
    if old != new:
        _add_edit(plan, FileEdit(target, old, new))
    # Always true today: a kustomization that lists the file already is on the way up that
    # has_references checked, so it is never `home`. Kept as a guard, on the tree's parse (no
    # edit in this run touches configurations).
    if NAME_REFERENCES not in (os.path.basename(c) for c in k.configurations):
        raw = _current(plan, view, kfile)
        _add_edit(plan, FileEdit(kfile, raw, edit_kustomization(
            raw, KustomizationEdit(add_configurations=(NAME_REFERENCES,)))))


# --- small helpers ---------------------------------------------------------------------------

def _current(plan: OverlayPlan, view: ConvertedTree, path: str) -> bytes:
    """A file's content with this plan's earlier edits of it."""
    key = os.path.normpath(path)
    for edit in reversed(plan.edits):
        if os.path.normpath(edit.path) == key:
            return edit.new
    return view.read(path)


def _add_edit(plan: OverlayPlan, edit: FileEdit) -> None:
    key = os.path.normpath(edit.path)
    for i, earlier in enumerate(plan.edits):
        if os.path.normpath(earlier.path) == key:
            plan.edits[i] = FileEdit(earlier.path, earlier.old, edit.new)
            return
    plan.edits.append(edit)


def _result(patch: Patch, target: Resource | None, strategy: str, reason: str | None,
            notes: tuple[str, ...] = ()) -> WorkloadResult:
    kind = target.kind if target else str((patch.target or {}).get("kind") or "")
    name = target.current_name if target else (patch.target or {}).get("name")
    ns = target.current_namespace if target else None
    return WorkloadResult(patch.kustomization if patch.inline else patch.file, kind, name, ns,
                          strategy, reason, notes)


def _uses_claims(data: Mapping[str, Any]) -> bool:
    text = repr(data)
    return "resourceClaimTemplateName" in text or "resourceClaimName" in text


def _claims(container: Mapping[str, Any]) -> list:
    value = dig(container, "resources", "claims")
    return value if isinstance(value, list) else []


def _device_plugin(container: Mapping[str, Any]) -> list[str]:
    out = []
    for section in ("limits", "requests"):
        values = dig(container, "resources", section)
        for key in values if isinstance(values, Mapping) else ():
            device = classify(key)
            if device is not None and device.is_nvidia_device_plugin:
                out.append(str(key))
    return list(dict.fromkeys(out))


def _all_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = []
    for key in ("initContainers", "containers", "sidecars"):
        value = pod.get(key)
        out += [c for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []
    return out

