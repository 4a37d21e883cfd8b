"""Rules about what a Kustomize overlay renders. GPU110: a container that gets DRA claims and
device-plugin devices at once. GPU610: a rename that leaves claim references behind.

The plain-manifest half lives here (it also covers `kustomize build overlay | gpudra audit -`);
the overlay half, where a converted base meets a patch that puts `nvidia.com/gpu` back, is
found by gpudra.rules.kustomize_overlays, which emits the same rule at the patch's line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.gpu_use import DeviceRequest, is_device_plugin_resource
from gpudra.results.model import Severity
from gpudra.k8s.objects import PathT, SourceObject, as_mapping
from gpudra.rules.base import AuditContext, Checker, rule

RESOURCE_GROUP = "resource.k8s.io"
# The NVIDIA DRA driver's classes that allocate GPUs (whole, MIG slices, passthrough); the
# ComputeDomain classes hand out IMEX channels and daemons, not GPUs.
GPU_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"})

GPU110 = rule(
    "GPU110", "claims-beside-device-plugin", Severity.ERROR, "device requests",
    "Container gets GPUs from a DRA claim and from a device-plugin request at once.",
    "Remove the device-plugin request and set the count on the claim (gpudra convert does it "
    "for overlay patches).",
)


GPU610 = rule(
    "GPU610", "kustomize-claim-reference-not-renamed", Severity.ERROR, "dra objects",
    "A kustomization renames a ResourceClaimTemplate that pods reference by its old name.",
    "Add a nameReference configuration for resourceClaimTemplateName (gpudra convert writes "
    "one).",
)


class ClaimsBesideDevicePlugin(Checker):
    # GPU610 is found by gpudra.rules.kustomize_overlays (it needs the kustomize tree); it is listed
    # here so that the catalogue, its docs and its suppression work like every rule's.
    rules = (GPU110, GPU610)

    def __init__(self) -> None:
        self._claims = _ClaimClasses()
        self._pending: list[_Beside] = []

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        self._claims.read(obj)
        for pod in ctx.gpu_use(obj).pods:
            entries = _pod_claims(pod.spec.data)
            for use in pod.containers:
                found = next((r for r in use.requests if r.allocates), None) \
                    if use.claims else None
                if found is not None:
                    refs = tuple((entries[c["name"]], c.get("request")) for c in use.claims
                                 if c.get("name") in entries)
                    self._pending.append(_Beside(obj, use.container.path, use.container.name,
                                                 found, refs))

    def finish(self, ctx: AuditContext) -> None:
        """Once every claim of the tree is known: only claims that allocate GPUs make a
        device-plugin request beside them a double allocation. IMEX/ComputeDomain channels next
        to `nvidia.com/gpu` are the supported pattern while the driver's GPU side is off."""
        for beside in self._pending:
            gpu_claims = [ref for ref, request in beside.claims
                          if self._claims.allocates_gpus(ref, request, beside.obj.namespace)]
            if not gpu_claims:
                continue
            request = beside.request
            name, value, count = request.resource, request.raw, request.count.value
            kind, claim = gpu_claims[0]
            ctx.emit(GPU110, beside.obj,
                     f"container {beside.container!r} references DRA claims ({kind} "
                     f"{claim!r} allocates GPUs) and also requests {value} × {name} through the "
                     "device plugin",
                     path=request.path,
                     container=beside.container, resource=name, quantity=count)


@dataclass(frozen=True, slots=True)
class _Beside:
    """A container with claims and a device-plugin request, judged once the tree is read."""

    obj: SourceObject
    path: PathT
    container: str | None
    request: DeviceRequest  # the container's first request that allocates devices
    claims: tuple[tuple[tuple[str, str], str | None], ...]  # ((kind, name), request name)


class _ClaimClasses:
    """The device classes each ResourceClaim(Template) of the tree requests, and which classes
    hand out GPUs: the NVIDIA driver's gpu/mig/vfio classes and any DeviceClass whose
    `extendedResourceName` is a device-plugin resource."""

    def __init__(self) -> None:
        # (kind, name) -> [(namespace, {request name: classes})]
        self._requests: dict[tuple[str, str], list[tuple[str | None, dict[str, set[str]]]]] = {}
        self._mapped: set[str] = set()

    def read(self, obj: SourceObject) -> None:
        if obj.group != RESOURCE_GROUP or not isinstance(obj.name, str):
            return
        spec = as_mapping(obj.data.get("spec"))
        if obj.kind == "DeviceClass":
            if is_device_plugin_resource(str(spec.get("extendedResourceName", ""))):
                self._mapped.add(obj.name)
            return
        if obj.kind == "ResourceClaimTemplate":
            spec = as_mapping(spec.get("spec"))
        elif obj.kind != "ResourceClaim":
            return
        requests = as_mapping(spec.get("devices")).get("requests")
        classes: dict[str, set[str]] = {}
        for request in requests if isinstance(requests, list) else ():
            request = as_mapping(request)
            alternatives = request.get("firstAvailable")
            bodies = [request, as_mapping(request.get("exactly")),
                      *(as_mapping(sub) for sub in
                        (alternatives if isinstance(alternatives, list) else ()))]
            classes[str(request.get("name"))] = {str(b["deviceClassName"]) for b in bodies
                                                 if isinstance(b.get("deviceClassName"), str)}
        self._requests.setdefault((obj.kind, obj.name), []).append((obj.namespace, classes))

    def allocates_gpus(self, ref: tuple[str, str], request: str | None,
                       namespace: str | None) -> bool:
        """Whether the claim (or that request of it) takes GPUs; False when the tree does not
        define it (GPU607 reports that)."""
        for defined_in, requests in self._requests.get(ref, ()):
            if None not in (namespace, defined_in) and namespace != defined_in:
                continue
            classes = requests.get(request, set()) if request is not None else \
                {c for found in requests.values() for c in found}
            if any(c in GPU_CLASSES or c in self._mapped for c in classes):
                return True
        return False


def _pod_claims(spec: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The pod's resourceClaims entries: entry name -> (kind, object name)."""
    entries = spec.get("resourceClaims")
    out: dict[str, tuple[str, str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        entry = as_mapping(entry)
        for key, kind in (("resourceClaimTemplateName", "ResourceClaimTemplate"),
                          ("resourceClaimName", "ResourceClaim")):
            if isinstance(entry.get(key), str) and isinstance(entry.get("name"), str):
                out[entry["name"]] = (kind, entry[key])
    return out
