"""GPU8xx: the state of GPU nodes, as a live cluster shows it.

These rules read Nodes (with the pods that hold device-plugin GPUs on them), ResourceSlices,
ResourceClaims and DaemonSets. They fire on what a cluster audit reads
(a manifest tree rarely holds Nodes), and on a device-plugin DaemonSet in either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.dra.allocations import unpublished_allocations
from gpudra.dra.emit import NVIDIA_DRIVER
from gpudra.k8s.gpu_use import device_plugin_total
from gpudra.results.model import Severity
from gpudra.k8s.objects import SourceObject, dig, plural
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets
from gpudra.rules.base import AuditContext, Checker, rule

CATEGORY = "cluster"

GPU801 = rule(
    "GPU801", "node-double-counting", Severity.ERROR, CATEGORY,
    "A node serves its GPUs through the device plugin and DRA at once: it advertises "
    "nvidia.com/gpu, or its pods still hold device-plugin GPUs, while its GPUs are published in "
    "DRA ResourceSlices; or it advertises nvidia.com/gpu while a claim in use holds one of its "
    "GPUs that the DRA driver no longer publishes.",
    "Run either the device plugin or the DRA GPU plugin on a node, never both, and drain the "
    "pods of one before the other starts.",
)

GPU802 = rule(
    "GPU802", "device-plugin-daemonset", Severity.WARNING, CATEGORY,
    "The NVIDIA device plugin DaemonSet runs: it advertises nvidia.com/gpu on its nodes.",
    "Keep it off nodes whose GPUs the DRA driver publishes.",
)

GPU803 = rule(
    "GPU803", "device-plugin-gpus-held", Severity.INFO, CATEGORY,
    "Running pods on this node hold GPUs from the device plugin.",
    "Drain or let these pods finish before moving the node to DRA.",
)


class ClusterState(Checker):
    rules = (GPU801, GPU802, GPU803)

    def __init__(self) -> None:
        self._advertising: dict[str, tuple[SourceObject, int]] = {}
        self._holding: dict[str, tuple[SourceObject, tuple[str, ...]]] = {}
        self._publishing: set[str] = set()
        self._slices: list[Mapping[str, Any]] = []
        self._claims: list[Mapping[str, Any]] = []

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        if obj.kind == "Node" and obj.group == "":
            self._node(obj, ctx)
        elif obj.kind == "ResourceSlice" and obj.group == "resource.k8s.io":
            node = dig(obj.data, "spec", "nodeName")
            if dig(obj.data, "spec", "driver") == NVIDIA_DRIVER:
                self._slices.append(obj.data)
                if isinstance(node, str):
                    self._publishing.add(node)
        elif obj.kind == "ResourceClaim" and obj.group == "resource.k8s.io" and \
                dig(obj.data, "status", "allocation") is not None:
            self._claims.append(obj.data)
        elif obj.kind == "DaemonSet" and obj.group == "apps" and is_device_plugin(obj.data):
            desired = dig(obj.data, "status", "desiredNumberScheduled")
            ready = dig(obj.data, "status", "numberReady")
            ctx.emit(GPU802, obj, _plugin_message(obj, desired, ready),
                     path=("spec", "template", "spec"))

    def finish(self, ctx: AuditContext) -> None:
        for name, (node, gpus) in sorted(self._advertising.items()):
            if name in self._publishing:
                ctx.emit(GPU801, node, f"node {name} advertises {gpus} × nvidia.com/gpu and "
                         f"publishes {NVIDIA_DRIVER} ResourceSlices: a device-plugin pod and a "
                         "claim can get the same GPU", path=("status", "allocatable"),
                         resource="nvidia.com/gpu", quantity=gpus)
        # A node labelled before it was drained: its allocatable no longer shows the plugin's
        # GPUs, but the pods that got them keep them while the driver publishes them.
        for name, (node, holders) in sorted(self._holding.items()):
            if name in self._publishing and name not in self._advertising:
                ctx.emit(GPU801, node, f"node {name} publishes {NVIDIA_DRIVER} ResourceSlices "
                         f"while {plural(len(holders), 'pod')} still "
                         f"{'holds' if len(holders) == 1 else 'hold'} device-plugin GPUs on "
                         f"it ({_shown(holders)}): a claim can get a GPU such a pod uses",
                         hint="drain the node before the label that starts the DRA driver on it")
        # A node back on the device plugin before its claim pods were drained.
        for stale in unpublished_allocations(self._claims, self._slices):
            if stale.node is not None and stale.node in self._advertising:
                node, gpus = self._advertising[stale.node]
                ctx.emit(GPU801, node, f"node {stale.node} advertises {gpus} × nvidia.com/gpu "
                         f"while claim {stale.claim} (used by {', '.join(stale.users)}) still "
                         f"holds {stale.device}, which {NVIDIA_DRIVER} no longer publishes: the "
                         "device plugin can give that GPU to another pod",
                         path=("status", "allocatable"), resource="nvidia.com/gpu",
                         quantity=gpus,
                         hint="drain the claim's pods before the node goes back to the device "
                              "plugin")

    def _node(self, obj: SourceObject, ctx: AuditContext) -> None:
        gpus = _advertised(obj.data)
        if gpus:
            self._advertising[obj.name or ""] = (obj, gpus)
        holders = obj.cluster.gpu_holders if obj.cluster is not None else ()
        if holders:
            self._holding[obj.name or ""] = (obj, holders)
            verb = "holds" if len(holders) == 1 else "hold"
            ctx.emit(GPU803, obj, f"node {obj.name}: {plural(len(holders), 'pod')} {verb} "
                     f"device-plugin GPUs: {_shown(holders)}")


def _shown(holders: tuple[str, ...]) -> str:
    return ", ".join(holders[:5]) + (f" and {len(holders) - 5} more" if len(holders) > 5
                                     else "")


def _plugin_message(obj: SourceObject, desired: Any, ready: Any) -> str:
    """What the device-plugin DaemonSet does, in terms that agree with the pods read (the
    table prints their count beside it)."""
    if obj.source != "cluster" or not isinstance(desired, int):
        return "this DaemonSet deploys the NVIDIA device plugin: it advertises nvidia.com/gpu " \
               "on its nodes"
    if desired == 0:
        return ("the NVIDIA device plugin DaemonSet is scheduled on no node: it advertises "
                "nvidia.com/gpu on every node its selector comes to match")
    running = obj.cluster.running_pods if obj.cluster is not None else None
    seen = "" if running is None or running == ready else \
        f"; {running} of its pods seen running among the pods read"
    return (f"the NVIDIA device plugin is scheduled on {plural(desired, 'node')} (status: "
            f"{ready} ready{seen}): it advertises nvidia.com/gpu on its nodes")


def _advertised(node: Mapping[str, Any]) -> int:
    return device_plugin_total(dig(node, "status", "allocatable"))


def is_device_plugin(daemonset: Mapping[str, Any]) -> bool:
    """The NVIDIA device plugin (standalone chart, GPU Operator or a static manifest), as
    preflight recognises it: by name, labels, command or image (GFD and MPS excluded)."""
    return bool(device_plugin_daemonsets([daemonset]))
