"""The decommission gate: can the device plugin be removed now?

The last step of every migration guide. The device plugin serves the whole cluster, so the gate
is judged only when verify read every namespace and every workload (no -n, no --selector), as
these conditions (each a line of what stands in the way):

1. no pod asks for device-plugin GPUs: Running or bound (it holds them), or Pending (it would,
   and nothing else can serve it): a rollout or a rollback that is half done shows here;
2. no workload's pod template asks for device-plugin GPUs, even with no pod now (a CronJob
   between runs, a Deployment scaled to 0 would ask again);
3. no node still advertises a device-plugin resource (`nvidia.com/gpu`, MIG or shared forms)
   in its capacity or allocatable: on a node that publishes ResourceSlices the device plugin
   was not stopped (KEP-5004's sign that it was not replaced); on any other node it is still
   the only thing serving those GPUs;
4. the device-plugin DaemonSet (found as preflight CLUSTER007 finds it) runs on no node that
   publishes ResourceSlices;
5. no ResourceQuota, Kueue ClusterQueue, Karpenter NodePool or PrometheusRule keys on
   device-plugin GPUs any more; a quota's `requests.nvidia.com/gpu` is no blocker while a
   DeviceClass maps nvidia.com/gpu (it counts the bridge's claims too: docs/facts.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.k8s.gpu_use import advertised_device_plugin_resources
from gpudra.verify.bridge_served import mapped_quota_keys
from gpudra.verify.collect import ClusterState, PodState, keys_on_device_plugin
from gpudra.verify.guarded import guard_warnings
from gpudra.verify.judge import DEVICE_PLUGIN, Verdict

SAFE = "safe to remove the device plugin"
NOT_JUDGED = ("not judged: the device plugin serves the whole cluster, so the gate reads every "
              "namespace and workload (run gpudra verify without -n and --selector)")
NOT_JUDGED_UNREAD = ("not judged: some of the cluster could not be read (see the errors), and "
                     "what was not read may still need the device plugin")
MAX_LISTED = 10  # workloads and pods named; the rest are counted


@dataclass(frozen=True)
class Gate:
    blockers: tuple[str, ...]  # one line each; past MAX_LISTED pods, one line counts the rest
    judged: bool = True   # False under -n or --selector, or with objects unread: neither safe
    count: int | None = None   # how many things stand in the way (None: one per line)
    why_not: str = NOT_JUDGED  # the message when not judged
    # What does not stand in the way but should be done: migrated namespaces without
    # gpudra guard (gpudra.verify.guarded); one line each.
    warnings: tuple[str, ...] = ()

    @property
    def safe(self) -> bool:
        return self.judged and not self.blockers

    @property
    def message(self) -> str:
        if not self.judged:
            return self.why_not
        if self.safe:
            return SAFE
        count = len(self.blockers) if self.count is None else self.count
        return (f"not yet safe to remove the device plugin: "
                f"{plural(count, 'thing')} in the way")


def not_judged(why: str = NOT_JUDGED) -> Gate:
    return Gate((), judged=False, why_not=why)


def whole_cluster(all_namespaces: bool, selected: bool) -> bool:
    """The one decision of the gate's scope: judged only from every namespace with no
    selector, since the device plugin serves the whole cluster."""
    return all_namespaces and not selected


def gate_for(state: ClusterState, verdicts: Sequence[Verdict], whole: bool) -> Gate:
    """The gate, when verify read the `whole` cluster (whole_cluster) and every object of it:
    from one namespace or a selection, or with objects unread, it says neither safe nor
    blocked."""
    if not whole:
        return not_judged()
    if state.errors:  # an object left out (unreadable, or refused by its reader) may hold GPUs
        return not_judged(NOT_JUDGED_UNREAD)
    return decommission_gate(state, verdicts)


def decommission_gate(state: ClusterState, verdicts: Sequence[Verdict]) -> Gate:
    """The gate over the whole cluster; `verdicts` are those of every GPU workload."""
    pods, asking_pods = _pods(state)
    templates, idle = _templates(state, verdicts)
    blockers = pods + templates
    listed = len(blockers)
    dra_nodes = {str(dig(s, "spec", "nodeName")) for s in state.slices
                 if dig(s, "spec", "nodeName") and dig(s, "spec", "devices")}
    blockers += _nodes(state.nodes, dra_nodes)
    for ds in state.plugin_daemonsets:
        key = (str(dig(ds, "metadata", "namespace") or ""), str(dig(ds, "metadata", "name")))
        both = sorted(state.daemonset_nodes.get(key, set()) & dra_nodes)
        if both:
            blockers.append(f"device-plugin DaemonSet {key[0]}/{key[1]} runs on DRA nodes: "
                            + ", ".join(both[:5]) + (" ..." if len(both) > 5 else ""))
    bridged = mapped_quota_keys(state)
    for obj in state.keyed_objects:
        meta = as_mapping(obj.get("metadata"))
        where = "/".join(str(x) for x in (meta.get("namespace"), obj.get("kind"),
                                          meta.get("name")) if x)
        keys = [k for k in keys_on_device_plugin(obj)
                if not (obj.get("kind") == "ResourceQuota" and k in bridged)]
        if keys:
            blockers.append(f"{where} keys on device-plugin GPUs: " + "; ".join(keys))
    return Gate(tuple(blockers), count=asking_pods + idle + len(blockers) - listed,
                warnings=guard_warnings(state.guard) if state.guard is not None else ())


def _pods(state: ClusterState) -> tuple[list[str], int]:
    """Lines naming the pods that ask for device-plugin GPUs, and how many there are."""
    pods = sorted((p for pods in state.pods.values() for p in pods
                   if p.device_plugin_gpus and p.phase in ("Running", "Pending")),
                  key=lambda p: p.subject)
    lines = [_pod_line(p) for p in pods[:MAX_LISTED]]
    if len(pods) > MAX_LISTED:
        lines.append(f"... and {plural(len(pods) - MAX_LISTED, 'more pod')} asking for "
                     "device-plugin GPUs")
    return lines, len(pods)


def _templates(state: ClusterState, verdicts: Sequence[Verdict]) -> tuple[list[str], int]:
    """Workloads on the device plugin with no pod asking now (their pods are named above):
    a CronJob between runs, a Deployment scaled to 0, a Job that finished."""
    idle = [v for v in verdicts if v.state == DEVICE_PLUGIN
            and not any(p.device_plugin_gpus and p.phase in ("Running", "Pending")
                        for p in state.pods_of(v.workload))]
    lines = [f"{v.subject} asks for device-plugin GPUs in its pod template (no pods now; "
             "its next pod would)" for v in idle[:MAX_LISTED]]
    if len(idle) > MAX_LISTED:
        lines.append(f"... and {plural(len(idle) - MAX_LISTED, 'more workload')} asking for "
                     "device-plugin GPUs in their templates")
    return lines, len(idle)


def _pod_line(pod: PodState) -> str:
    gpus = plural(pod.device_plugin_gpus, "device-plugin GPU")
    if pod.node:
        return f"pod {pod.subject} holds {gpus} on {pod.node}"
    return f"pod {pod.subject} asks for {gpus} (Pending, not scheduled)"


def _nodes(nodes: Sequence[Mapping[str, Any]], dra_nodes: set[str]) -> list[str]:
    lines = []
    for node in nodes:
        name = str(dig(node, "metadata", "name"))
        advertised = advertised_device_plugin_resources(node)
        if not advertised:
            continue
        what = ", ".join(f"{k}: {v}" for k, v in sorted(advertised.items()))
        if name in dra_nodes:
            lines.append(f"node {name} publishes ResourceSlices and still advertises {what} "
                         "(the device plugin was not stopped there)")
        else:
            lines.append(f"node {name} serves {what} through the device plugin only (switch it "
                         "to DRA first)")
    return lines
