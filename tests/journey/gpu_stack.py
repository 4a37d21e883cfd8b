"""What the NVIDIA stack does on a node, played for the journey's kwok nodes.

kwok runs pods but no device plugin or DRA driver, so what those two tell the API server is
played here, from what is scheduled where, as the real components would:

- while a pod of the device-plugin DaemonSet runs on a node, the kubelet advertises the
  plugin's resources there (`status.capacity` and `status.allocatable`: `nvidia.com/gpu`, or
  `nvidia.com/mig-<profile>`); when it stops, they drop to 0 and then go, as the kubelet's
  device manager removes a resource whose plugin is gone;
- while a pod of the DRA driver's kubelet plugin runs on a node, that node's ResourceSlice
  exists, with the devices and attributes the driver publishes (tests/controlplane/nvidia.py);
  when it stops, the slice is deleted.

The DaemonSets are the GPU Operator's device plugin (node selector
`nvidia.com/gpu.deploy.device-plugin: "true"`) and the DRA driver chart's kubelet plugin
installed as docs/cutover.md says (`gpudra.io/gpu-stack: dra`), so a migration step that
relabels a node switches its stack through the real DaemonSet controller, scheduler and kwok.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from tests.controlplane.cluster import Client
from tests.controlplane.nvidia import Machine, device_plugin_capacity, dra_node
from tests.journey.reconciler import Reconciler

NAMESPACE = "gpu-operator"
PLUGIN_APP = "nvidia-device-plugin-daemonset"
DRA_APP = "nvidia-dra-driver-gpu-kubelet-plugin"
PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
DRA_LABEL = "gpudra.io/gpu-stack"
_TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _daemonset(name: str, app: str, selector: dict[str, str], image: str,
               container: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"nodeSelector": selector,
                                           "tolerations": _TOLERATE_GPU,
                                           "containers": [{"name": container,
                                                           "image": image}]}}}}


# The GPU Operator's device-plugin DaemonSet, and the DRA driver chart's kubelet plugin.
DEVICE_PLUGIN = _daemonset(PLUGIN_APP, PLUGIN_APP, {PLUGIN_LABEL: "true"},
                           "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "nvidia-device-plugin")
DRA_KUBELET_PLUGIN = _daemonset("nvidia-dra-driver-gpu-kubelet-plugin", DRA_APP,
                                {DRA_LABEL: "dra"},
                                "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0", "gpus")


class GpuStack(Reconciler):
    """Keeps each known node's device-plugin capacity and ResourceSlice in line with the
    plugin pods running on it, every `period` seconds, until stop()."""

    def __init__(self, client: Client, machines: Mapping[str, Machine],
                 period: float = 0.3, resource_version: str = "v1") -> None:
        super().__init__("gpu-stack", period)
        self._client = client
        # the resource.k8s.io version the cluster serves slices at (v1beta2 on 1.33)
        self._slices = f"/apis/resource.k8s.io/{resource_version}/resourceslices"
        self._resource_version = resource_version
        self._machines = dict(machines)

    def add(self, name: str, machine: Machine) -> None:
        self._machines[name] = machine

    def sync(self) -> None:
        """One pass: every known node's capacity and slice made to match its plugin pods."""
        running = self._running_plugins()
        slices = {s["spec"].get("nodeName"): s["metadata"]["name"] for s in self._client.get(
            self._slices)["items"]}
        for node, machine in list(self._machines.items()):
            self._sync_capacity(node, machine, (node, PLUGIN_APP) in running)
            self._sync_slice(node, machine, (node, DRA_APP) in running, slices.get(node))

    def _running_plugins(self) -> set[tuple[str, str]]:
        pods = self._client.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        return {(pod["spec"].get("nodeName"), pod["metadata"].get("labels", {}).get("app"))
                for pod in pods
                if pod.get("status", {}).get("phase") == "Running"
                and not pod["metadata"].get("deletionTimestamp")}

    def _sync_capacity(self, node: str, machine: Machine, plugin_runs: bool) -> None:
        wanted = device_plugin_capacity(machine) if plugin_runs else {}
        current = self._client.get(f"/api/v1/nodes/{quote(node)}")["status"]
        patch: dict[str, str | None] = {}
        for resource in set(device_plugin_capacity(machine)) | {
                key for key in current.get("capacity", {}) if key.startswith("nvidia.com/")}:
            if current.get("capacity", {}).get(resource) != wanted.get(resource):
                patch[resource] = wanted.get(resource)
        if patch:
            self._client.request("PATCH", f"/api/v1/nodes/{quote(node)}/status",
                                 {"status": {"capacity": patch, "allocatable": patch}},
                                 content_type="application/merge-patch+json")

    def _sync_slice(self, node: str, machine: Machine, driver_runs: bool,
                    existing: str | None) -> None:
        if driver_runs and existing is None:
            # v1beta2 devices have v1's shape (no `basic` wrapper): only the version differs.
            slice_ = {**dra_node(machine, node)[1],
                      "apiVersion": f"resource.k8s.io/{self._resource_version}"}
            self._client.create(self._slices, slice_)
        elif not driver_runs and existing is not None:
            self._client.delete(f"{self._slices}/{quote(existing)}")
