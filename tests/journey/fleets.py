"""The clusters the journey migrates, as data: node pools and the workloads on them.

`GKE` is issue 32's first cluster: a 1.37 GKE-style cluster with three pools (A100-80GB, H100,
L4; two nodes of four GPUs each), tainted `nvidia.com/gpu=present:NoSchedule` with the
ExtendedResourceToleration admission plugin on (so GPU pods tolerate the taint without saying
so, as on GKE); Deployments with replicas and GFD node selectors, a Job with a GPU init
container and parallelism 2, a StatefulSet, a bare Pod, a CronJob, a Deployment scaled to 0,
and a `requests.nvidia.com/gpu` quota.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.controlplane.nvidia import A100_80GB, H100_80GB, L4, Machine, Product, dra_node
from tests.journey.gpu_stack import PLUGIN_LABEL
from tests.journey.kwok import NODE_ANNOTATION

POOL_LABEL = "cloud.google.com/gke-nodepool"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
ADMISSION = ("--enable-admission-plugins", "ExtendedResourceToleration")
IMAGE = "registry.example/cuda:12.4"


@dataclass(frozen=True)
class Pool:
    name: str
    product: Product
    nodes: int
    gpus_per_node: int

    def machines(self) -> dict[str, Machine]:
        return {f"gke-{self.name}-{index}": Machine(self.name, self.product,
                                                    self.gpus_per_node,
                                                    labels={POOL_LABEL: self.name})
                for index in range(self.nodes)}


@dataclass(frozen=True)
class Fleet:
    pools: tuple[Pool, ...]
    namespaces: tuple[str, ...]
    objects: tuple[dict[str, Any], ...]  # created in this order
    # (namespace, top owner kind, name) -> GPU pods that run on the device plugin before
    running_before: dict[tuple[str, str, str], int] = field(default_factory=dict)
    apiserver_args: tuple[str, ...] = ()

    def machines(self) -> dict[str, Machine]:
        return {name: machine for pool in self.pools
                for name, machine in pool.machines().items()}


def node(name: str, machine: Machine) -> dict[str, Any]:
    """A kwok node of `machine` with the device plugin scheduled (its capacity is the stack's
    to add), tainted as GKE taints GPU nodes."""
    obj = dra_node(machine, name)[0]
    obj["metadata"]["labels"][PLUGIN_LABEL] = "true"
    obj["metadata"]["annotations"] = {NODE_ANNOTATION: "fake"}
    obj["spec"] = {"taints": [GPU_TAINT]}
    obj["status"].pop("conditions")
    return obj


def _container(name: str, gpus: int) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}


def _pod_spec(product: Product, gpus: int, init_gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {"nvidia.com/gpu.product": product.label},
                            "containers": [_container("main", gpus)]}
    if init_gpus:
        spec["initContainers"] = [_container("warmup", init_gpus)]
    return spec


pod_spec = _pod_spec  # the other clusters' fleets (fleet_*.py) build their pods the same way


def _meta(namespace: str, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"app": name}}


def _template(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}}, "spec": spec}


def deployment(namespace: str, name: str, replicas: int, spec: dict[str, Any]
               ) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(namespace, name),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": _template(name, spec)}}


def statefulset(namespace: str, name: str, replicas: int, spec: dict[str, Any]
                ) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta(namespace, name),
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}},
                     "template": _template(name, spec)}}


def job(namespace: str, name: str, parallelism: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(namespace, name),
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "template": _template(name, {**spec, "restartPolicy": "Never"})}}


def cronjob(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(namespace, name),
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": _template(
                name, {**spec, "restartPolicy": "OnFailure"})}}}}


def pod(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(namespace, name), "spec": spec}


def quota(namespace: str, name: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name,
                                                                     "namespace": namespace},
            "spec": {"hard": {"requests.nvidia.com/gpu": str(gpus)}}}


def _gke() -> Fleet:
    pools = (Pool("a100", A100_80GB, 2, 4), Pool("h100", H100_80GB, 2, 4), Pool("l4", L4, 2, 4))
    objects = (
        quota("ml", "gpu-quota", 16),
        deployment("serving", "llm", 2, _pod_spec(H100_80GB, 1)),
        deployment("serving", "embed", 2, _pod_spec(L4, 1)),
        deployment("serving", "idle", 0, _pod_spec(L4, 1)),
        job("ml", "train", 2, _pod_spec(A100_80GB, 2, init_gpus=1)),
        statefulset("ml", "notebook", 1, _pod_spec(A100_80GB, 1)),
        pod("ml", "debug", _pod_spec(L4, 1)),
        cronjob("batch", "nightly", _pod_spec(H100_80GB, 1)),
    )
    running = {("serving", "Deployment", "llm"): 2, ("serving", "Deployment", "embed"): 2,
               ("ml", "Job", "train"): 2, ("ml", "StatefulSet", "notebook"): 1,
               ("ml", "Pod", "debug"): 1}
    return Fleet(pools, ("serving", "ml", "batch"), objects, running, ADMISSION)


GKE = _gke()
