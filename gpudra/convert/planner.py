"""Decide what convert changes in one object, as data: operations plus new DRA objects.

Nothing here touches text. A workload is converted whole or not at all: anything gpudra would
have to guess (templated or invalid counts, requests != limits, aliases on the edit path,
resources it cannot place in a pod spec) blocks it, with the reason in the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.convert.nodes import NodeDocument, PathT
from gpudra.convert.ops import Append, Delete, Extend, InsertBefore, Op
from gpudra.devices import DeviceKind, classify
from gpudra.dra import emit
from gpudra.dra.gfd import is_gfd_label
from gpudra.dra.selectors import label_selector
from gpudra.dra.versions import TargetVersion
from gpudra.objects import dig
from gpudra.quantity import parse_device_count
from gpudra.workloads import ContainerRef, PodSpecRef, WorkloadTable, resource_holders

GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
CLAIM_MODE_ANNOTATION = "gpudra.io/claim-mode"
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
_HIDE_ENV = "NVIDIA_VISIBLE_DEVICES"
MEMORY_LABEL = "nvidia.com/gpu.memory"
_SUFFIXES = {"headGroupSpec": "head", "leaderTemplate": "leader", "workerTemplate": "worker",
             "submitterPodTemplate": "submitter", "predictor": "predictor",
             "transformer": "transformer", "explainer": "explainer"}
_STRUCTURAL = {"spec", "template", "jobTemplate", "leaderWorkerTemplate", "rayClusterSpec",
               "rayClusterConfig", "workflowSpec"}


@dataclass(frozen=True)
class ConvertOptions:
    target: TargetVersion
    claim_mode: str = "template"      # template | shared
    strategy: str = "rewrite"         # rewrite | bridge
    keep_node_selectors: bool = False
    add_toleration: bool = False
    keep_device_plugin_quota: bool = False
    selectors: tuple[str, ...] = ()   # extra CEL for every converted request (already compiled)


@dataclass(frozen=True)
class WorkloadResult:
    file: str
    kind: str
    name: str | None
    namespace: str | None
    strategy: str                     # rewrite | bridge | blocked | quota | manual
    reason: str | None = None
    notes: tuple[str, ...] = ()
    created: tuple[str, ...] = ()


@dataclass
class ObjectPlan:
    ops: list[Op] = field(default_factory=list)
    new_objects: list[tuple[dict, str | None]] = field(default_factory=list)
    result: WorkloadResult | None = None


class Blocked(Exception):
    """This workload must be migrated by hand; the message says why."""


@dataclass
class _Device:
    container: ContainerRef
    resource: str
    kind: DeviceKind
    count: int
    mig_profile: str | None
    paths: list[PathT]  # the limits/requests keys to delete (relative to the object)


class Planner:
    """Plans objects one at a time; keeps the names it handed out (unique per namespace)."""

    def __init__(self, options: ConvertOptions, table: WorkloadTable) -> None:
        self.options = options
        self.table = table
        self.names = emit.NameRegistry()

    def reserve(self, namespace: str | None, name: str) -> None:
        """Names of DRA objects that already exist in the tree are not handed out again."""
        self.names.reserve(name, namespace)

    def plan(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument) -> ObjectPlan:
        """Workloads and guidance. Quotas are planned afterwards, by `plan_quota`."""
        kind = str(data.get("kind", ""))
        group = str(data.get("apiVersion", "")).rpartition("/")[0]
        if quota_path(data) is not None:
            return ObjectPlan()
        if kind in _GUIDANCE and _mentions_nvidia(data):
            return ObjectPlan(result=_result(file, data, "manual", reason=_GUIDANCE[kind]))
        return self._workload(file, data, base, doc, group, kind)

    # --- workloads -------------------------------------------------------------------------

    def _workload(self, file: str, data: Mapping[str, Any], base: PathT, doc: NodeDocument,
                  group: str, kind: str) -> ObjectPlan:
        specs = self.table.pod_specs(group, kind, data)
        outside = _outside_requests(data, specs)
        try:
            found = [(spec, _devices(spec)) for spec in specs]  # raises Blocked
            found = [(spec, devs) for spec, devs in found if devs]
            if not found and not outside:
                return ObjectPlan()
            if outside:
                raise Blocked(f"device request at {outside} is outside any known pod spec; add "
                              "a `workloads` entry in .gpudra.yaml")
            for spec, devices in found:
                self._check_editable(doc, base, spec, devices)
            nvidia = [d for _, devs in found for d in devs]
            if self.options.strategy == "bridge" and all(d.kind is DeviceKind.GPU for d in nvidia):
                return ObjectPlan(result=_result(file, data, "bridge", notes=self._bridge_notes()))
            plan = ObjectPlan()
            notes: list[str] = []
            created: list[str] = []
            shared = self._shared(data, nvidia)
            for spec, devices in found:
                name = self._pod_spec(data, base, spec, devices, shared, plan, notes, len(found))
                created.append(name)
            if group == "argoproj.io":
                notes.append("Argo templates carry resourceClaims only in Argo Workflows versions "
                             "with first-class DRA claims (argo-workflows#16587); older ones drop "
                             "the field: put the entry in podSpecPatch instead")
        except Blocked as exc:
            return ObjectPlan(result=_result(file, data, "blocked", reason=str(exc)))
        if not self.options.target.served_by_default:
            notes.append(f"Kubernetes {self.options.target} serves "
                         f"{self.options.target.resource_api_version} only with the "
                         "DynamicResourceAllocation feature gate and --runtime-config enabled")
        plan.result = _result(file, data, "rewrite", notes=tuple(dict.fromkeys(notes)),
                              created=tuple(created))
        return plan

    def _bridge_notes(self) -> tuple[str, ...]:
        notes = [("left unchanged: the DeviceClass with extendedResourceName nvidia.com/gpu "
                  "serves it from DRA (KEP-5004)")]
        support = self.options.target.supports("extendedResourceName")
        if not support.default_on:  # 1.34/1.35: the field exists but its gate is off
            notes.append(f"Kubernetes {self.options.target}: {support.note}")
        return tuple(notes)

    def _shared(self, data: Mapping[str, Any], devices: list[_Device]) -> bool:
        annotations = (data.get("metadata") or {}).get("annotations") or {}
        mode = annotations.get(CLAIM_MODE_ANNOTATION) if isinstance(annotations, Mapping) else None
        if mode not in (None, "shared", "template"):
            raise Blocked(f"annotation {CLAIM_MODE_ANNOTATION}={mode!r}: expected shared or template")
        if any(d.kind is DeviceKind.SHARED for d in devices):
            return True
        return (mode or self.options.claim_mode) == "shared"

    def _check_editable(self, doc: NodeDocument, base: PathT, spec: PodSpecRef,
                        devices: list[_Device]) -> None:
        paths = [spec.path] + [p[:-1] for d in devices for p in d.paths]
        for path in paths:
            if not doc.editable(base + path):
                raise Blocked("YAML anchors, aliases or merge keys on the edit path; edit by hand")

    def _pod_spec(self, data: Mapping[str, Any], base: PathT, spec: PodSpecRef,
                  devices: list[_Device], shared: bool, plan: ObjectPlan, notes: list[str],
                  specs_in_workload: int) -> str:
        pod = base + spec.path
        namespace = _namespace(data)
        suffix = _pod_suffix(data, spec.path) if specs_in_workload > 1 else ""
        object_name = self.names.unique(
            "-".join(x for x in (_workload_name(data), suffix, "gpu") if x), namespace)
        placement = self._placement(spec, pod, plan.ops, notes)
        claim_name = _free_name("gpu", _existing_claim_names(spec.data))
        requests, per_container = [], {}
        used: set[str] = set()
        granted: list[tuple[_Device, str]] = []
        # App containers first: a plain init container can then reuse one of their requests.
        for device in sorted(devices, key=lambda d: _runs_before_app(d.container)):
            for path in device.paths:
                plan.ops.append(Delete(base + path))
            request = self._reuse(device, granted, notes)
            if request is None:
                request = _free_name(emit.dns_label(_container_label(device.container)), used)
                used.add(request)
                requests.append(self._request(device, request, placement, notes))
                granted.append((device, request))
            per_container.setdefault(device.container.path, (device.container, []))[1].append(request)
            if device.kind is DeviceKind.SHARED:
                if device.count > 1:
                    notes.append(f"{device.resource}: {device.count} replicas became one shared "
                                 "device (DRA has no replica count)")
                notes.append(f"{device.resource} was a time-slicing/MPS replica: the pods now share "
                             "one ResourceClaim (one GPU, same node); for time-slicing or MPS add a "
                             "GpuConfig, which needs the driver gates TimeSlicingSettings/MPSSupport")
        self._containers(base, per_container, claim_name, plan.ops, notes)
        entry = (emit.pod_claim_entry(claim_name, claim=object_name) if shared
                 else emit.pod_claim_entry(claim_name, template=object_name))
        if self.options.add_toleration and not _has_gpu_toleration(spec.data):
            _add_to_pod(spec, pod, "tolerations", dict(TOLERATION), plan.ops)
        _add_to_pod(spec, pod, "resourceClaims", entry, plan.ops)
        build = emit.claim if shared else emit.claim_template
        plan.new_objects.append((build(object_name, namespace, requests, self.options.target),
                                 None))
        if shared:
            notes.append("all pods of this workload share one ResourceClaim: they land on one "
                         "node and see the same devices")
        _prune(data, base, plan.ops)
        return object_name

    def _request(self, device: _Device, name: str, placement: list[tuple[str, str]],
                 notes: list[str]) -> dict:
        selectors = [expression for _, expression in placement]
        if device.mig_profile is not None:  # MIG, shared or not
            kept = [e for label, e in placement if label != MEMORY_LABEL]
            if len(kept) < len(selectors):
                notes.append("the GFD memory label describes the whole GPU, which a MIG device "
                             "does not publish: dropped for MIG requests")
            selectors = [f'device.attributes["gpu.nvidia.com"].profile == "{device.mig_profile}"',
                         *kept]
        selectors += list(self.options.selectors)
        device_class = MIG_CLASS if device.mig_profile is not None else GPU_CLASS
        count = 1 if device.kind is DeviceKind.SHARED else device.count
        return emit.device_request(name, device_class, count, selectors, self.options.target)

    @staticmethod
    def _reuse(device: _Device, granted: list[tuple[_Device, str]], notes: list[str]) -> str | None:
        """The request of an app container that a plain init container can use as well.

        Init containers finish before app containers start, and the device plugin handed them
        the same devices; separate requests would make the pod need more devices than before.
        """
        if not _runs_before_app(device.container):
            return None
        label = _container_label(device.container)
        fits = [(d.count, request) for d, request in granted
                if not d.container.init and d.kind is device.kind
                and d.mig_profile == device.mig_profile and d.count >= device.count]
        if not fits:
            notes.append(f"init container {label!r} gets devices of its own: no app container "
                         "asks for as many, so the pod now needs them in addition")
            return None
        count, request = min(fits)
        extra = f" (it sees {count} devices instead of {device.count})" if count > device.count else ""
        notes.append(f"init container {label!r} uses request {request!r}: init containers run "
                     f"before app containers, so they share devices as with the device plugin{extra}")
        return request

    def _containers(self, base: PathT, per_container: dict, claim_name: str, ops: list[Op],
                    notes: list[str]) -> None:
        for path, (container, requests) in per_container.items():
            resources = base + path + ("resources",)
            claims = [emit.container_claim(claim_name, r) for r in requests]
            existing = container.data["resources"].get("claims")
            if isinstance(existing, list) and existing:
                ops.append(Extend(resources + ("claims",), tuple(claims)))
            else:
                ops.append(Append(resources, "claims", claims))
            env = container.data.get("env")
            for i, var in enumerate(env if isinstance(env, list) else ()):
                if isinstance(var, Mapping) and var.get("name") == _HIDE_ENV:
                    ops.append(Delete(base + path + ("env", i)))
                    notes.append(f"removed {_HIDE_ENV} from {container.name!r}: CDI decides which "
                                 "devices the container sees")
                if isinstance(var, Mapping) and var.get("name") == "NVIDIA_DRIVER_CAPABILITIES":
                    notes.append(f"kept NVIDIA_DRIVER_CAPABILITIES on {container.name!r}: check "
                                 "the driver libraries it needs under CDI")

    def _placement(self, spec: PodSpecRef, pod: PathT, ops: list[Op],
                   notes: list[str]) -> list[tuple[str, str]]:
        """GFD node labels become CEL selectors (label, expression); the labels leave the pod
        unless kept."""
        selectors: list[tuple[str, str]] = []
        node_selector = spec.data.get("nodeSelector")
        for key, value in (node_selector.items() if isinstance(node_selector, Mapping) else ()):
            translation = label_selector(str(key), "=", [str(value)])
            if translation is None:
                continue
            if translation.expression:
                selectors.append((str(key), translation.expression))
            if translation.note:
                notes.append(translation.note)
            if not self.options.keep_node_selectors:
                ops.append(Delete(pod + ("nodeSelector", key)))
        selectors += self._affinity(spec, pod, ops, notes)
        return selectors

    def _affinity(self, spec: PodSpecRef, pod: PathT, ops: list[Op],
                  notes: list[str]) -> list[tuple[str, str]]:
        terms = dig(spec.data, "affinity", "nodeAffinity",
                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            return []
        translated: list[tuple[int, int, str, Any]] = []
        for t, term in enumerate(terms):
            for e, expr in enumerate(dig(term, "matchExpressions") or []):
                if isinstance(expr, Mapping):
                    values = [str(v) for v in expr.get("values") or []]
                    key = str(expr.get("key"))
                    tr = label_selector(key, str(expr.get("operator")), values)
                    if tr is not None:
                        translated.append((t, e, key, tr))
                    elif is_gfd_label(key):
                        notes.append(f"node affinity {key} {expr.get('operator')} has no CEL "
                                     "equivalent on a device: kept as node affinity")
        if not translated:
            return []
        if len(terms) > 1:
            notes.append("node affinity has several nodeSelectorTerms (ORed): GPU terms kept as "
                         "node affinity, not moved into the claim")
            return []
        base = pod + ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                      "nodeSelectorTerms")
        selectors = []
        for t, e, key, tr in translated:
            if tr.expression:
                selectors.append((key, tr.expression))
            if tr.note:
                notes.append(tr.note)
            if not self.options.keep_node_selectors:
                ops.append(Delete(base + (t, "matchExpressions", e)))
        return selectors

    # --- quotas ----------------------------------------------------------------------------

    def plan_quota(self, file: str, data: Mapping[str, Any], base: PathT,
                   staying: frozenset[str | None]) -> ObjectPlan:
        """Plan a quota once every workload is planned. `staying` holds the namespaces of
        workloads that keep device-plugin requests (blocked or bridged); None: unknown."""
        hard_path = quota_path(data)
        if hard_path is None:
            return ObjectPlan()
        namespace = _namespace(data)
        keep = self.options.keep_device_plugin_quota or namespace in staying or None in staying
        return self._quota(file, data, base, hard_path, keep, self.options.keep_device_plugin_quota)

    def _quota(self, file: str, data: Mapping[str, Any], base: PathT, hard_path: PathT,
               keep: bool, asked: bool) -> ObjectPlan:
        hard = dig(data, *hard_path)
        if not isinstance(hard, Mapping):
            return ObjectPlan()
        # Per class: the sum of the requests. keys, and of the limits./bare keys.
        enforced: dict[str, int] = {}
        stated: dict[str, int] = {}
        old: list[str] = []
        for key, value in hard.items():
            scope, _, name = key.partition(".") if str(key).startswith(("requests.", "limits.")) \
                else ("", "", key)
            device = classify(name)
            if device is None or not device.is_nvidia_device_plugin:
                continue
            count = parse_device_count(value)
            if count.value is None:
                return ObjectPlan(result=_result(file, data, "blocked",
                                                 reason=f"quota {key}: {value!r} is not a whole number"))
            old.append(key)
            cls = MIG_CLASS if device.mig_profile is not None else GPU_CLASS
            sums = enforced if scope == "requests" else stated
            sums[cls] = sums.get(cls, 0) + count.value
        if not old:
            return ObjectPlan()
        profiles = {classify(_quota_resource(k)).mig_profile for k in old
                    if classify(_quota_resource(k)).mig_profile is not None}
        # Kubernetes only ever enforced requests.<extended resource>; a limits./bare key is the
        # user's stated cap all the same, so it becomes the DRA cap where no requests. key is.
        unenforced = [cls for cls in stated if cls not in enforced]
        totals = {**enforced, **{cls: stated[cls] for cls in unenforced}}
        plan = ObjectPlan()
        path = base + hard_path
        additions: dict[str, str] = {}
        for cls, count in totals.items():
            for key, value in emit.quota_keys(cls, count).items():
                if key.startswith("count/"):
                    additions[key] = str(int(additions.get(key, "0")) + count)
                else:
                    additions[key] = value
        for key, value in additions.items():
            if key not in hard:
                plan.ops.append(Append(path, key, value))
        if not keep:
            plan.ops += [Delete(path + (key,)) for key in old]
        if not plan.ops:
            return ObjectPlan()
        notes: list[str] = []
        if asked:
            notes.append("kept the device-plugin keys (--keep-device-plugin-quota): they still "
                         "count device-plugin pods")
        elif keep:
            notes.append("kept the device-plugin keys: workloads that stay on the device plugin "
                         "(blocked or bridged) may run in this namespace, and these keys cap them")
        if len(profiles) > 1:
            notes.append(f"the MIG profiles {', '.join(sorted(profiles))} share one "
                         "mig.nvidia.com cap: quota counts devices per DeviceClass, not per "
                         "profile, so the limit is looser than before")
        if unenforced:
            notes.append("Kubernetes never enforced the limits./bare device-plugin keys of this "
                         "quota (only requests.<resource>); their value is now the DRA cap")
        plan.result = _result(file, data, "quota", notes=tuple(notes))
        _prune(data, base, plan.ops)
        return plan


_GUIDANCE = {
    "LimitRange": "LimitRange bounds do not apply to claims: bound DRA use with "
                  "<class>.deviceclass.resource.k8s.io/devices in a ResourceQuota",
    "ClusterQueue": "Kueue: map DeviceClass gpu.nvidia.com to this resource with "
                    "resources.deviceClassMappings in Kueue's Configuration",
    "NodePool": "Karpenter: nodes whose GPUs are published by DRA advertise no nvidia.com/gpu "
                "capacity; bound the pool by CPU/memory too",
}


def _quota_resource(key: str) -> str:
    return key.partition(".")[2] if key.startswith(("requests.", "limits.")) else key


def quota_path(data: Mapping[str, Any]) -> PathT | None:
    """Where a quota object keeps its `hard` limits; None for anything else."""
    kind = data.get("kind")
    group = str(data.get("apiVersion", "")).rpartition("/")[0]
    if kind == "ResourceQuota" and group == "":
        return ("spec", "hard")
    if kind == "Profile" and group == "kubeflow.org":
        return ("spec", "resourceQuotaSpec", "hard")
    return None


def _mentions_nvidia(data: Any) -> bool:
    return "nvidia.com/" in repr(data)


def _devices(spec: PodSpecRef) -> list[_Device]:
    found: list[_Device] = []
    for container in spec.containers:
        resources = container.data.get("resources")
        if not isinstance(resources, Mapping):
            continue
        limits = resources.get("limits") if isinstance(resources.get("limits"), Mapping) else {}
        requests = resources.get("requests") if isinstance(resources.get("requests"), Mapping) else {}
        for name in dict.fromkeys([*limits, *requests]):
            device = classify(name)
            if device is None or device.kind is DeviceKind.OTHER_VENDOR:
                continue
            label = _container_label(container)
            if device.kind is DeviceKind.OTHER_NVIDIA:
                raise Blocked(f"{label}: {name} has no DRA equivalent in the NVIDIA driver")
            if name not in limits:
                raise Blocked(f"{label}: {name} is in requests without a limit")
            count = parse_device_count(limits[name])
            if count.templated:
                raise Blocked(f"{label}: {name} count {limits[name]!r} is a placeholder")
            if count.value is None:
                raise Blocked(f"{label}: {name} count {limits[name]!r} is {count.invalid}")
            if name in requests and parse_device_count(requests[name]).value != count.value:
                raise Blocked(f"{label}: {name} requests and limits differ")
            if count.value == 0:
                continue  # asks for nothing; leaving it changes nothing
            paths = [container.path + ("resources", "limits", name)]
            if name in requests:
                paths.append(container.path + ("resources", "requests", name))
            found.append(_Device(container, name, device.kind, count.value, device.mig_profile, paths))
    return found


def _outside_requests(data: Mapping[str, Any], specs: list[PodSpecRef]) -> str | None:
    covered = [c.path for s in specs for c in s.containers]
    for path, holder in resource_holders(data):
        if any(path[: len(c)] == c for c in covered):
            continue
        for section in ("limits", "requests"):
            values = holder["resources"].get(section)
            for name in values if isinstance(values, Mapping) else ():
                device = classify(name)
                if device is not None and device.is_nvidia_device_plugin:
                    return ".".join(str(p) for p in path) or "the object"
    return None


def _prune(data: Mapping[str, Any], base: PathT, ops: list[Op]) -> None:
    """Replace deletions that would empty a mapping or list with the deletion of its entry.

    A container that receives something (an Append/Extend/InsertBefore) is never pruned.
    Deepest parents first, so an emptied `limits:` can in turn empty its `resources:`.
    """
    grows = {op.sequence if isinstance(op, Extend) else op.mapping
             for op in ops if not isinstance(op, Delete)}
    deletes = list(dict.fromkeys(op.path for op in ops if isinstance(op, Delete)))
    changed = True
    while changed:
        changed = False
        by_parent: dict[PathT, int] = {}
        for path in deletes:
            by_parent[path[:-1]] = by_parent.get(path[:-1], 0) + 1
        for parent in sorted(by_parent, key=len, reverse=True):
            if parent in grows or len(parent) <= len(base):
                continue
            value = dig(data, *parent[len(base):])
            if isinstance(value, (Mapping, list)) and len(value) == by_parent[parent]:
                deletes = [p for p in deletes if p[:-1] != parent] + [parent]
                changed = True
                break
    # A deletion inside a deleted subtree is redundant.
    kept = [p for p in deletes if not any(p != d and p[: len(d)] == d for d in deletes)]
    ops[:] = [op for op in ops if not isinstance(op, Delete)] + [Delete(p) for p in kept]


def _add_to_pod(spec: PodSpecRef, pod: PathT, key: str, item: Any, ops: list[Op]) -> None:
    existing = spec.data.get(key)
    if isinstance(existing, list) and existing:
        ops.append(Extend(pod + (key,), (item,)))
        return
    if key in spec.data:  # `key: []` or `key: null`: replace it
        ops.append(Delete(pod + (key,)))
    anchor = next((k for k in spec.data if k in ("initContainers", "containers")), None)
    if anchor is None:
        ops.append(Append(pod, key, [item]))
    else:
        ops.append(InsertBefore(pod, anchor, key, [item]))


def _has_gpu_toleration(spec: Mapping[str, Any]) -> bool:
    tolerations = spec.get("tolerations")
    return any(isinstance(t, Mapping) and t.get("key") in ("nvidia.com/gpu", None)
               and t.get("operator") == "Exists"
               for t in (tolerations if isinstance(tolerations, list) else ()))


def _existing_claim_names(spec: Mapping[str, Any]) -> set[str]:
    claims = spec.get("resourceClaims")
    return {str(c.get("name")) for c in claims if isinstance(c, Mapping)} \
        if isinstance(claims, list) else set()


def _free_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def _runs_before_app(container: ContainerRef) -> bool:
    """A plain init container; `restartPolicy: Always` makes it a sidecar that runs alongside."""
    return container.init and container.data.get("restartPolicy") != "Always"


def _container_label(container: ContainerRef) -> str:
    if container.name:
        return container.name
    last = container.path[-1] if container.path else "main"
    if last in ("container", "script"):
        return "main"  # what Argo names the container it creates from these keys
    return str(last) if isinstance(last, str) else "main"


def _pod_suffix(data: Mapping[str, Any], path: PathT) -> str:
    for i in range(len(path) - 1, -1, -1):
        part = path[i]
        if isinstance(part, int):
            item = dig(data, *path[: i + 1])
            if isinstance(item, Mapping):
                named = item.get("name") or item.get("groupName")
                if named:
                    return emit.dns_label(str(named))
            return str(part)
        if part in _STRUCTURAL:
            continue
        return emit.dns_label(_SUFFIXES.get(part, part))
    return ""


def _workload_name(data: Mapping[str, Any]) -> str:
    metadata = data.get("metadata") or {}
    name = metadata.get("name") or str(metadata.get("generateName") or "").rstrip("-")
    return str(name or str(data.get("kind", "workload")).lower())


def _namespace(data: Mapping[str, Any]) -> str | None:
    value = (data.get("metadata") or {}).get("namespace")
    return str(value) if value else None


def _result(file: str, data: Mapping[str, Any], strategy: str, *, reason: str | None = None,
            notes: tuple[str, ...] = (), created: tuple[str, ...] = ()) -> WorkloadResult:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
    name = metadata.get("name") or metadata.get("generateName")
    return WorkloadResult(file, str(data.get("kind", "")), str(name) if name else None,
                          _namespace(data), strategy, reason, notes, created)

