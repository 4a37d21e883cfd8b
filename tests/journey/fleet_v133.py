"""The journey's 1.33 cluster, as data: issue 32's third cluster, a GKE-style Kubernetes 1.33
cluster with DRA switched on as 1.33 needs it (beta: the DynamicResourceAllocation gate on every
component, resource.k8s.io v1beta1 and v1beta2 enabled, no v1: tests/controlplane/releases.py).

Two pools (A100-80GB and L4, two nodes of four GPUs each) tainted as GKE taints GPU nodes,
with a Deployment, a StatefulSet, a Job with parallelism 2, a bare Pod and a
`requests.nvidia.com/gpu` quota on them. gpudra must write resource.k8s.io/v1beta2 for it
without being told (a live command targets the live cluster's release).
"""

from __future__ import annotations

from tests.controlplane.nvidia import A100_80GB, L4
from tests.controlplane.releases import V1_33
from tests.journey.fleets import (
    ADMISSION,
    Fleet,
    Pool,
    deployment,
    job,
    pod,
    pod_spec,
    quota,
    statefulset,
)

RELEASE = V1_33
API_VERSION = f"resource.k8s.io/{RELEASE.resource_version}"  # what gpudra must write here


def _v133() -> Fleet:
    pools = (Pool("a100", A100_80GB, 2, 4), Pool("l4", L4, 2, 4))
    objects = (
        quota("ml", "gpu-quota", 8),
        deployment("serving", "llm", 2, pod_spec(A100_80GB, 1)),
        statefulset("serving", "embed", 1, pod_spec(L4, 1)),
        job("ml", "train", 2, pod_spec(A100_80GB, 2)),
        pod("ml", "debug", pod_spec(L4, 1)),
    )
    running = {("serving", "Deployment", "llm"): 2, ("serving", "StatefulSet", "embed"): 1,
               ("ml", "Job", "train"): 2, ("ml", "Pod", "debug"): 1}
    return Fleet(pools, ("serving", "ml"), objects, running, ADMISSION)


V133 = _v133()
