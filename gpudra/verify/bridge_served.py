"""Whether the KEP-5004 bridge would serve a GPU workload that has no pods now (a CronJob
between runs, a Deployment scaled to 0): its next pods ask only `nvidia.com/gpu`, a
DeviceClass maps that name, and every GPU node its pods may use publishes ResourceSlices and
advertises no device-plugin `nvidia.com/gpu` (the scheduler serves a mapped name through DRA
only on a node without device-plugin capacity for it: docs/facts.md). Such a workload is on
the bridge, as its pods will be; anywhere else its next pod would take the device plugin's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.gpu_use import advertised_device_plugin_resources, read_object
from gpudra.k8s.node_selection import selects_node
from gpudra.k8s.objects import ClusterObject, as_mapping, dig
from gpudra.sources.live import device_plugin_names
from gpudra.verify.collect import ClusterState
from gpudra.k8s.workloads import WorkloadTable

BRIDGED_NAME = "nvidia.com/gpu"


def bridge_serves(workload: ClusterObject, state: ClusterState, table: WorkloadTable) -> bool:
    if not any(dig(c, "spec", "extendedResourceName") == BRIDGED_NAME for c in state.classes):
        return False
    specs = [p.spec.data for p in read_object(table, workload.group, workload.kind,
                                              workload.data, strays=False).pods]
    asked = {name for spec in specs for name in device_plugin_names({"spec": spec})}
    if asked != {BRIDGED_NAME}:
        return False
    publishing = {str(dig(s, "spec", "nodeName")) for s in state.slices
                  if dig(s, "spec", "nodeName") and dig(s, "spec", "devices")}
    gpu_nodes = [n for n in state.nodes if _name(n) in publishing
                 or advertised_device_plugin_resources(n)]
    for spec in specs:
        if not device_plugin_names({"spec": spec}):
            continue
        usable = [n for n in gpu_nodes
                  if selects_node(spec, _labels(n), _name(n))]
        if not usable or any(_name(n) not in publishing
                             or BRIDGED_NAME in advertised_device_plugin_resources(n)
                             for n in usable):
            return False
    return True


def _name(node: Mapping[str, Any]) -> str:
    return str(dig(node, "metadata", "name"))


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_mapping(dig(node, "metadata", "labels")).items()}


def mapped_quota_keys(state: ClusterState) -> frozenset[str]:
    """The quota keys (as keys_on_device_plugin words them) that keep counting once the
    device plugin is gone: `requests.nvidia.com/gpu` counts the bridge's claims while a
    DeviceClass maps the name (kubernetes.io Resource Quotas, docs/facts.md)."""
    if any(dig(c, "spec", "extendedResourceName") == BRIDGED_NAME for c in state.classes):
        return frozenset({f"hard requests.{BRIDGED_NAME}"})
    return frozenset()
