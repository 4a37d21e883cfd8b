"""GPU1xx: device-plugin requests in containers (init containers included)."""

from __future__ import annotations

from typing import Any, TypedDict

from gpudra.k8s.devices import HAMI_RESOURCES, DeviceKind, DeviceResource
from gpudra.dra.sharing import NO_REPLICAS
from gpudra.k8s.gpu_use import DeviceRequest
from gpudra.results.model import Severity
from gpudra.k8s.objects import PathT, SourceObject, format_path
from gpudra.k8s.quantity import parse_device_count
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.k8s.workloads import ContainerRef, pod_role

CATEGORY = "device requests"

GPU101 = rule(
    "GPU101", "device-plugin-gpu", Severity.WARNING, CATEGORY,
    "Container requests whole GPUs through the device plugin (nvidia.com/gpu).",
    "Run `gpudra convert` to move the request into a ResourceClaimTemplate (class gpu.nvidia.com).",
)

GPU102 = rule(
    "GPU102", "device-plugin-mig", Severity.WARNING, CATEGORY,
    "Container requests a MIG slice through the device plugin (nvidia.com/mig-<profile>).",
    "Convert to a claim on class mig.nvidia.com with a selector on the `profile` attribute.",
)

GPU103 = rule(
    "GPU103", "device-plugin-shared-gpu", Severity.WARNING, CATEGORY,
    "Container requests a time-sliced or MPS-shared GPU (nvidia.com/gpu.shared).",
    "Share one ResourceClaim between the pods; add a GpuConfig sharing strategy if needed.",
)

GPU104 = rule(
    "GPU104", "gpu-requests-limits-mismatch", Severity.ERROR, CATEGORY,
    "Device requests and limits differ, or requests has no matching limit.",
    "Set the device count in limits only (or make requests equal limits).",
)

GPU105 = rule(
    "GPU105", "invalid-device-quantity", Severity.ERROR, CATEGORY,
    "Device quantity is not a whole, non-negative number.",
    "Use a whole number of devices.",
)

GPU106 = rule(
    "GPU106", "templated-device-quantity", Severity.WARNING, CATEGORY,
    "Device quantity is a placeholder filled in by another tool (${VAR}, {{ }}, $(VAR)).",
    "Migrate by hand, keeping the placeholder in the claim's count.",
)

GPU107 = rule(
    "GPU107", "zero-device-request", Severity.INFO, CATEGORY,
    "Container asks for zero devices.",
    "Delete the zero entry; a container without a claim gets no GPU.",
)

GPU108 = rule(
    "GPU108", "other-vendor-device", Severity.INFO, CATEGORY,
    "Container requests another vendor's device (amd.com/gpu, gpu.intel.com/*).",
    "Leave as is, or migrate with that vendor's DRA driver.",
)

GPU109 = rule(
    "GPU109", "unknown-nvidia-resource", Severity.WARNING, CATEGORY,
    "Container requests an nvidia.com/ resource that the NVIDIA device plugin does not define.",
    "Decide the DRA equivalent by hand (MIG, MPS sharing, or whole GPUs).",
)

# Kinds whose `resources` blocks are not requests (quotas, ranges) or that other rules own.
_NOT_WORKLOADS = frozenset({"ResourceQuota", "LimitRange", "ClusterQueue", "NodePool", "Profile",
                            "ResourceFlavor", "LocalQueue", "Node"})

# The rule each kind of device-plugin request raises; the Kustomize overlay audit, preflight's
# MANIFEST003 and convert's waivers read the same map.
RULE_BY_KIND = {DeviceKind.GPU: GPU101, DeviceKind.MIG: GPU102, DeviceKind.SHARED: GPU103,
                DeviceKind.OTHER_NVIDIA: GPU109, DeviceKind.OTHER_VENDOR: GPU108}
# The kinds convert moves to DRA (whole GPUs, MIG, shared GPUs) and the rules they raise.
CONVERTIBLE_KINDS = (DeviceKind.GPU, DeviceKind.MIG, DeviceKind.SHARED)
CONVERTIBLE_RULES = tuple(RULE_BY_KIND[kind].id for kind in CONVERTIBLE_KINDS)


class _Where(TypedDict):
    """Where a request's findings point: AuditContext.emit's keywords."""

    path: PathT
    container: str | None
    resource: str


class DeviceRequests(Checker):
    rules = (GPU101, GPU102, GPU103, GPU104, GPU105, GPU106, GPU107, GPU108, GPU109)

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        use = ctx.gpu_use(obj)
        for pod in use.pods:
            role = pod_role(obj.data, pod.spec.path)
            for container in pod.containers:
                for request in container.requests:
                    self._request(obj, request, ctx, role)
            device_plugin = pod.device_plugin  # a walk over every request: read it once
            if device_plugin or pod.dra:
                ctx.note_workload(obj, device_plugin=device_plugin, dra=pod.dra)
        if obj.kind in _NOT_WORKLOADS:
            return
        # Requests outside any known pod spec: CRDs that put them on their own spec, or in
        # fields of their own shape (Kubeflow TrainJob's resourcesPerNode).
        for request in use.stray:
            self._request(obj, request, ctx)
            if request.allocates:
                ctx.note_workload(obj, device_plugin=True)
        if use.operator_dra:  # the operator turns the field into pod claims
            ctx.note_workload(obj, dra=True)

    @staticmethod
    def _request(obj: SourceObject, request: DeviceRequest, ctx: AuditContext,
                 role: str | None = None) -> None:
        container, name, count = request.container, request.resource, request.count
        where = _Where(path=request.path,
                       container=None if container.outside else container.name, resource=name)
        # PyTorchJob Master/Worker, Ray head/worker groups: which pod template it is in
        label = f"{role} {_describe(container)}" if role else _describe(container)
        if container.ephemeral:
            label += " (the API server rejects resources on ephemeral containers)"
        if count.value == 0:
            ctx.emit(GPU107, obj, f"{label} asks for 0 × {name}", **where, quantity=0)
            return
        message = _classification_message(label, request.device, count.value)
        bridged = obj.cluster.bridge_pods if obj.cluster is not None else 0
        if bridged and request.device.kind in (DeviceKind.GPU, DeviceKind.MIG):
            message += (f"; DRA serves it to {bridged} of its pods through a DeviceClass's "
                        "extendedResourceName (KEP-5004 bridge): on DRA, but only while a "
                        "class maps this name")
        ctx.emit(RULE_BY_KIND[request.device.kind], obj, message, **where,
                 quantity=count.value)
        if count.templated:
            ctx.emit(GPU106, obj, f"{label}: {name} quantity {request.raw!r} is a placeholder",
                     **where)
        elif count.invalid:
            ctx.emit(GPU105, obj, f"{label}: {name} quantity {request.raw!r} is "
                     f"{count.invalid}", **where)
        if request.in_requests and not request.in_limits:
            ctx.emit(GPU104, obj,
                     f"{label}: {name} is in requests but not in limits (the API server "
                     "requires a limit for device resources)", **where, quantity=count.value)
        elif request.in_requests and not _same_count(request.request, request.limit):
            ctx.emit(GPU104, obj,
                     f"{label}: {name} requests {request.request!r} but limits "
                     f"{request.limit!r} (they must be equal)", **where, quantity=count.value)


def _classification_message(label: str, device: DeviceResource, value: int | None) -> str:
    amount = f"{value} × " if value is not None else ""
    if device.kind is DeviceKind.GPU:
        return f"{label} requests {amount}{device.name} through the device plugin"
    if device.kind is DeviceKind.MIG:
        return (f"{label} requests {amount}{device.name} (MIG profile {device.mig_profile}); "
                "DRA class mig.nvidia.com")
    if device.kind is DeviceKind.SHARED:
        return (f"{label} requests {amount}{device.name}: time-slicing/MPS replicas have no "
                f"direct DRA equivalent (share one ResourceClaim instead; {NO_REPLICAS})")
    if device.kind is DeviceKind.OTHER_NVIDIA:
        origin = "a HAMi vGPU resource" if device.name in HAMI_RESOURCES else "not a device-plugin resource"
        return f"{label} requests {amount}{device.name} ({origin})"
    return f"{label} requests {amount}{device.name} (not NVIDIA; left alone)"


def _describe(container: ContainerRef) -> str:
    if container.outside:
        where = format_path(container.path) or "the object"
        return f"{where} (outside a known pod spec)"
    kind = ("init container" if container.init else
            "ephemeral container" if container.ephemeral else "container")
    if container.name:
        return f"{kind} {container.name!r}"
    return f"{kind} at {format_path(container.path)}" if container.path else kind


def _same_count(a: Any, b: Any) -> bool:
    left, right = parse_device_count(a), parse_device_count(b)
    if left.value is not None and right.value is not None:
        return left.value == right.value
    return str(a).strip() == str(b).strip()

