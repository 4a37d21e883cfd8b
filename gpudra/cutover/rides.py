"""Under the claims strategy (`gpudra cutover`, --strategy rewrite), on a target of 1.37 or
later: the workloads convert blocks because their controller reads the GPU limit ride the
extended-resource bridge instead of staying on the device plugin.

convert cannot move such a workload (KServe picks its image by `nvidia.com/gpu`; removing the
limit changes what runs), so the rewrite plan keeps a device-plugin node for it and the gate
stays closed. The bridge (KEP-5004, GA in 1.37: docs/facts.md, "The bridge in a cutover")
keeps the limit and serves it from DRA devices, so the workload moves unchanged, in the wave
that switches the last node it may run on, and the runbook writes the mapping DeviceClass
before the first wave whose nodes it may run on. Only those: a workload blocked for another
reason (an unchecked kind, a container convert cannot read) stays blocked, and so does
everything below 1.37 (1.34 to 1.36 have the bridge, but its gate is not GA there: the claims
strategy does not lean on it; `--strategy bridge` is the explicit choice).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpudra.cutover.bridge import BridgePlan, plan_bridge, served_by_bridge
from gpudra.cutover.pools import Fleet, Workload
from gpudra.cutover.waves import CutoverPlan
from gpudra.k8s.workloads import WorkloadTable
from gpudra.cutover.bridge_context import BRIDGE, read_context, wave_notes

RIDES_FROM_MINOR = 37  # the bridge is GA (kubernetes/enhancements 5004 kep.yaml, stage stable)

Key = tuple[str, str, str]


def controller_reading_limit(workload: Workload) -> str | None:
    """The controller's name when gpudra's controller registry says it reads the GPU limit of
    this workload's kind; None otherwise."""
    from gpudra.controllers.registry import registry

    api_version = workload.original.get("apiVersion")
    row = registry().row_for(api_version if isinstance(api_version, str) else "", workload.kind)
    return row.controller if row is not None and row.reads_gpu_limit else None


def find_rides(fleet: Fleet, table: WorkloadTable) -> dict[Key, str]:
    """Per workload that rides the bridge under the claims strategy, its controller: convert
    blocks it (`stays`), its controller reads the limit (the registry), and convert's own
    `--strategy bridge` leaves it unchanged (so nothing else the bridge cannot serve, such as
    NVIDIA_VISIBLE_DEVICES or MIG single strategy, is in it). Empty below 1.37."""
    if fleet.target.minor < RIDES_FROM_MINOR:
        return {}
    out: dict[Key, str] = {}
    for workload in fleet.workloads:
        if workload.stays is None:
            continue
        controller = controller_reading_limit(workload)
        if controller is not None and served_by_bridge(replace(workload, stays=None), table,
                                                       fleet.target):
            out[workload.key] = controller
    return out


def release(fleet: Fleet, rides: Mapping[Key, str]) -> Fleet:
    """The fleet with the riding workloads free to move (planned as any moving workload)."""
    return replace(fleet, workloads=tuple(replace(w, stays=None) if w.key in rides else w
                                          for w in fleet.workloads))


def plan_rides(plan: CutoverPlan, fleet: Fleet, table: WorkloadTable, rides: Mapping[Key, str]
               ) -> tuple[CutoverPlan, BridgePlan]:
    """The plan with the riders held to the wave that switches the last node each may run on
    (gpudra.cutover.bridge.plan_bridge, for them alone), and the claims strategy's BridgePlan:
    the mapping class in the first wave that needs it."""
    planned, bridge = plan_bridge(plan, fleet, table, rides)
    # a rider no wave bridges (a node it may run on is never switched) is unconverted
    # (plan_bridge), not riding: neither listed nor given a mapping class
    riding = {key: rides[key] for keys in bridge.bridged.values() for key in keys}
    return planned, replace(bridge, mapping_wave=mapping_wave(planned, fleet, riding),
                            strategy="rewrite", rides=riding)


def riders_nodes(fleet: Fleet, rides: Mapping[Key, str]) -> frozenset[str]:
    """The GPU nodes any riding workload may run on."""
    return frozenset[str]().union(*(w.eligible for w in fleet.workloads if w.key in rides))


def mapping_wave(plan: CutoverPlan, fleet: Fleet, rides: Mapping[Key, str]) -> int | None:
    """The first wave that switches a node a riding workload may run on (its pods drained
    there come back through the bridge, so the mapping class must exist by then); else the
    first wave that moves one."""
    may_run = riders_nodes(fleet, rides)
    for wave in plan.waves:
        if may_run & set(wave.nodes) or any(w.key in rides for w in wave.moved):
            return wave.number
    return None


def rider_notes(objects: list[dict[str, Any]], fleet: Fleet, plan: CutoverPlan,
                rides: Mapping[Key, str], notes: Mapping[int, tuple[str, ...]]
                ) -> dict[int, tuple[str, ...]]:
    """`notes` (the claims strategy's, per wave) with what the bridge changes around the
    riders' pods (gpudra.cutover.bridge_context, under the bridge's rules: Kueue's charge,
    autoscalers, quotas on requests.nvidia.com/gpu) added in each wave that switches a node a
    rider may run on: from then on its pods drained there come back through the bridge."""

    riders = replace(fleet, workloads=tuple(w for w in fleet.workloads if w.key in rides))
    may_run = riders_nodes(fleet, rides)
    context = read_context(objects, fleet)
    out = dict(notes)
    for wave in plan.waves:
        if not may_run & set(wave.nodes):
            continue
        said = out.get(wave.number, ())
        added = tuple(n for n in wave_notes(context, wave, riders, BRIDGE) if n not in said)
        if said or added:
            out[wave.number] = said + added
    return out


def ride_note(controller: str) -> str:
    """What the runbook says of a riding workload."""
    return (f"{controller} reads nvidia.com/gpu: left unchanged, served by DRA through the "
            "bridge")


# What the runbook says when every rider is unconverted (plan_bridge's NEVER_SWITCHED)
NO_RIDER = ("no workload rides it in this plan: each one whose controller reads nvidia.com/gpu "
            "may run on a GPU node no wave switches (listed as unconverted)")


# Why the runbook labels no namespace where a workload rides the bridge (gpudra guard)
GUARD_NOTE = ("not labelled for gpudra guard while such a workload runs there: the claims "
              "strategy's guard refuses every nvidia.com/gpu pod, those its controller makes "
              "too")
