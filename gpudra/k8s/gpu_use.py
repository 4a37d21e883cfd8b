"""How an object uses GPUs: the one reading that audit rules, convert and the cluster audit share.

A pod spec's GPU use is its containers' device-plugin requests (limits and requests, with
their counts as written), the DRA claims they reference, the NVIDIA environment variables they
set, and the pod's `resourceClaims`. Requests that sit outside every pod spec (a CRD that keeps
them on its own spec, Kubeflow TrainJob's `resourcesPerNode`) are read too, so nothing the
pre-scan saw goes unreported.

Nothing here decides what is wrong or what to change: rules judge these records, the convert
planner turns them into claims.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.k8s.devices import DeviceResource, classify
from gpudra.k8s.objects import PLAIN_CONTAINERS, PathT, as_mapping, dig
from gpudra.k8s.quantity import DeviceCount, parse_device_count
from gpudra.k8s.workloads import ContainerRef, PodSpecRef, WorkloadTable, compile_path, evaluate

NVIDIA_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
HIDDEN = frozenset({"void", "none", ""})  # NVIDIA_VISIBLE_DEVICES values that expose no GPU
# Where a resource-like key is a label, a selector, data or what a live object reports
# (`status.containerStatuses[].allocatedResources`), never a request.
_NOT_REQUESTS = frozenset({"metadata", "labels", "annotations", "nodeSelector", "matchLabels",
                           "selector", "data", "stringData", "binaryData", "status",
                           # gang-scheduling minimums (Kubeflow runPolicy, Volcano): what the
                           # group needs before it starts, not a request of its own
                           "minResources"})
_DATA_KINDS = frozenset({"ConfigMap", "Secret"})
# Operators with a DRA field of their own, which they turn into pod claims: the NVIDIA NIM
# Operator's `draResources` (k8s-nim-operator api/apps/v1alpha1 nimservice_types.go).
OPERATOR_DRA_FIELDS: dict[tuple[str, str], str] = {
    ("apps.nvidia.com", "NIMService"): "spec.draResources",
    ("apps.nvidia.com", "NIMPipeline"): "spec.services[*].spec.draResources",
}
_MISSING = object()


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One device resource a container (or a CRD field) asks for, as written."""

    container: ContainerRef
    resource: str
    device: DeviceResource
    limit: Any      # the raw value in `limits`, or None when only `requests` names it
    request: Any    # the raw value in `requests`, or None
    in_limits: bool
    in_requests: bool
    paths: tuple[PathT, ...]  # its keys, limits first (relative to the object)
    # Parsed once, when built: rules, `allocates` and every device_plugin/uses_gpus property
    # read it, several times per request. Derived from the fields above, so not compared.
    count: DeviceCount = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", parse_device_count(self.raw))

    @property
    def path(self) -> PathT:
        """The key findings point at: the limit, else the request."""
        return self.paths[0]

    @property
    def raw(self) -> Any:
        return self.limit if self.in_limits else self.request

    @property
    def nvidia(self) -> bool:
        """An NVIDIA device-plugin resource (whole GPU, MIG slice or shared GPU)."""
        return self.device.is_nvidia_device_plugin

    @property
    def allocates(self) -> bool:
        """An NVIDIA device-plugin request for at least one device (or an unknown count)."""
        return self.nvidia and self.count.value != 0


@dataclass(frozen=True, slots=True)
class EnvVar:
    index: int
    name: str
    value: Any


@dataclass(frozen=True, slots=True)
class ContainerUse:
    container: ContainerRef
    requests: tuple[DeviceRequest, ...]
    claims: tuple[Mapping[str, Any], ...]  # resources.claims entries
    env: tuple[EnvVar, ...]                # the NVIDIA_* variables it sets

    @property
    def device_plugin(self) -> bool:
        return any(r.allocates for r in self.requests)

    @property
    def uses_gpus(self) -> bool:
        return self.device_plugin or bool(self.claims)

    @property
    def sees_unrequested_gpus(self) -> bool:
        """NVIDIA_VISIBLE_DEVICES exposes GPUs (`all`, indexes, UUIDs) to a container that asks
        for none: a monitoring agent's way to see every GPU of its node."""
        return not self.uses_gpus and not any(r.nvidia for r in self.requests) and any(
            v.name == "NVIDIA_VISIBLE_DEVICES" and str(v.value or "").lower() not in HIDDEN
            for v in self.env)


@dataclass(frozen=True, slots=True)
class PodSpecUse:
    spec: PodSpecRef
    containers: tuple[ContainerUse, ...]
    resource_claims: tuple[Mapping[str, Any], ...]

    @property
    def device_plugin(self) -> bool:
        return any(c.device_plugin for c in self.containers)

    @property
    def dra(self) -> bool:
        return bool(self.resource_claims)

    @property
    def uses_gpus(self) -> bool:
        return self.dra or self.device_plugin


@dataclass(frozen=True, slots=True)
class ObjectUse:
    """An object's pod specs, and the device requests found outside all of them."""

    pods: tuple[PodSpecUse, ...]
    stray: tuple[DeviceRequest, ...]
    operator_dra: bool = False  # an operator's own DRA field is set (NIM `draResources`)

    @property
    def device_plugin(self) -> bool:
        return any(p.device_plugin for p in self.pods) or any(r.allocates for r in self.stray)

    @property
    def dra(self) -> bool:
        return self.operator_dra or any(p.dra for p in self.pods)

    @property
    def device_plugin_gpus(self) -> int | None:
        """NVIDIA devices it asks the device plugin for (per replica, every container and pod
        template as written); None when a count is templated or invalid."""
        requests = [r for p in self.pods for c in p.containers for r in c.requests
                    if r.allocates] + [r for r in self.stray if r.allocates]
        if any(r.count.value is None for r in requests):
            return None
        return sum(r.count.value or 0 for r in requests)  # none is None (checked above)


def read_object(table: WorkloadTable, group: str, kind: str, data: Mapping[str, Any],
                *, strays: bool = True) -> ObjectUse:
    """The GPU use of one object; `strays=False` skips the search outside pod specs (for
    objects whose other fields are known not to hold requests)."""
    pods = tuple(read_pod_spec(spec) for spec in table.pod_specs(group, kind, data))
    field_path = OPERATOR_DRA_FIELDS.get((group, kind))
    operator_dra = field_path is not None and any(
        isinstance(v, list) and v for _, v in evaluate(compile_path(field_path), data))
    if not strays or kind in _DATA_KINDS:
        return ObjectUse(pods, (), operator_dra)
    covered = {c.container.path for p in pods for c in p.containers}
    return ObjectUse(pods, tuple(_strays(data, covered)), operator_dra)


def read_pod_spec(spec: PodSpecRef) -> PodSpecUse:
    claims = spec.data.get("resourceClaims")
    return PodSpecUse(spec, tuple(read_container(c) for c in spec.containers),
                      tuple(c for c in claims if isinstance(c, Mapping))
                      if isinstance(claims, list) else ())


def read_container(container: ContainerRef) -> ContainerUse:
    resources = as_mapping(container.data.get("resources"))
    requests = tuple(_requests(container, resources, container.path + ("resources",)))
    claims = resources.get("claims")
    env = container.data.get("env")
    return ContainerUse(
        container, requests,
        tuple(c for c in claims if isinstance(c, Mapping)) if isinstance(claims, list) else (),
        tuple(EnvVar(i, var["name"], var.get("value"))
              for i, var in enumerate(env if isinstance(env, list) else ())
              if isinstance(var, Mapping) and var.get("name") in NVIDIA_ENV))


def _requests(container: ContainerRef, resources: Mapping[str, Any],
              at: PathT) -> Iterator[DeviceRequest]:
    limits = as_mapping(resources.get("limits"))
    requested = as_mapping(resources.get("requests"))
    if not limits and not requested:
        return
    for name in dict.fromkeys([*limits, *requested]):
        device = classify(name)
        if device is None:
            continue
        in_limits, in_requests = name in limits, name in requested
        paths = tuple(at + (section, name) for section, present in
                      (("limits", in_limits), ("requests", in_requests)) if present)
        yield DeviceRequest(container, name, device, limits.get(name), requested.get(name),
                            in_limits, in_requests, paths)


def _strays(data: Any, covered: set[PathT], limit: int = 16) -> Iterator[DeviceRequest]:
    """Device requests outside the covered containers: `resources: {limits|requests}` blocks of
    any device, and bare NVIDIA device-plugin keys in shapes of their own (labels, selectors
    and data excluded, where such keys are not requests)."""
    stack: list[tuple[PathT, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if len(path) > limit or path in covered:
            continue
        # Plain dicts and lists are decided before the ABC (gpudra.k8s.objects.PLAIN_CONTAINERS).
        if value.__class__ is dict or isinstance(value, Mapping):
            resources = value.get("resources")
            if resources is not None and isinstance(resources, Mapping) and (
                    isinstance(resources.get("limits"), Mapping)
                    or isinstance(resources.get("requests"), Mapping)):
                holder = ContainerRef(path, value, False, outside=True)
                yield from _requests(holder, resources, path + ("resources",))
            for key, item in value.items():
                if not isinstance(key, str) or key in _NOT_REQUESTS or \
                        (key == "resources" and isinstance(resources, Mapping)):
                    continue
                if key.startswith("nvidia.com/") and is_device_plugin_resource(key):
                    holder = ContainerRef(path, value, False, outside=True)
                    device = classify(key)
                    if device is not None:  # always: a device-plugin resource is classified
                        yield DeviceRequest(holder, key, device, item, None, True, False,
                                            (path + (key,),))
                elif item.__class__ in PLAIN_CONTAINERS or isinstance(item, (Mapping, list)):
                    stack.append((path + (key,), item))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in enumerate(value)
                         if v.__class__ in PLAIN_CONTAINERS or isinstance(v, (Mapping, list)))


def device_keys(data: Any) -> Iterator[tuple[PathT, str, Any]]:
    """Every NVIDIA device-plugin key in an object, wherever it is (labels, selectors, data and
    status excluded), as (path, resource, value): for code that must know where such keys are
    without knowing the object's shape (Kustomize patches)."""
    if isinstance(data, Mapping) and data.get("kind") in _DATA_KINDS:
        return
    for request in _strays(data, set()):
        if request.nvidia:
            for path in request.paths:
                yield path, request.resource, dig(data, *path)


_NVIDIA_PREFIX = "nvidia.com/"


def device_plugin_total(resources: Any) -> int:
    """NVIDIA device-plugin devices in a resource list (a container's limits, a node's
    allocatable); counts that are not whole numbers count as none."""
    total = 0
    for name, value in as_mapping(resources).items():
        if is_device_plugin_resource(name):
            total += parse_device_count(value).value or 0
    return total


def is_device_plugin_resource(name: str) -> bool:
    # Every device-plugin resource is `nvidia.com/...`: the other names (cpu, memory, on every
    # container of every pod) are answered without classify's patterns.
    if not isinstance(name, str) or not name.startswith(_NVIDIA_PREFIX):
        return False
    device = classify(name)
    return device is not None and device.is_nvidia_device_plugin


# --- quotas --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QuotaKey:
    """One `hard` key of a quota that caps a device resource."""

    key: str
    scope: str      # "requests", "limits" or "" (a bare key)
    resource: str
    device: DeviceResource
    value: Any
    path: PathT

    @property
    def count(self) -> DeviceCount:
        return parse_device_count(self.value)


def quota_path(data: Mapping[str, Any]) -> PathT | None:
    """Where a quota object keeps its `hard` limits; None for anything else."""
    kind = data.get("kind")
    group = str(data.get("apiVersion", "")).rpartition("/")[0]
    if kind == "ResourceQuota" and group == "":
        return ("spec", "hard")
    if kind == "Profile" and group == "kubeflow.org":
        return ("spec", "resourceQuotaSpec", "hard")
    return None


def quota_keys(data: Mapping[str, Any]) -> list[QuotaKey]:
    """The device keys of a ResourceQuota or Kubeflow Profile quota, in order."""
    path = quota_path(data)
    if path is None:
        return []
    hard = dig(data, *path)
    found: list[QuotaKey] = []
    for key, value in (hard.items() if isinstance(hard, Mapping) else ()):
        key = str(key)
        scope, _, name = key.partition(".") if key.startswith(("requests.", "limits.")) \
            else ("", "", key)
        device = classify(name)
        if device is not None:
            found.append(QuotaKey(key, scope, name, device, value, path + (key,)))
    return found


def is_nvidia(device: DeviceResource | None) -> bool:
    # classify() never calls an nvidia.com/ name another vendor's: the prefix is enough.
    return device is not None and device.name.startswith("nvidia.com/")


def advertised_device_plugin_resources(node: Mapping[str, Any]) -> dict[str, int]:
    """NVIDIA device-plugin resources in the node's capacity or allocatable, the larger count
    of the two, > 0 only: the kubelet keeps a stopped plugin's capacity for a while after its
    allocatable drops to 0."""
    status = as_mapping(node.get("status"))
    found = device_plugin_counts(as_mapping(status.get("capacity")))
    for name, count in device_plugin_counts(as_mapping(status.get("allocatable"))).items():
        found[name] = max(found.get(name, 0), count)
    return found


def device_plugin_counts(offered: Mapping[str, Any]) -> dict[str, int]:
    """NVIDIA device-plugin resources of a capacity or allocatable mapping, > 0 only."""
    found: dict[str, int] = {}
    for name, value in offered.items():
        if not is_device_plugin_resource(name):
            continue
        count = parse_device_count(value).value
        if isinstance(count, int) and count > 0:
            found[name] = count
    return found
