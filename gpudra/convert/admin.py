"""Admin access for monitoring DaemonSets (KEP-5018), offered by `convert --admin-access`.

A dcgm-exporter style agent sees every GPU of its node through `NVIDIA_VISIBLE_DEVICES=all`
without requesting one. Under DRA the runtime injects allocated devices only, so the agent gets
a claim of its own: one request for all devices of class `gpu.nvidia.com` with `adminAccess:
true`, which is allocated without taking the devices from the workloads' claims. The API
server accepts it only in a namespace labelled `resource.kubernetes.io/admin-access: "true"`,
which convert says in a note rather than editing a Namespace it may not own. The NVIDIA GPU
Operator's DRA dcgm claim has the same shape (`manifests/state-dcgm/0400_resourceclaimtemplate
.yaml`: request `admin-gpus`, class `gpu.nvidia.com`, `allocationMode: All`, `adminAccess:
true`).
"""

from __future__ import annotations

from gpudra.k8s.gpu_use import ContainerUse, PodSpecUse

POD_CLAIM = "gpu-admin"
REQUEST = "admin-gpus"
NAMESPACE_LABEL = 'resource.kubernetes.io/admin-access: "true"'
KINDS = frozenset({"DaemonSet"})


def monitors(pod: PodSpecUse) -> list[ContainerUse]:
    """The containers of `pod` that see GPUs they do not request (ContainerUse records)."""
    return [c for c in pod.containers if c.sees_unrequested_gpus]
