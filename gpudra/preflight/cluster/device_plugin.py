"""CLUSTER007-008: where the NVIDIA device plugin runs, and nodes that hand out GPUs twice.

Device-plugin DaemonSets are recognised by gpudra.k8s.plugin_daemonsets (the names, labels and
images it knows are listed there; the audit rules use the same matcher). The GPU Operator
switches the plugin off on a node with the label `nvidia.com/gpu.deploy.device-plugin`.

Double counting (docs/dra-reference.md section 5; the driver chart's `templates/validation.yaml`
"cannot be deployed alongside the standard GPU device plugin on the same node"): a node must not
offer the same GPUs through a device plugin and a DRA driver; different nodes may differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpudra.dra.allocations import unpublished_allocations
from gpudra.dra.emit import NVIDIA_DRIVER
from gpudra.k8s.object_fields import (
    daemonset_status,
    labels_of,
    owned_pods,
    pod_node,
    workload_name,
)
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.driver import driver_daemonsets
from gpudra.preflight.cluster.nodes import (
    NodeFacts,
    label_selector_matches,
    named,
)
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import (
    DAEMONSETS,
    GPU_HOLDERS,
    NODES,
    PODS,
    RESOURCECLAIMS,
    RESOURCESLICES,
    ClusterSnapshot,
    unreadable,
)
from gpudra.sources.live import device_plugin_holding

OPERATOR_SWITCH_LABEL = "nvidia.com/gpu.deploy.device-plugin"

CLUSTER007 = check(
    "CLUSTER007", "Device-plugin DaemonSet and its nodes", Tier.CLUSTER,
    "Finds the NVIDIA device plugin (GPU Operator, Helm chart or static manifest) and the nodes "
    "it serves.",
    """
**Why it matters.** A migration moves nodes (or node pools) from the device plugin to the
DRA driver; the device plugin must stop on a node before the DRA driver serves it (CLUSTER008).
gpudra finds the device plugin by the GPU Operator's and the Helm chart's names and labels,
or by its image (`k8s-device-plugin`) running the `nvidia-device-plugin` command or mounting
`/var/lib/kubelet/device-plugins`. The GPU Feature Discovery and MPS DaemonSets of the chart
use the same image and are left out. It lists the nodes the plugin runs on (from its pods,
or from its nodeSelector when pods cannot be read).

How to take a node off the device plugin: with the GPU Operator, label the node
`nvidia.com/gpu.deploy.device-plugin=false`; with the Helm chart, give it a node affinity
that excludes the nodes you move (for example by a label you put on migrated nodes).

**Outcomes.** *pass*: the device plugin was found (the message lists its nodes), or there is
no device plugin and no node offers device-plugin GPUs (migrated). *warn*: nodes offer
`nvidia.com/gpu` (or MIG/shared resources) but no device-plugin DaemonSet was recognised, or
the ones found are scheduled on no node (renamed or unknown plugin, or stale node capacity).
*unavailable*: DaemonSets or nodes could
not be listed.

**Fix.** Identify the DaemonSet that serves the listed nodes
(`kubectl get ds -A -o wide | grep -i device-plugin`).
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.UNAVAILABLE))

CLUSTER008 = check(
    "CLUSTER008", "No node serves GPUs through both the device plugin and DRA", Tier.CLUSTER,
    "A node that offers `nvidia.com/gpu` must not also publish `gpu.nvidia.com` devices.",
    """
**Why it matters.** The device plugin and the DRA driver each hand out every GPU of a node,
without knowing about the other. On a node where both run, a pod requesting `nvidia.com/gpu`
and a pod with a ResourceClaim can be given the **same** GPU. Kubernetes requires that a node
does not offer the same devices through both (KEP-5004), and the NVIDIA DRA driver chart
refuses GPU allocation by default for this reason. Different nodes may use different paths.

gpudra flags a node that offers device-plugin resources (`nvidia.com/gpu`, `nvidia.com/mig-*`,
`*.shared`, allocatable > 0) and publishes `gpu.nvidia.com` devices in ResourceSlices, and,
when pods can be read, a node running both a device-plugin pod and a DRA driver pod. It also
flags the two windows of a switch in which capacity and slices look apart while GPUs are still
given twice:

- a node that publishes `gpu.nvidia.com` devices while pods still hold its device-plugin GPUs
  (Running or Pending there, not served by the KEP-5004 bridge): it was labelled before it was
  drained. Its `nvidia.com/gpu` allocatable is already 0, but those pods keep their GPUs and
  the driver offers the same GPUs to claims. gpudra lists the pods of every namespace for
  this, only when a node publishes, and keeps only those.
- a node that offers device-plugin GPUs again while a claim in use (reserved for a pod) still
  holds one of its devices that the driver no longer publishes: it went back to the device
  plugin before its claim pods were drained, and the device plugin hands that GPU out again.

**Outcomes.** *pass*: no node does any of these. *fail*: the message names the nodes, the
details say which pods or claims. *unavailable*: nodes or ResourceSlices could not be listed,
or, with nothing found, the pods (while a node publishes) or the claims (while a node offers
device-plugin GPUs) could not be.

**Fix.** Drain a node (its device-plugin pods gone) before the label that starts the DRA driver
on it, and drain its claim pods before it goes back to the device plugin, as the runbook does;
take the node off the device plugin first (CLUSTER007), check that `nvidia.com/gpu` is gone
from its allocatable (`kubectl get node <node> -o jsonpath='{.status.allocatable}'`), then let
the DRA driver serve it.
""",
    (CheckOutcome.PASS, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def _plugin_nodes(ds: Mapping[str, Any], pods: tuple[Mapping[str, Any], ...] | None,
                  nodes: tuple[Mapping[str, Any], ...], scope: str | None
                  ) -> tuple[list[str], str]:
    """Nodes the DaemonSet runs on, and how that was learned."""
    if pods is not None:
        found = sorted({pod_node(p) for p in owned_pods(pods, ds)})
        scheduled_nowhere = dig(ds, "status", "desiredNumberScheduled") == 0
        if found or scheduled_nowhere:
            return found, "from its pods"
    unseen = "its pods are not among the pods read" if pods is not None else "pods not read"
    how = f"from its nodeSelector ({unseen}; affinity and taints not evaluated)"
    if scope:
        how += f" (pods read: {scope})"
    selector = as_mapping(dig(ds, "spec", "template", "spec", "nodeSelector"))
    matching = sorted(str(dig(n, "metadata", "name")) for n in nodes
                      if label_selector_matches(selector, labels_of(n)))
    return matching, how


def check_device_plugin(snapshot: ClusterSnapshot,
                        options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    daemonsets, nodes = snapshot.listing(DAEMONSETS), snapshot.listing(NODES)
    if daemonsets.items is None:
        return unreadable(CLUSTER007, "DaemonSets", daemonsets, "daemonsets.apps in all namespaces")
    facts = snapshot.node_facts
    if nodes.items is None or facts is None:
        return unreadable(CLUSTER007, "nodes", nodes, "nodes")
    plugins = device_plugin_daemonsets(daemonsets.items)
    offering = [f.name for f in facts if f.device_plugin_resources]
    offering_text = (f"{plural(len(offering), 'node')} "
                     f"{'offers' if len(offering) == 1 else 'offer'} device-plugin GPUs"
                     if offering else "no node offers device-plugin GPUs")
    if not plugins:
        if offering:
            return result(CLUSTER007, CheckOutcome.WARN,
                          f"{offering_text} ({named(offering)}) but no device-plugin DaemonSet "
                          "was recognised",
                          "kubectl get daemonsets -A -o wide | grep -i device-plugin",
                          details=[f"offering: {', '.join(offering)}"])
        return result(CLUSTER007, CheckOutcome.PASS,
                      "no device-plugin DaemonSet and no node offers device-plugin GPUs")
    pod_listing = snapshot.listing(PODS)
    pods = pod_listing.items
    details = []
    summaries = []
    idle = 0
    for ds in plugins:
        status = daemonset_status(ds)
        if status.desired == 0:  # its selector matches no node: it serves none
            idle += 1
            summaries.append(f"{workload_name(ds)} scheduled on no node")
            details.append(f"{workload_name(ds)}: desiredNumberScheduled is 0")
            continue
        where, how = _plugin_nodes(ds, pods, nodes.items, pod_listing.scope)
        selector = as_mapping(dig(ds, "spec", "template", "spec", "nodeSelector"))
        summaries.append(f"{workload_name(ds)} on {plural(len(where), 'node')}")
        details.append(f"{workload_name(ds)}: {status.ready}/{plural(status.desired, 'pod')} "
                       f"ready; nodes {how}: {', '.join(where) or 'none'}")
        if OPERATOR_SWITCH_LABEL in selector:
            details.append(f"{workload_name(ds)}: take a node off it with `kubectl label node "
                           f"<node> {OPERATOR_SWITCH_LABEL}=false --overwrite`")
        else:
            details.append(f"{workload_name(ds)}: take nodes off it with a node affinity in the "
                           "chart values that excludes them")
    if idle == len(plugins) and offering:
        return result(CLUSTER007, CheckOutcome.WARN,
                      f"device plugin: {'; '.join(summaries)}, yet {offering_text} "
                      f"({named(offering)}): another plugin serves them, or their capacity is "
                      "stale",
                      "kubectl get daemonsets -A -o wide | grep -i device-plugin",
                      details=details + [f"offering: {', '.join(offering)}"])
    return result(CLUSTER007, CheckOutcome.PASS,
                  f"device plugin: {'; '.join(summaries)}; {offering_text}", details=details)


def check_double_counting(snapshot: ClusterSnapshot,
                          options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    facts, slices = snapshot.node_facts, snapshot.listing(RESOURCESLICES)
    if facts is None:
        return unreadable(CLUSTER008, "nodes", snapshot.listing(NODES), "nodes")
    if slices.items is None:
        return unreadable(CLUSTER008, "ResourceSlices", slices, "resourceslices.resource.k8s.io")
    both: dict[str, list[str]] = {}
    for f in facts:
        if f.device_plugin_resources and f.slice_devices:
            both.setdefault(f.name, []).append(
                f"offers {', '.join(sorted(f.device_plugin_resources))} and publishes "
                f"{f.slice_devices} {NVIDIA_DRIVER} devices")
    for name, why in _nodes_running_both(snapshot).items():
        both.setdefault(name, [why])
    windows, unknown = _switch_windows(snapshot, facts, slices.items)
    for name, why in windows:
        both.setdefault(name, []).append(why)
    details = [f"{name}: {'; '.join(why)}" for name, why in sorted(both.items())]
    if both:
        return result(CLUSTER008, CheckOutcome.FAIL,
                      f"{plural(len(both), 'node')} {'serves' if len(both) == 1 else 'serve'} "
                      "GPUs through both "
                      f"the device plugin and DRA ({named(sorted(both))}): one GPU can be given "
                      "to two pods",
                      "drain a node's device-plugin pods before it publishes DRA devices, and "
                      "its claim pods before it goes back to the device plugin; take these "
                      "nodes off the device plugin (CLUSTER007) or off the DRA driver",
                      details=details)
    if unknown:
        return result(CLUSTER008, CheckOutcome.UNAVAILABLE,
                      f"no node offers device-plugin GPUs and publishes DRA devices, but {unknown}",
                      "grant list on pods and resourceclaims.resource.k8s.io in all namespaces")
    return result(CLUSTER008, CheckOutcome.PASS,
                  "no node serves GPUs through both the device plugin and DRA")


def _switch_windows(snapshot: ClusterSnapshot, facts: Sequence[NodeFacts],
                    slices: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[str, str]], str]:
    """The two windows of a node's switch in which it serves GPUs twice although its capacity
    and slices look apart: it publishes DRA devices while pods still hold its device-plugin
    GPUs (labelled before drained), or it offers device-plugin GPUs while a claim in use still
    holds one of its devices the driver no longer publishes (switched back before its claim
    pods were drained). Returns (node, why) pairs, and what could not be judged ("" when
    everything could)."""
    found: list[tuple[str, str]] = []
    unknown: list[str] = []
    publishing = {f.name: f.slice_devices for f in facts if f.slice_devices}
    if publishing:
        holders = snapshot.listing(GPU_HOLDERS)
        if holders.items is None:
            unknown.append(f"whether pods hold device-plugin GPUs on the "
                           f"{plural(len(publishing), 'node')} that "
                           f"{'publishes' if len(publishing) == 1 else 'publish'} DRA devices is "
                           f"unknown ({holders.reason})")
        else:
            held: dict[str, list[str]] = {}
            for pod in holders.items:
                holding = device_plugin_holding(pod)
                if holding is not None and holding[0] in publishing:
                    held.setdefault(holding[0], []).append(
                        f"{dig(pod, 'metadata', 'namespace')}/{dig(pod, 'metadata', 'name')} "
                        f"({holding[1]})")
            for node, pods in sorted(held.items()):
                found.append((node, (f"publishes {publishing[node]} {NVIDIA_DRIVER} devices "
                                     f"while {plural(len(pods), 'pod')} still "
                                     f"{'holds' if len(pods) == 1 else 'hold'} device-plugin "
                                     f"GPUs on it: {', '.join(sorted(pods))}")))
    offering = {f.name: f.device_plugin_resources for f in facts if f.device_plugin_resources}
    if offering:
        claims = snapshot.listing(RESOURCECLAIMS)
        if claims.items is None:
            unknown.append(f"whether claims still hold devices on the "
                           f"{plural(len(offering), 'node')} that "
                           f"{'offers' if len(offering) == 1 else 'offer'} device-plugin GPUs is "
                           f"unknown ({claims.reason})")
        else:
            for stale in unpublished_allocations(claims.items, slices):
                if stale.node is not None and stale.node in offering:
                    found.append((stale.node, (
                        f"offers {', '.join(sorted(offering[stale.node]))} while claim "
                        f"{stale.claim} (used by {', '.join(stale.users)}) still holds "
                        f"{stale.device}, which {NVIDIA_DRIVER} no longer publishes")))
    return found, "; ".join(unknown)


def _nodes_running_both(snapshot: ClusterSnapshot) -> dict[str, str]:
    """Nodes where a device-plugin pod and a DRA GPU driver pod both run (pods readable)."""
    daemonsets, pods = snapshot.listing(DAEMONSETS).items, snapshot.listing(PODS).items
    if daemonsets is None or pods is None:
        return {}
    plugin_nodes = {dig(p, "spec", "nodeName") for ds in device_plugin_daemonsets(daemonsets)
                    for p in owned_pods(pods, ds)}
    driver_nodes = {dig(p, "spec", "nodeName") for d in driver_daemonsets(daemonsets)
                    if d.serves_gpus for p in owned_pods(pods, d.obj)}
    return {str(node): "runs a device-plugin pod and a DRA driver pod"
            for node in plugin_nodes & driver_nodes if node}
