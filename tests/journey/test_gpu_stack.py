"""The GPU-stack stand-in switches a node the way the runbook's labels do on a real cluster:
the real DaemonSet controller places the plugin pods, kwok runs them, and the node then shows
device-plugin capacity or a ResourceSlice, never both once the switch has settled."""

from __future__ import annotations

from typing import Any

from tests.controlplane.cluster import ControlPlane
from tests.journey.cluster import Cluster
from tests.controlplane.nvidia import A100_80GB, Machine, dra_node
from tests.journey.gpu_stack import DRA_LABEL, PLUGIN_LABEL
from tests.journey.kwok import NODE_ANNOTATION


def _gpu_capacity(plane: ControlPlane, node: str) -> str | None:
    return plane.admin.get(f"/api/v1/nodes/{node}")["status"].get("capacity", {}).get(
        "nvidia.com/gpu")


def _slice_devices(plane: ControlPlane, node: str) -> int | None:
    for item in plane.admin.get("/apis/resource.k8s.io/v1/resourceslices")["items"]:
        if item["spec"].get("nodeName") == node:
            return len(item["spec"]["devices"])
    return None


def _label(plane: ControlPlane, node: str, labels: dict[str, Any]) -> None:
    plane.admin.request("PATCH", f"/api/v1/nodes/{node}", {"metadata": {"labels": labels}},
                        content_type="application/merge-patch+json")


def test_relabelling_a_node_moves_it_from_the_device_plugin_to_dra(
        journey_cluster: Cluster) -> None:
    plane, gpu_stack = journey_cluster.plane, journey_cluster.stack
    machine = Machine("a100", A100_80GB, 8)
    node = dra_node(machine, "switch-0")[0]  # no GPU capacity until the plugin runs there
    node["metadata"]["labels"][PLUGIN_LABEL] = "true"
    node["metadata"]["annotations"] = {NODE_ANNOTATION: "fake"}
    node["status"].pop("conditions")
    gpu_stack.add("switch-0", machine)
    plane.create_node(node)

    plane.wait("the device plugin to advertise 8 GPUs",
               lambda: _gpu_capacity(plane, "switch-0") == "8")
    assert _slice_devices(plane, "switch-0") is None

    _label(plane, "switch-0", {PLUGIN_LABEL: "false", DRA_LABEL: "dra"})
    plane.wait("the DRA driver to publish the node's 8 GPUs",
               lambda: _slice_devices(plane, "switch-0") == 8)
    plane.wait("the device-plugin capacity to go", lambda: _gpu_capacity(plane, "switch-0")
               is None)

    _label(plane, "switch-0", {PLUGIN_LABEL: "true", DRA_LABEL: None})
    plane.wait("the slice to go on rollback", lambda: _slice_devices(plane, "switch-0") is None)
    plane.wait("the device plugin back", lambda: _gpu_capacity(plane, "switch-0") == "8")
    assert gpu_stack.errors == []
