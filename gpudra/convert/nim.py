"""NVIDIA NIM Operator: NIMService and NIMPipeline have a DRA field of their own.

A NIMService is not a pod spec: the operator renders the Deployment (or LeaderWorkerSet) from
`spec`, putting `spec.resources` on the model container and turning each `spec.draResources[]`
entry into a pod claim the model container uses. Its `resources` ignores DRA claims, so the
conversion is `resources.limits.nvidia.com/gpu` out, `draResources: [{resourceClaimTemplateName}]`
in (or `resourceClaimName` for a shared claim). A NIMPipeline lists NIMService specs under
`spec.services[].spec`. The operator uses `resource.k8s.io/v1` and refuses DRA below Kubernetes
1.34. (NVIDIA/k8s-nim-operator `api/apps/v1alpha1/nimservice_types.go`, `dra_types.go`,
`internal/utils/utils.go`; docs/facts.md.)

The service spec carries `nodeSelector`, `affinity` and `resources` the way a pod spec and its
container do, so it is read as a pod spec with one container, and placement and requests work
as for any workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import PathT, dig
from gpudra.k8s.workloads import ContainerRef, PodSpecRef
from gpudra.yamledit.ops import Append, InsertBefore, Op

GROUP = "apps.nvidia.com"
KINDS = frozenset({"NIMService", "NIMPipeline"})
DRA_FIELD = "draResources"
MIN_MINOR = 34  # utils.MinSupportedClusterVersionForDRA = v1.34.0


def is_nim(group: str, kind: str) -> bool:
    return group == GROUP and kind in KINDS


def service_specs(kind: str, data: Mapping[str, Any]) -> list[PathT]:
    """Where the object's NIMService specs are."""
    if kind == "NIMService":
        return [("spec",)] if isinstance(data.get("spec"), Mapping) else []
    services = dig(data, "spec", "services")
    return [("spec", "services", i, "spec") for i, service in
            enumerate(services if isinstance(services, list) else ())
            if isinstance(dig(service, "spec"), Mapping)]


def as_pod_spec(data: Mapping[str, Any], path: PathT) -> PodSpecRef:
    """The service spec as a pod spec whose one container is the model container."""
    spec = dig(data, *path)
    return PodSpecRef(path, spec, (ContainerRef(path, spec, False),))


def service_label(data: Mapping[str, Any], path: PathT) -> str:
    if path == ("spec",):
        return "NIMService"
    name = dig(data, *path[:-1], "name")
    return f"NIMPipeline service {name or path[-2]!r}"


def add_dra_resources(spec: Mapping[str, Any], at: PathT, entries: list[dict[str, Any]]) -> Op:
    """`draResources` right after `resources` (where a reader looks for the GPUs), else last."""
    keys = [str(k) for k in spec]
    following = keys[keys.index("resources") + 1:] if "resources" in keys else []
    if following:
        return InsertBefore(at, following[0], DRA_FIELD, entries)
    return Append(at, DRA_FIELD, entries)


def dra_entry(object_name: str, shared: bool) -> dict[str, Any]:
    return {"resourceClaimName" if shared else "resourceClaimTemplateName": object_name}
