"""kwok on the real control plane: what the journey relies on before any migration step.

A node kwok manages turns Ready; a pod the real scheduler binds to it runs and turns Ready,
whether it asked the device plugin's capacity (`nvidia.com/gpu` on the Node) or a DRA claim
the real scheduler allocated from a ResourceSlice. A node kwok does not manage is left alone.
"""

from __future__ import annotations

from typing import Any

from tests.controlplane.cluster import ControlPlane, path_for
from tests.journey.cluster import Cluster
from tests.controlplane.nvidia import A100_80GB, L4, Machine, device_plugin_node, dra_node
from tests.journey.kwok import NODE_ANNOTATION

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _kwok_node(node: dict[str, Any], taints: list[dict[str, str]]) -> dict[str, Any]:
    metadata = {**node["metadata"], "annotations": {NODE_ANNOTATION: "fake"}}
    # No Ready condition of our own: turning the node Ready is kwok's job here.
    return {**node, "metadata": metadata, "spec": {"taints": taints},
            "status": {key: value for key, value in node["status"].items()
                       if key != "conditions"}}


def _pod(name: str, resources: dict[str, Any], claims: list[dict[str, str]] | None = None,
         node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "registry.example/cuda:12", "resources":
                        resources}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "nodeSelector": node_selector or {},
    }
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name,
                                                              "namespace": "default"},
            "spec": spec}


def _node_ready(plane: ControlPlane, name: str) -> bool:
    node = plane.admin.get(f"/api/v1/nodes/{name}")
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions") or [])


def _running_and_ready(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    pod = plane.admin.get(f"/api/v1/namespaces/default/pods/{name}")
    status = pod.get("status", {})
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [])
    return pod if status.get("phase") == "Running" and ready else None


def test_kwok_runs_device_plugin_and_dra_pods(journey_cluster: Cluster) -> None:
    plane = journey_cluster.plane
    plugin_node = _kwok_node(device_plugin_node(Machine("a100", A100_80GB, 8), "dp-a100-0"),
                             [GPU_TAINT])
    plane.create_node(plugin_node)
    node, slice_ = dra_node(Machine("l4", L4, 4), "dra-l4-0")
    plane.create_node(_kwok_node(node, [GPU_TAINT]))
    plane.admin.create(path_for(slice_, "resourceslices"), slice_)
    for name in ("dp-a100-0", "dra-l4-0"):
        plane.wait(f"kwok to make {name} Ready", lambda name=name: _node_ready(plane, name))

    plane.admin.create("/api/v1/namespaces/default/pods",
                       _pod("plugin-pod", {"limits": {"nvidia.com/gpu": "2"}},
                            node_selector={"kubernetes.io/hostname": "dp-a100-0"}))
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}}
    plane.admin.create(path_for(template, "resourceclaimtemplates"), template)
    plane.admin.create("/api/v1/namespaces/default/pods", _pod(
        "dra-pod", {"claims": [{"name": "gpu"}]},
        claims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        node_selector={"kubernetes.io/hostname": "dra-l4-0"}))

    # Each pod is pinned to its node: the journey's other tests share this cluster.
    plane.wait("the device-plugin pod to run", lambda: _running_and_ready(plane, "plugin-pod"))
    dra_pod = plane.wait("the DRA pod to run", lambda: _running_and_ready(plane, "dra-pod"))
    claim_name = dra_pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = plane.admin.get(f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
                            f"{claim_name}")
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"]) for r in results] == [("gpu.nvidia.com", "dra-l4-0")]


def test_a_node_kwok_does_not_manage_is_left_alone(journey_cluster: Cluster) -> None:
    plane = journey_cluster.plane
    machine = Machine("a100", A100_80GB, 8)
    plane.create_node(_kwok_node(device_plugin_node(machine, "managed-1"), []))
    node = device_plugin_node(machine, "unmanaged-0")
    plane.create_node({**node, "status": {k: v for k, v in node["status"].items()
                                          if k != "conditions"}})
    plane.wait("kwok to make managed-1 Ready", lambda: _node_ready(plane, "managed-1"))
    assert not _node_ready(plane, "unmanaged-0")
