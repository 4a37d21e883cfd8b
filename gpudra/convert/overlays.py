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

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpudra.convert.overlay_records import (
    DRA_GROUP,
    Binding,
    Blocked,
    ClaimTarget,
    ConvertedTree,
    ObjectState,
    OverlayPlan,
    PatchKey,
    PatchWork,
    patch_result,
    uses_claims,
)
from gpudra.convert.overlay_writes import name_references, write_plan
from gpudra.convert.records import ContainerClaim
from gpudra.k8s.devices import DeviceKind, classify
from gpudra.dra.emit import GPU_CLASS, MIG_CLASS
from gpudra.k8s.gpu_use import device_keys
from gpudra.kustomize.build import Application, Build, Resource
from gpudra.kustomize.patches import as_path, device_ops, pointer_tokens
from gpudra.kustomize.touches import Touch, touches
from gpudra.k8s.objects import PathT, dig, plural
from gpudra.k8s.workloads import ContainerRef, WorkloadTable
from gpudra.yamledit.ops import Delete, apply_to_data
from gpudra.yamledit.textedit import LayoutError

# Kinds whose strategic-merge schema kustomize knows (containers merge by name); custom
# resources are merged as JSON merge patches, where a patch's list replaces the base's.
_MERGE_KEYED = frozenset({("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController"),
                          ("apps", "Deployment"), ("apps", "ReplicaSet"),
                          ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job"),
                          ("batch", "CronJob")})


def plan_overlays(build: Build, view: ConvertedTree, table: WorkloadTable) -> OverlayPlan:
    """What the overlays of `build` (a build that has run) need for this planning pass."""
    plan = OverlayPlan()
    work: dict[PatchKey, PatchWork] = {}
    counts: dict[str, dict[ClaimTarget, list[tuple[Binding, int]]]] = {}  # kustomization ->
    names_seen: dict[tuple[str, str, int, int], set[str]] = {}  # a patch document's claim names
    for app in build.applications:
        key = (app.patch.kustomization, app.patch.field, app.patch.index)
        pw = work.setdefault(key, PatchWork(app.patch))
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
        write_plan(plan, view, work, counts)
        name_references(plan, build, view, table)
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
                 plan: OverlayPlan, pw: PatchWork,
                 counts: dict[str, dict[ClaimTarget, list[tuple[Binding, int]]]],
                 names_seen: dict[tuple[str, str, int, int], set[str]]) -> None:
    patch = app.patch
    if not app.targets:
        if _mentions_devices(app.doc.data):
            why = app.unresolved or "no target"
            for r in app.scope:
                _veto(plan, view, r, f"a GPU patch in {patch.where} has a target gpudra "
                      f"cannot resolve ({why})")
            pw.results.append(patch_result(patch, None, "blocked",
                                      f"its target cannot be resolved ({why})"))
        return
    for target in app.targets:
        state = view.state(target.origin)
        before = state.before if state else None
        found = touches(patch, app.doc, target, before, table)
        try:
            work = _plan_target(app, target, state, found, view)
        except Blocked as exc:
            if state is not None and state.converted_now:
                _veto(plan, view, target, f"overlay patch {patch.where}: {exc}")
            blocked = patch_result(patch, target, "blocked", str(exc))
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
        result = patch_result(patch, target, "rewrite", None, notes=tuple(
            f"overlay: {b.kind} {name} request {b.index} gets count {c} (moved out of the patch)"
            for b, c in bindings))
        if result not in pw.results:
            pw.results.append(result)


def _plan_target(app: Application, target: Resource, state: ObjectState | None,
                 found: list[Touch], view: ConvertedTree
                 ) -> tuple[list[PathT], list[tuple[Binding, int]]] | None:
    """The patch's deletions and the counts its target's claim gets; None: nothing to do."""
    patch = app.patch
    converted = state is not None and (state.converted_now or uses_claims(state.before))
    if not found:
        if state is not None and state.converted_now:
            _check_neutral(app, state)
        return None
    if state is None:
        raise Blocked(f"its target {target.kind}/{target.current_name} is not in the tree")
    if not patch.json6902 and (target.group, target.kind) not in _MERGE_KEYED:
        raise Blocked(f"kustomize merges a {target.kind} with JSON merge-patch semantics "
                     "(a list in the patch replaces the base's): move the count by hand")
    movable = [_check_touch(t, target) for t in found]
    if not converted:
        if state.reason:
            raise Blocked(f"its target {target.kind}/{target.current_name} is not converted "
                         f"({state.reason})")
        if not view.writable(target.file):
            raise Blocked(f"its target {target.kind}/{target.name} comes from {target.file}, "
                         "outside the paths being converted: convert the base and its "
                         "overlays in one run")
        return None  # the base still uses the device plugin: the patch agrees with it
    per_container: dict[PathT, dict[str, _Movable]] = {}
    for m in movable:
        per_container.setdefault(m.container.path, {})[m.touch.section or "limits"] = m
    bindings: list[tuple[Binding, int]] = []
    for path, sections in per_container.items():
        if "limits" not in sections:
            raise Blocked(f"{next(iter(sections.values())).touch.resource.name} in requests "
                         "without a limit")
        if "requests" in sections and sections["requests"].count != sections["limits"].count:
            raise Blocked("requests and limits differ")
        m = sections["limits"]
        bindings.append((_binding(state.after, m, path, view, state.claims), m.count))
    _check_other_content(app, found, state)
    deletes: list[PathT]
    if patch.json6902:
        deletes = sorted({(t.patch_path[0],) for t in found})
    else:
        deletes = [t.patch_path for t in found]
    return deletes, bindings


@dataclass(frozen=True, slots=True)
class _Movable:
    """A touch whose count convert can move onto a claim: on a container of the base."""

    touch: Touch
    pod: PathT
    container: ContainerRef
    count: int


def _check_touch(t: Touch, target: Resource) -> _Movable:
    """Blocked unless the patch only sets a device count convert can move onto a claim."""
    if t.shape is not None:
        raise Blocked(f"{t.resource.name}: {t.shape}")
    if t.resource.kind is DeviceKind.OTHER_NVIDIA:
        raise Blocked(f"{t.resource.name} has no DRA equivalent")
    if t.op not in (None, "add", "replace"):
        raise Blocked(f"a JSON6902 {t.op!r} operation on {t.resource.name}")
    if t.container is None or t.pod is None:  # a touch has both or neither
        raise Blocked(f"it adds {t.resource.name} to container "
                     f"{t.container_name or '?'}, which {target.kind}/{target.name} does "
                     "not have in the base")
    base = _device_plugin(t.container.data)
    if not base and not _claims(t.container.data):
        raise Blocked(f"it adds {t.resource.name} to container {t.container_name!r}, which "
                     "has no GPU in the base: give it a claim by hand")
    if base and t.resource.name not in base:
        raise Blocked(f"it changes container {t.container_name!r}'s resource from "
                     f"{', '.join(base)} to {t.resource.name}")
    if t.resource.kind is DeviceKind.SHARED:
        raise Blocked(f"{t.resource.name}: time-slicing replicas in an overlay")
    count = t.count
    if count is None or count <= 0:
        raise Blocked(f"{t.resource.name}: {t.raw!r} is not a device count gpudra can move "
                     "(a placeholder, zero or invalid)")
    return _Movable(t, t.pod, t.container, count)


def _binding(after: Mapping[str, Any], movable: _Movable, path: PathT, view: ConvertedTree,
             state_claims: tuple[ContainerClaim, ...] = ()) -> Binding:
    t = movable.touch
    container = dig(after, *path) or {}
    claims = dig(container, "resources", "claims") or []
    label = f"container {t.container_name!r}"
    if _device_plugin(container):
        raise Blocked(f"{label} keeps a device-plugin request after conversion")
    if len(claims) != 1 or not isinstance(claims[0], Mapping):
        raise Blocked(f"{label} references {plural(len(claims), 'claim')} (init containers "
                      "take devices from it): change the count by hand")
    pod_claim, request = claims[0].get("name"), claims[0].get("request")
    pod = dig(after, *movable.pod) or {}
    sharing = [c for c in _all_containers(pod) if c is not container and any(
        isinstance(x, Mapping) and x.get("name") == pod_claim
        for x in dig(c, "resources", "claims") or [])]
    if sharing:
        raise Blocked(f"{label}'s claim is also used by container "
                     f"{sharing[0].get('name')!r}: change the count by hand")
    entry = next((e for e in pod.get("resourceClaims") or []
                  if isinstance(e, Mapping) and e.get("name") == pod_claim), None)
    if entry is None:
        raise Blocked(f"{label}: pod claim {pod_claim!r} is not in resourceClaims")
    kind = "ResourceClaim" if entry.get("resourceClaimName") else "ResourceClaimTemplate"
    name = entry.get("resourceClaimName") or entry.get("resourceClaimTemplateName")
    meta = after.get("metadata") or {}
    obj = view.claim_object(meta.get("namespace"), str(name), kind)
    if obj is None:
        raise Blocked(f"{kind} {name!r} is not in the tree")
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
        raise Blocked(f"{label}: request {request!r} is not in {kind} {name!r}")
    body = requests[index]
    flat = "exactly" not in body
    exact = body if flat else body["exactly"]
    device_class = exact.get("deviceClassName")
    resource = t.resource
    if resource.kind is DeviceKind.MIG:
        selectors = " ".join(str(dig(s, "cel", "expression")) for s in exact.get("selectors") or [])
        if device_class != MIG_CLASS or f'profile == "{resource.mig_profile}"' not in selectors:
            raise Blocked(f"{label}: the claim's request is not MIG profile {resource.mig_profile}")
    elif device_class not in (GPU_CLASS, MIG_CLASS):
        raise Blocked(f"{label}: the claim's request has class {device_class!r}")
    # The claim is followed in the converted data (a base converted in an earlier run has
    # nothing else); for one converted now, the planner's record must say the same.
    planned = [c for c in state_claims if c.pod_spec == t.pod and c.container == t.container_name]
    if planned and [(c.kind, c.object, c.index) for c in planned] != [(kind, str(name), index)]:
        raise Blocked(f"{label}: the plan and the converted workload disagree about its claim")
    return Binding(kind, str(name), index, flat)


def _claim_name(app: Application, target: Resource, binding: Binding) -> str:
    """What the claim object is called where the patch applies: found among the resources
    there (an existing object), or renamed as its workload was (one this run writes)."""
    namespace = target.namespace or "default"
    for r in app.scope:
        if r.kind == binding.kind and r.group == DRA_GROUP and r.name == binding.name and \
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
        raise Blocked("the patch sets NVIDIA node labels or NVIDIA_VISIBLE_DEVICES, which "
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
        raise Blocked("the patch also sets NVIDIA node labels or NVIDIA_VISIBLE_DEVICES, which "
                     "convert moves into the claim")


def _check_directives(data: Any) -> None:
    """`$patch: replace|delete` and friends can drop what convert added (claims)."""
    text = repr(data)
    if "'$patch'" in text or "'$retainKeys'" in text:
        raise Blocked("strategic-merge directives ($patch, $retainKeys) on a workload convert "
                     "changes: check the patch by hand")


def _check_pointer(text: str, op: str, state: ObjectState) -> None:
    path = as_path(pointer_tokens(text))
    before, after = state.before, state.after
    for depth in range(1, len(path) + 1):
        b, a = dig(before, *path[: depth - 1]), dig(after, *path[: depth - 1])
        if isinstance(b, list) and isinstance(path[depth - 1], int) and \
                (not isinstance(a, list) or len(a) != len(b)):
            raise Blocked(f"JSON6902 path {text} indexes into a list that convert changes")
    must_exist = op in ("replace", "remove", "test", "move", "copy")
    if must_exist and (dig(before, *path) is None) != (dig(after, *path) is None):
        raise Blocked(f"JSON6902 path {text} names something convert removes")
    if op != "test" and any(changed[: len(path)] == path for changed in _changes(before, after)):
        raise Blocked(f"JSON6902 {op} of {text} would overwrite what convert changes there")


def _changes(before: Any, after: Any, path: PathT = ()) -> list[PathT]:
    """The deepest paths where `after` differs from `before` (a list that changes length
    counts as changed as a whole)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[PathT] = []
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


# --- small helpers ---------------------------------------------------------------------------


def _claims(container: Mapping[str, Any]) -> list[Any]:
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

