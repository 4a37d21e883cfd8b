"""KubeRay: keep `ray start --num-gpus` once the GPU limit leaves the Ray container.

The KubeRay operator builds each Ray pod's `ray start` command from its group's `rayStartParams`.
When those have no `num-gpus`, it takes the count from the Ray container's (the first
container's) `resources.limits`: the first key, in sorted order, that ends in `gpu` or names a
MIG slice (`nvidia.com/mig-<n>g.<m>gb`) and is not zero. A group-level `resources` map with a GPU
key overrides both. After convert the limit is a claim, so Ray would start with 0 GPUs; writing
`num-gpus: "N"` into the group's `rayStartParams` keeps exactly what KubeRay derived before.
(ray-operator `controllers/ray/common/pod.go`, `addWellKnownAcceleratorResources` and
`updateRayStartParamsResources`; `utils/resources.go`, `IsGPUResourceKey`; docs/facts.md.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.k8s.objects import PathT, as_mapping, dig
from gpudra.k8s.quantity import parse_device_count
from gpudra.yamledit.ops import Append, Delete, InsertBefore, Op

NUM_GPUS = "num-gpus"
# Kinds whose spec (at the given path) is a RayClusterSpec.
RAY_CLUSTER_SPECS: dict[tuple[str, str], PathT] = {
    ("ray.io", "RayCluster"): ("spec",),
    ("ray.io", "RayJob"): ("spec", "rayClusterSpec"),
    ("ray.io", "RayService"): ("spec", "rayClusterConfig"),
    ("orchestration.aibrix.ai", "RayClusterFleet"): ("spec", "template", "spec"),
}
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")
_RAY_CONTAINER = 0  # utils.RayContainerIndex


def is_gpu_key(name: str) -> bool:
    """What KubeRay counts as a GPU resource name."""
    return name.endswith("gpu") or _MIG.search(name) is not None


def ray_gpus(limits: Mapping[str, Any]) -> int | None:
    """The `--num-gpus` KubeRay derives from a container's limits; None: no GPU key."""
    for name in sorted(str(k) for k in limits):
        if is_gpu_key(name):
            value = parse_device_count(limits[name]).value
            if value:  # zero is skipped; a count gpudra cannot read never reaches here
                return value
    return None


def group_path(group: str, kind: str, pod: PathT) -> PathT | None:
    """The head or worker group spec that owns the pod spec at `pod`, if it is one."""
    cluster = RAY_CLUSTER_SPECS.get((group, kind))
    if cluster is None or pod[-2:] != ("template", "spec"):
        return None
    owner = pod[:-2]
    if owner == cluster + ("headGroupSpec",):
        return owner
    if len(owner) == len(cluster) + 2 and owner[:-1] == cluster + ("workerGroupSpecs",) \
            and isinstance(owner[-1], int):
        return owner
    return None


def keep_num_gpus(data: Mapping[str, Any], group: str, kind: str, base: PathT, pod: PathT,
                  spec: Mapping[str, Any], removed: Iterable[tuple[PathT, str]], ops: list[Op],
                  notes: list[str]) -> None:
    """Write `num-gpus` where convert's removal of `removed` ((container path, resource) pairs)
    changes what KubeRay passes to `ray start`."""
    owner = group_path(group, kind, pod)
    if owner is None:
        return
    group_spec = as_mapping(dig(data, *owner))
    params = group_spec.get("rayStartParams")
    if isinstance(params, Mapping) and NUM_GPUS in params:
        return
    if any(is_gpu_key(str(name).lower()) for name in as_mapping(group_spec.get("resources"))):
        return  # the group's `resources` sets num-gpus itself
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return
    limits = as_mapping(as_mapping(as_mapping(containers[_RAY_CONTAINER]).get("resources"))
                        .get("limits"))
    ray_container = pod + ("containers", _RAY_CONTAINER)
    gone = {name for where, name in removed if where == ray_container}
    before = ray_gpus(limits)
    if before is None or ray_gpus({k: v for k, v in limits.items() if k not in gone}) == before:
        return
    at = base + owner
    value = str(before)
    if isinstance(params, Mapping):
        ops.append(Append(at + ("rayStartParams",), NUM_GPUS, value))
    else:
        if "rayStartParams" in group_spec:  # `rayStartParams:` with no value
            ops.append(Delete(at + ("rayStartParams",)))
        entry = {NUM_GPUS: value}
        ops.append(InsertBefore(at, "template", "rayStartParams", entry) if "template" in group_spec
                   else Append(at, "rayStartParams", entry))
    role = "head group" if owner[-1] == "headGroupSpec" else \
        f"worker group {group_spec.get('groupName') or owner[-1]!r}"
    notes.append(f"KubeRay {role}: rayStartParams num-gpus: \"{value}\" keeps `ray start "
                 f"--num-gpus {value}`; KubeRay took it from the Ray container's GPU limit, "
                 "which is now a claim")
