"""Why a pod that asks for device-plugin GPUs waits: the nodes it may use and the
`nvidia.com/gpu` they advertise and have free.

The common case after a wave: the workload was not converted (or not applied) while its nodes
were switched to DRA, so the device plugin no longer advertises GPUs on any node the pod may
use. Nodes are judged by the pod's nodeSelector only (as :mod:`gpudra.verify.explain` does);
the scheduler's own message comes from its event.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpudra.sources.live import device_plugin_gpus
from gpudra.verify.collect import ClusterState, PodState
from gpudra.verify.eligible import eligible_nodes, where

RESOURCE = "nvidia.com/gpu"
MAX_NODES = 5


def pending_reasons(pod: PodState, state: ClusterState) -> list[str]:
    """Reasons for a Pending pod on the device plugin (empty for any other pod)."""
    if pod.phase != "Pending" or pod.node or pod.data is None:
        return []
    asked = device_plugin_gpus(pod.data)  # what its spec asks, bound or not
    selection = where(pod)
    eligible = eligible_nodes(pod, state)
    if not eligible:
        return [f"no node matches the pod's node selection{selection}"]
    allocatable = state.allocatable_gpus(RESOURCE)
    advertised = {name: allocatable.get(name, 0) for name in eligible}
    serving = [name for name in eligible if advertised[name]]
    if not serving:
        return [(f"no node the pod may use{selection} advertises {RESOURCE}: "
                 f"{_named(eligible)} (the device plugin no longer serves them: if they were "
                 "switched to DRA, convert and apply this workload, or roll the wave back)")]
    held = state.device_plugin_held()
    free = {name: advertised[name] - held.get(name, 0) for name in serving}
    fits = [name for name in serving if free[name] >= asked]
    shown = [f"{name} {max(free[name], 0)} of {advertised[name]} free" for name in serving]
    if fits:
        return [(f"{RESOURCE} on the nodes the pod may use{selection}: {_named(shown)}; "
                 f"{_named(fits)} could take its {asked}: the scheduler may not have retried "
                 "yet, or something else keeps it off (taints, CPU or memory)")]
    return [(f"the pod asks for {asked} {RESOURCE}; the nodes it may use{selection} have "
             f"less free: {_named(shown)}")]


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_NODES])
    return shown + (f" and {len(names) - MAX_NODES} more" if len(names) > MAX_NODES else "")
