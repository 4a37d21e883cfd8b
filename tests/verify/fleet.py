"""Builders for live-cluster states (fake API server objects): nodes on either stack, their
ResourceSlices, workloads with their ReplicaSets, pods and claims, as the API server and the
controllers would have written them."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.nvidia.com"
H100 = "NVIDIA H100 80GB HBM3"
POOL_LABEL = "cloud.google.com/gke-nodepool"


def node(name: str, gpus: int, *, dra: bool = False, plugin: bool | None = None,
         pool: str | None = None, product: str = "NVIDIA-H100-80GB-HBM3",
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A GPU node. `plugin` (default: not `dra`): the device plugin advertises its GPUs."""
    plugin = (not dra) if plugin is None else plugin
    all_labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
                  "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus),
                  **({POOL_LABEL: pool} if pool else {}), **(labels or {})}
    resources = {"cpu": "64", "memory": "512Gi", **({"nvidia.com/gpu": str(gpus)}
                                                    if plugin else {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": all_labels},
            "status": {"capacity": dict(resources), "allocatable": dict(resources),
                       "nodeInfo": {"kubeletVersion": "v1.36.1",
                                    "containerRuntimeVersion": "containerd://2.1.4"}}}


def gpu_slice(node_name: str, gpus: int, *, product: str = H100,
              taints: dict[int, dict[str, str]] | None = None) -> dict[str, Any]:
    devices = []
    for index in range(gpus):
        device: dict[str, Any] = {
            "name": f"gpu-{index}",
            "attributes": {"type": {"string": "gpu"}, "productName": {"string": product},
                           "uuid": {"string": f"GPU-{node_name}-{index}"},
                           "driverVersion": {"version": "580.95.5"},
                           "cudaComputeCapability": {"version": "9.0.0"}},
            "capacity": {"memory": {"value": "81559Mi"}}}
        if taints and index in taints:
            device["taints"] = [taints[index]]
        devices.append(device)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def device_class(name: str = DRIVER) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression":
                                            "device.driver == 'gpu.nvidia.com' && "
                                            "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}


def template(namespace: str, name: str, *, count: int = 1, cls: str = DRIVER,
             selector: str | None = None, tolerations: list | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount",
                               "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def claim(namespace: str, name: str, *, devices: list[tuple[str, str]] = (),
          reserved: list[tuple[str, str]] = (), count: int = 1, cls: str = DRIVER,
          selector: str | None = None, owner: tuple[str, str] | None = None) -> dict[str, Any]:
    """A ResourceClaim; `devices` as (node, device) allocated from the node's pool, `reserved`
    as (pod name, pod uid)."""
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount",
                               "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner[0],
                                    "uid": owner[1], "controller": True}]
    status: dict[str, Any] = {}
    if devices:
        status["allocation"] = {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": n, "device": d} for n, d in devices]}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": u} for p, u in reserved]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
            "status": status}


def pod_spec(*, gpus: int = 0, template_name: str | None = None, claim_name: str | None = None,
             node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "ghcr.io/example/train:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"containers": [container]}
    if template_name or claim_name:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        entry = {"name": "gpu"}
        entry["resourceClaimTemplateName" if template_name else "resourceClaimName"] = \
            template_name or claim_name
        spec["resourceClaims"] = [entry]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return spec


def deployment(namespace: str, name: str, spec: dict[str, Any], replicas: int = 1,
               labels: dict[str, str] | None = None, kind: str = "Deployment"
               ) -> dict[str, Any]:
    group = "batch/v1" if kind == "Job" else "apps/v1"
    body: dict[str, Any] = {"template": {"metadata": {"labels": {"app": name}}, "spec": spec}}
    if kind != "Job":
        body.update(replicas=replicas, selector={"matchLabels": {"app": name}})
    else:
        body.update(parallelism=replicas, completions=replicas)
    return {"apiVersion": group, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "labels": {"app": name, **(labels or {})}},
            "spec": body}


def replicaset(deploy: dict[str, Any]) -> dict[str, Any]:
    meta = deploy["metadata"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta['name']}-rs", "namespace": meta["namespace"],
                         "uid": f"uid-{meta['name']}-rs",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": meta["name"], "uid": meta["uid"],
                                              "controller": True}]},
            "spec": {"replicas": deploy["spec"]["replicas"],
                     "selector": deploy["spec"]["selector"],
                     "template": deploy["spec"]["template"]}}


def pod(namespace: str, name: str, spec: dict[str, Any], *, owner: tuple[str, str] | None = None,
        phase: str = "Running", ready: bool = True, node_name: str | None = None,
        claims: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod as the kubelet reports it; `claims` maps the pod's claim entry to the generated
    ResourceClaim's name (status.resourceClaimStatuses)."""
    spec = dict(spec)
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1" if owner[0] != "Job" else
                                    "batch/v1", "kind": owner[0], "name": owner[1],
                                    "uid": f"uid-{owner[1]}", "controller": True}]
    status: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready and phase == "Running" else "False"}]}
    if claims:
        status["resourceClaimStatuses"] = [{"name": k, "resourceClaimName": v}
                                           for k, v in claims.items()]
    if phase == "Pending" and not node_name:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def failed_scheduling(namespace: str, pod_name: str, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod_name}.17f0", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod_name,
                               "uid": f"uid-{pod_name}", "apiVersion": "v1"},
            "reason": "FailedScheduling", "type": "Warning", "message": message,
            "source": {"component": "default-scheduler"},
            "lastTimestamp": "2026-12-01T10:00:00Z", "count": 3}


def plugin_daemonset(nodes: list[str], *, operator: bool = True) -> list[dict[str, Any]]:
    """The GPU Operator's device-plugin DaemonSet and its pods on `nodes`."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "gpu-operator",
                       "uid": "uid-nvidia-device-plugin-daemonset",
                       "labels": {"app": "nvidia-device-plugin-daemonset"}},
          "spec": {"selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}},
                   "template": {"metadata": {"labels": {"app": "nvidia-device-plugin-daemonset"}},
                                "spec": {"nodeSelector": {
                                    "nvidia.com/gpu.deploy.device-plugin": "true"},
                                    "containers": [{"name": "nvidia-device-plugin",
                                                    "image": "nvcr.io/nvidia/k8s-device-plugin:"
                                                             "v0.17.1"}]}}},
          "status": {"desiredNumberScheduled": len(nodes), "numberReady": len(nodes)}}
    pods = [pod("gpu-operator", f"nvidia-device-plugin-{n}", ds["spec"]["template"]["spec"],
                owner=("DaemonSet", "nvidia-device-plugin-daemonset"), node_name=n)
            for n in nodes]
    return [ds, *pods]


def state(*objects: Any, version: str = "1.36.1", **extra: Any) -> dict[str, Any]:
    flat: list[dict[str, Any]] = []
    for obj in objects:
        flat.extend(obj if isinstance(obj, list) else [obj])
    return {"version": version, "objects": flat, "auto_namespaces": True, **extra}
