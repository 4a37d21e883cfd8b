"""Issue 32's second cluster: GPUs the device plugin shares, as data.

Two pools on a 1.37 GKE-style cluster (nodes tainted `nvidia.com/gpu=present:NoSchedule`,
ExtendedResourceToleration on, a zone label on every node as the cloud sets it):

- `ts`: two L4 nodes of 2 GPUs the device plugin time-slices 4 ways, so each advertises
  `nvidia.com/gpu: 8` (GFD adds `nvidia.com/gpu.replicas: 4` and `-SHARED` to the product);
  the DRA driver publishes the 2 physical GPUs of each.
- `mig`: two A100-80GB nodes of 2 GPUs, GPU 0 split by the mixed strategy into 2 x 1g.10gb and
  1 x 3g.40gb (`nvidia.com/mig-1g.10gb: 2`, `nvidia.com/mig-3g.40gb: 1`, `nvidia.com/gpu: 1`);
  the DRA driver publishes those MIG devices and the whole GPU 1.

Workloads: two Deployments asking time-sliced `nvidia.com/gpu` (7 pods: they fit the 16
slices, not the 4 physical GPUs), and on the MIG pool a Deployment of 1g.10gb slices, a
StatefulSet with `updateStrategy: OnDelete` on a 3g.40gb slice, a Job on a whole GPU and a bare
Pod on a 1g.10gb slice; a quota on `requests.nvidia.com/mig-1g.10gb`; later (LATE) an OnDelete
StatefulSet on a 1g.10gb slice, made after its pool switched. MIG resources are not
`nvidia.com/gpu`, so ExtendedResourceToleration gives their pods no toleration of the GPU
taint: they carry their own, as users on tainted MIG pools do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.controlplane.nvidia import A100_80GB, L4, Machine
from tests.journey.fleets import (ADMISSION, GPU_TAINT, POOL_LABEL, Fleet, Pool, deployment, job,
                                  pod, statefulset)

ZONE_LABEL = "topology.kubernetes.io/zone"
_TOLERATE_GPU_TAINT = [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]


@dataclass(frozen=True)
class SharedPool(Pool):
    """A pool of nodes whose GPUs the device plugin shares: time-sliced `replicas` ways, or
    with a static MIG layout on GPU 0; in one zone."""

    zone: str = "us-central1-a"
    replicas: int = 1
    mig: tuple[tuple[str, int], ...] = ()

    def machines(self) -> dict[str, Machine]:
        return {f"gke-{self.name}-{index}": Machine(
            self.name, self.product, self.gpus_per_node, mig=self.mig,
            labels={POOL_LABEL: self.name, ZONE_LABEL: self.zone}, replicas=self.replicas)
            for index in range(self.nodes)}


def _pod_spec(pool: str, resource: str, count: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {POOL_LABEL: pool},
                            "containers": [{"name": "main", "image": "registry.example/cuda:12.4",
                                            "resources": {"limits": {resource: str(count)}}}]}
    if resource != "nvidia.com/gpu":
        spec["tolerations"] = _TOLERATE_GPU_TAINT
    return spec


def _on_delete(statefulset: dict[str, Any]) -> dict[str, Any]:
    statefulset["spec"]["updateStrategy"] = {"type": "OnDelete"}
    return statefulset


def mig_quota(namespace: str, name: str, slices: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": {"requests.nvidia.com/mig-1g.10gb": str(slices)}}}


def _sharing() -> Fleet:
    pools = (SharedPool("ts", L4, 2, 2, "us-central1-a", replicas=4),
             SharedPool("mig", A100_80GB, 2, 2, "us-central1-b",
                        mig=(("1g.10gb", 2), ("3g.40gb", 1))))
    objects = (
        mig_quota("ml", "mig-quota", 4),
        deployment("serving", "chat", 3, _pod_spec("ts", "nvidia.com/gpu")),
        deployment("serving", "burst", 4, _pod_spec("ts", "nvidia.com/gpu")),
        deployment("ml", "tiny", 2, _pod_spec("mig", "nvidia.com/mig-1g.10gb")),
        _on_delete(statefulset("ml", "mid", 1, _pod_spec("mig", "nvidia.com/mig-3g.40gb"))),
        job("ml", "whole", 1, _pod_spec("mig", "nvidia.com/gpu")),
        pod("ml", "probe", _pod_spec("mig", "nvidia.com/mig-1g.10gb")),
    )
    running = {("serving", "Deployment", "chat"): 3, ("serving", "Deployment", "burst"): 4,
               ("ml", "Deployment", "tiny"): 2, ("ml", "StatefulSet", "mid"): 1,
               ("ml", "Job", "whole"): 1, ("ml", "Pod", "probe"): 1}
    return Fleet(pools, ("serving", "ml", "lab"), objects, running, ADMISSION)


SHARING = _sharing()
# Created once the MIG pool is on DRA, from a manifest that still asks the device plugin: its
# pod waits (Pending), and cutover moves it in a wave that switches no node. OnDelete: that
# pod takes the converted template only when the runbook deletes it.
LATE = _on_delete(statefulset("lab", "late", 1, _pod_spec("mig", "nvidia.com/mig-1g.10gb")))
