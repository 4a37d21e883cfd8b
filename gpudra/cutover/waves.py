"""The order of the switch: waves of node pools (or chunks of at most `max_wave_nodes` nodes),
each moving some workloads to claims, such that after every wave

(a) the nodes still on the device plugin fit every workload not yet migrated,
(b) the DRA nodes fit every migrated workload,
(c) no node serves both (each node is on exactly one side of each wave).

(a) and (b) are proven by the plan engine (:func:`gpudra.plan.engine.plan`): the workloads
converted in memory, with the replicas they run, placed on the devices each side offers (live
ResourceSlices where the DRA driver already publishes them, else predicted from the node). A
workload's node constraints (nodeSelector, required node affinity, tolerations) reach the
engine as a nodeSelector on a label that marks exactly the nodes it may use.

The search is greedy: at each wave the candidate units are tried smallest first (the least
device-plugin capacity taken away), and the first one whose wave passes both checks is taken.
A unit moves the workloads that could then run nowhere else, then, lowest risk first (batch,
then several replicas), those that fit on the DRA side as a GPU count; StatefulSets and
singletons move only when they must (their nodes leave the device plugin), or last. When no
unit works, the cutover is blocked, with the numbers of the best attempt.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpudra.cutover.fleet import Fleet, Node, Workload
from gpudra.objects import dig
from gpudra.plan.engine import PlanOptions, plan
from gpudra.plan.inventory import Inventory, parse_inventory
from gpudra.plan.synthesis import synthesize
from gpudra.workloads import WorkloadTable

ELIGIBLE_LABEL = "cutover.gpudra.io/eligible-"


@dataclass(frozen=True)
class Side:
    """One side of the fleet after a wave, as the plan engine judged it."""

    stack: str                  # "device plugin" | "DRA"
    nodes: int
    gpus: int
    workloads: int
    demand: int                 # GPUs the workloads' pods request together
    failures: tuple[str, ...]   # `ns/Kind/name: reason` of each workload that does not fit

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class Wave:
    number: int
    units: tuple[str, ...]             # pool names (pool#k for chunks)
    nodes: tuple[str, ...]
    moved: tuple[Workload, ...]
    plugin_side: Side
    dra_side: Side


@dataclass(frozen=True)
class CutoverPlan:
    waves: tuple[Wave, ...]
    blocked: str | None                # why no further wave works, with the numbers
    attempt: Wave | None = None        # the best failed attempt, for the numbers
    start: tuple[Side, Side] | None = None  # the fleet before the first wave

    @property
    def complete(self) -> bool:
        return self.blocked is None


@dataclass(frozen=True)
class Unit:
    name: str
    nodes: tuple[Node, ...]

    @property
    def gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)


def units(fleet: Fleet, max_wave_nodes: int | None) -> list[Unit]:
    """Pools still on the device plugin, split into chunks of at most `max_wave_nodes`."""
    out: list[Unit] = []
    for pool, nodes in fleet.pools().items():
        waiting = tuple(n for n in nodes if not n.on_dra)
        if not waiting:
            continue
        size = max_wave_nodes or len(waiting)
        chunks = [waiting[i:i + size] for i in range(0, len(waiting), size)]
        out += [Unit(pool if len(chunks) == 1 else f"{pool}#{i + 1}", chunk)
                for i, chunk in enumerate(chunks)]
    return out


def order_waves(fleet: Fleet, table: WorkloadTable, max_wave_nodes: int | None = None,
                on_wave: Callable[[int], None] | None = None) -> CutoverPlan:
    dra = {n.name for n in fleet.nodes if n.on_dra}
    migrated = {w.key for w in fleet.workloads if w.on_claims}
    start = _sides(fleet, table, dra, migrated)
    waiting = units(fleet, max_wave_nodes)
    waves: list[Wave] = []
    while waiting:
        waiting.sort(key=lambda u: (u.gpus, len(u.nodes), u.name))
        best: Wave | None = None
        for unit in waiting:
            wave = _try(fleet, table, dra, migrated, unit, len(waves) + 1, final=len(waiting) == 1)
            if wave.plugin_side.ok and wave.dra_side.ok:
                break
            best = best or wave
        else:
            return CutoverPlan(tuple(waves), _blocked_message(best), best, start)
        waves.append(wave)
        dra |= set(wave.nodes)
        migrated |= {w.key for w in wave.moved}
        waiting.remove(unit)
        if on_wave is not None:
            on_wave(len(waves))
    left = [w for w in fleet.workloads if w.key not in migrated]
    if left:  # GPU workloads that fit on no GPU node at all
        names = ", ".join(w.label for w in left[:5])
        return CutoverPlan(tuple(waves), f"{len(left)} workloads may run on no GPU node: {names}",
                           None, start)
    return CutoverPlan(tuple(waves), None, None, start)


def _try(fleet: Fleet, table: WorkloadTable, dra: set[str], migrated: set[tuple[str, str, str]],
         unit: Unit, number: int, final: bool) -> Wave:
    new_dra = dra | {n.name for n in unit.nodes}
    plugin_nodes = {n.name for n in fleet.nodes} - new_dra
    staying = [w for w in fleet.workloads if w.key not in migrated]
    forced = sorted((w for w in staying if final or not (w.eligible & plugin_nodes)),
                    key=lambda w: (w.risk, w.label))
    moved = list(forced)
    room = _gpus(fleet, new_dra) - sum(w.gpus for w in fleet.workloads if w.key in migrated) \
        - sum(w.gpus for w in forced)
    for workload in sorted(staying, key=lambda w: (w.risk, -w.gpus, w.label)):
        if workload in forced or workload.risk >= 2 or not workload.eligible & new_dra:
            continue
        if workload.gpus <= room:
            moved.append(workload)
            room -= workload.gpus
    moved.sort(key=lambda w: (w.risk, w.label))  # the runbook lists the lowest risk first
    keys = migrated | {w.key for w in moved}
    plugin_side, dra_side = _sides(fleet, table, new_dra, keys)
    if not plugin_side.ok or dra_side.ok or len(moved) == len(forced):
        return Wave(number, (unit.name,), tuple(n.name for n in unit.nodes), tuple(moved),
                    plugin_side, dra_side)
    # the optional moves overfilled the DRA side: try the wave with only what must move
    keys = migrated | {w.key for w in forced}
    plugin_side, dra_side = _sides(fleet, table, new_dra, keys)
    return Wave(number, (unit.name,), tuple(n.name for n in unit.nodes), tuple(forced),
                plugin_side, dra_side)


def _gpus(fleet: Fleet, names: set[str]) -> int:
    return sum(n.gpus for n in fleet.nodes if n.name in names)


def _sides(fleet: Fleet, table: WorkloadTable, dra: set[str],
           migrated: set[tuple[str, str, str]]) -> tuple[Side, Side]:
    plugin_nodes = [n for n in fleet.nodes if n.name not in dra]
    dra_nodes = [n for n in fleet.nodes if n.name in dra]
    return (check_side("device plugin", [w for w in fleet.workloads if w.key not in migrated],
                       plugin_nodes, fleet, table),
            check_side("DRA", [w for w in fleet.workloads if w.key in migrated], dra_nodes,
                       fleet, table))


def check_side(stack: str, workloads: Sequence[Workload], nodes: Sequence[Node], fleet: Fleet,
               table: WorkloadTable) -> Side:
    """Do `workloads` all fit on `nodes` at once? Judged by the plan engine."""
    names = {n.name for n in nodes}
    gpus = sum(n.gpus for n in nodes)
    demand = sum(w.gpus for w in workloads)
    if not workloads:
        return Side(stack, len(nodes), gpus, 0, 0, ())
    marks: dict[frozenset[str], str] = {}
    objects: list[Any] = list(fleet.classes)
    by_key: dict[tuple[str, str, str], Workload] = {}
    for workload in workloads:
        allowed = frozenset(workload.eligible & names)
        mark = marks.setdefault(allowed, f"{ELIGIBLE_LABEL}{len(marks)}")
        main, *rest = workload.converted
        objects += [_pinned(main, mark, table), *rest]
        by_key[workload.key] = workload
    report = plan(objects, _inventory(nodes, marks, fleet), PlanOptions(table=table,
                                                                         explain=False))
    failures = tuple(f"{w.namespace}/{w.kind}/{w.name}: {w.reason}"
                     for w in report.workloads if not w.satisfiable)
    return Side(stack, len(nodes), gpus, len(workloads), demand, failures)


def _pinned(obj: Any, mark: str, table: WorkloadTable) -> Any:
    """The object with every pod spec's node constraints replaced by the eligibility mark."""
    pinned = copy.deepcopy(obj)
    group = str(pinned.get("apiVersion", "")).rpartition("/")[0]
    for spec in table.pod_specs(group, str(pinned.get("kind", "")), pinned):
        data = spec.data
        if isinstance(data, dict):
            data["nodeSelector"] = {mark: "true"}
            data.pop("affinity", None)
    return pinned


def _inventory(nodes: Sequence[Node], marks: dict[frozenset[str], str], fleet: Fleet
               ) -> Inventory:
    labelled = []
    for node in nodes:
        labels = {**node.labels, **{m: "true" for s, m in marks.items() if node.name in s}}
        labelled.append({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": node.name, "labels": labels},
                         "status": {"allocatable": {"nvidia.com/gpu": str(node.gpus)}}})
    live = {n.name for n in nodes if n.on_dra}
    slices = [s for s in fleet.slices if dig(s, "spec", "nodeName") in live]
    published = parse_inventory([*slices, *[n for n in labelled
                                            if n["metadata"]["name"] in live]], "cluster")
    predicted = synthesize([n for n in labelled if n["metadata"]["name"] not in live])
    if not published.devices:
        return predicted
    return published.merged(predicted) if predicted.devices or predicted.node_labels \
        else published


def _blocked_message(wave: Wave | None) -> str:
    if wave is None:
        return "no node pool left to switch"
    parts = []
    for side in (wave.plugin_side, wave.dra_side):
        if side.ok:
            continue
        short = max(side.demand - side.gpus, 0)
        numbers = (f"{side.gpus} GPUs on {side.nodes} nodes for {side.demand} GPUs of "
                   f"{side.workloads} workloads")
        need = f" (short by {short} GPUs)" if short else \
            " (enough GPUs in total, but not where the workloads may run)"
        parts.append(f"the {side.stack} side would have {numbers}{need}; first: "
                     f"{side.failures[0]}")
    return (f"cannot cut over without more capacity: switching the smallest pool left "
            f"({', '.join(wave.units)}, {len(wave.nodes)} nodes) fails: " + "; ".join(parts))
