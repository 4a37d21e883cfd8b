"""The decommission gate: can the device plugin be removed now?

The last step of every migration guide, as four conditions (each a line of what stands in the
way):

1. no running (or Pending, bound) pod holds device-plugin GPUs;
2. no node that publishes ResourceSlices still advertises a device-plugin resource in its
   allocatable (`nvidia.com/gpu`, MIG or shared forms);
3. the device-plugin DaemonSet (found as preflight CLUSTER007 finds it) runs on no node that
   publishes ResourceSlices;
4. no ResourceQuota, Kueue ClusterQueue, Karpenter NodePool or PrometheusRule keys on
   device-plugin GPUs any more.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.objects import as_mapping, dig, plural
from gpudra.preflight.cluster.nodes import device_plugin_resources
from gpudra.verify.collect import ClusterState, keys_on_device_plugin

SAFE = "safe to remove the device plugin"
MAX_PODS = 10  # pods named; the rest are counted


@dataclass(frozen=True)
class Gate:
    blockers: tuple[str, ...]

    @property
    def safe(self) -> bool:
        return not self.blockers

    @property
    def message(self) -> str:
        if self.safe:
            return SAFE
        return (f"not yet safe to remove the device plugin: "
                f"{plural(len(self.blockers), 'thing')} in the way")


def decommission_gate(state: ClusterState) -> Gate:
    holders = [p for pods in state.pods.values() for p in pods
               if p.device_plugin_gpus and p.phase in ("Running", "Pending") and p.node]
    blockers = [f"pod {p.subject} holds {p.device_plugin_gpus} device-plugin GPUs on {p.node}"
                for p in holders[:MAX_PODS]]
    if len(holders) > MAX_PODS:
        blockers.append(f"... and {len(holders) - MAX_PODS} more pods holding device-plugin GPUs")
    dra_nodes = {str(dig(s, "spec", "nodeName")) for s in state.slices
                 if dig(s, "spec", "nodeName") and dig(s, "spec", "devices")}
    for node in state.nodes:
        name = str(dig(node, "metadata", "name"))
        advertised = device_plugin_resources(node)
        if name in dra_nodes and advertised:
            what = ", ".join(f"{k}: {v}" for k, v in sorted(advertised.items()))
            blockers.append(f"node {name} publishes ResourceSlices and still advertises {what} "
                            "(the device plugin still serves it)")
    for ds in state.plugin_daemonsets:
        key = (str(dig(ds, "metadata", "namespace") or ""), str(dig(ds, "metadata", "name")))
        both = sorted(state.daemonset_nodes.get(key, set()) & dra_nodes)
        if both:
            blockers.append(f"device-plugin DaemonSet {key[0]}/{key[1]} runs on DRA nodes: "
                            + ", ".join(both[:5]) + (" ..." if len(both) > 5 else ""))
    for obj in state.keyed_objects:
        meta = as_mapping(obj.get("metadata"))
        where = "/".join(str(x) for x in (meta.get("namespace"), obj.get("kind"),
                                          meta.get("name")) if x)
        blockers.append(f"{where} keys on device-plugin GPUs: "
                        + "; ".join(keys_on_device_plugin(obj)))
    return Gate(tuple(blockers))
