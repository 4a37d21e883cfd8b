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
device-plugin capacity taken away), then pairs of units, and the first whose wave passes both
checks is taken.
A unit moves the workloads that could then run nowhere else, then, lowest risk first (batch,
then several replicas), others while the device-plugin side is fuller than the DRA side (both
keep headroom); StatefulSets and singletons move only when they must (their nodes leave the
device plugin, or it lacks the GPUs), or last. When no
unit works, the cutover is blocked, with the numbers of the best attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from gpudra.cutover.pools import Fleet, Node, Workload
from gpudra.dra.cel import default_engine
from gpudra.k8s.gpu_use import is_device_plugin_resource
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.plan.engine import PlanOptions, plan
from gpudra.plan.inventory import Inventory, parse_inventory
from gpudra.plan.synthesis import NodePrediction, assemble, predict_nodes
from gpudra.k8s.workloads import WorkloadTable

SHAPE_PREFIX = "gpudra-cutover-shape-"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"  # GFD: the device plugin's time-slicing replicas
COUNT_LABEL = "nvidia.com/gpu.count"        # GFD: physical GPUs


@dataclass(frozen=True)
class Side:
    """One side of the fleet after a wave, as the plan engine judged it."""

    stack: str                  # "device plugin" | "DRA"
    nodes: int
    gpus: int
    workloads: int
    demand: int                 # GPUs the workloads' pods request together
    failures: tuple[str, ...]   # `ns/Kind/name: reason` of each workload that does not fit
    failed: tuple[tuple[str, str, str], ...] = ()  # their keys

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


@dataclass(frozen=True, slots=True)
class Unconverted:
    """A GPU workload that is on the device plugin after the last wave, and why."""

    kind: str
    namespace: str
    name: str
    reason: str


@dataclass(frozen=True)
class CutoverPlan:
    waves: tuple[Wave, ...]
    blocked: str | None                # why no further wave works, with the numbers
    attempt: Wave | None = None        # the best failed attempt, for the numbers
    start: tuple[Side, Side] | None = None  # the fleet before the first wave
    # the GPU workloads still on the device plugin after the waves (sorted), each with why
    unconverted: tuple[Unconverted, ...] = ()

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
    """The waves, and what stays on the device plugin after them."""
    result = _order_waves(fleet, table, max_wave_nodes, on_wave)
    return replace(result, unconverted=unconverted(fleet, result))


UNCONVERTED_BLOCKED = "no wave moves it: the cutover is blocked (see blocked)"
UNCONVERTED_NO_NODE = "its node selector, affinity or tolerations match no GPU node"


def unconverted(fleet: Fleet, result: CutoverPlan) -> tuple[Unconverted, ...]:
    """The fleet's GPU workloads still on the device plugin once `result`'s waves are done:
    the ones convert cannot move, and under a blocked plan the ones no wave reached."""
    moved = {w.key for wave in result.waves for w in wave.moved}
    out = [Unconverted(w.kind, w.namespace, w.name,
                       f"convert cannot move it: {w.stays}" if w.stays is not None else
                       UNCONVERTED_NO_NODE if not w.eligible else UNCONVERTED_BLOCKED)
           for w in fleet.workloads if not w.on_claims and w.key not in moved]
    for label, why in zip(fleet.unconvertible, fleet.unconvertible_why):
        namespace, kind, name = label.split("/", 2)
        out.append(Unconverted(kind, namespace, name, f"convert cannot move it: {why}"))
    return tuple(sorted(out, key=lambda u: (u.namespace, u.kind, u.name)))


def _order_waves(fleet: Fleet, table: WorkloadTable, max_wave_nodes: int | None,
                 on_wave: Callable[[int], None] | None) -> CutoverPlan:
    judge = _Judge(fleet, table)
    dra = {n.name for n in fleet.nodes if n.on_dra}
    migrated = {w.key for w in fleet.workloads if w.on_claims}
    start = judge.sides(dra, migrated)
    waiting = units(fleet, max_wave_nodes)
    waves: list[Wave] = []
    first = fleet.waves_done + 1  # a re-run keeps the numbers of the waves already done
    while waiting:
        waiting.sort(key=lambda u: (u.gpus, len(u.nodes), u.name))
        best: Wave | None = None
        wave = None
        for group in _candidates(waiting, max_wave_nodes):
            final = sum(len(u.nodes) for u in group) == sum(len(u.nodes) for u in waiting)
            attempt = _try(judge, dra, migrated, group, first + len(waves), final)
            if attempt.plugin_side.ok and attempt.dra_side.ok:
                wave = attempt
                break
            best = best or attempt
        if wave is None:
            return CutoverPlan(tuple(waves), _blocked_message(best, fleet), best, start)
        waves.append(wave)
        dra |= set(wave.nodes)
        migrated |= {w.key for w in wave.moved}
        waiting = [u for u in waiting if u.name not in wave.units]
        if on_wave is not None:
            on_wave(len(waves))
    left = [w for w in fleet.workloads if w.key not in migrated and w.stays is None]
    # Workloads still on the device plugin whose nodes all publish already (switched before
    # this plan, or by hand) move in a wave of their own that switches no node.
    stranded = [w for w in left if w.eligible and w.eligible <= dra]
    if stranded:
        keys = {w.key for w in stranded}
        plugin_side, dra_side = judge.sides(dra, migrated | keys)
        moved = tuple(sorted(stranded, key=lambda w: (w.risk, w.label)))
        wave = Wave(first + len(waves), (), (), moved, plugin_side, dra_side)
        if not dra_side.ok:
            return CutoverPlan(tuple(waves), _blocked_message(wave, fleet), wave, start)
        waves.append(wave)
        migrated |= keys
        left = [w for w in left if w.key not in keys]
    if fleet.missing_templates:  # workloads on claims whose pods cannot be created
        named = "; ".join(f"{label} names ResourceClaimTemplate {name}"
                          for label, name in fleet.missing_templates[:5])
        more = len(fleet.missing_templates) - 5
        return CutoverPlan(tuple(waves), (
            f"{named}{f' (and {more} more)' if more > 0 else ''}, which its namespace does not "
            "hold: their pods cannot be created, so they are not planned (from --from files, "
            "export resourceclaimtemplates too: docs/cutover.md; live, create the template or "
            "fix the workload)"), None, start)
    if left:  # GPU workloads whose node constraints match no GPU node at all
        names = ", ".join(w.label for w in left[:5])
        one = len(left) == 1
        if len(dra) == len(fleet.nodes):  # nothing is left to switch: they are unconverted
            return CutoverPlan(tuple(waves), (
                f"{plural(len(left), 'workload')} {'is' if one else 'are'} not converted "
                f"({'it still asks' if one else 'they still ask'} for device-plugin GPUs) while "
                f"every GPU node is on DRA, and {'its' if one else 'their'} node selector, "
                f"affinity or tolerations match none of those nodes: {names}"), None, start)
        return CutoverPlan(tuple(waves), f"{plural(len(left), 'workload')} may run on no GPU node: "
                           f"{names}",
                           None, start)
    return CutoverPlan(tuple(waves), None, None, start)


def _candidates(waiting: list[Unit], max_wave_nodes: int | None
                ) -> Iterator[tuple[Unit, ...]]:
    """Each unit alone, smallest first; then pairs, smallest first (a workload whose pods
    span two pools can only move when both switch together), within --max-wave-nodes."""
    yield from ((u,) for u in waiting)
    pairs = [p for p in combinations(waiting, 2)
             if not max_wave_nodes or sum(len(u.nodes) for u in p) <= max_wave_nodes]
    yield from sorted(pairs, key=lambda p: (sum(u.gpus for u in p), [u.name for u in p]))


def _try(judge: _Judge, dra: set[str], migrated: set[tuple[str, str, str]],
         group: tuple[Unit, ...], number: int, final: bool) -> Wave:
    """The wave that switches `unit`: what must move, then what fits, lowest risk first; when
    the engine disagrees, optional moves the DRA side cannot hold go back, and workloads the
    device-plugin side cannot hold move if the DRA side has room (a few rounds)."""
    fleet = judge.fleet
    switching = tuple(n.name for u in group for n in u.nodes)
    new_dra = dra | set(switching)
    plugin_nodes = {n.name for n in fleet.nodes} - new_dra
    staying = [w for w in fleet.workloads if w.key not in migrated]
    # Workloads share a few eligible sets (one per placement constraint): each is compared
    # with the two sides once, not once per workload.
    on_plugin = _meets(plugin_nodes)
    reaches_dra = _meets(new_dra)
    # What convert cannot move stays on the device plugin whatever the wave: never forced.
    forced = {w.key for w in staying
              if w.stays is None and (final or not on_plugin(w.eligible))}
    dra_gpus, plugin_gpus = _devices(fleet, new_dra), _gpus(fleet, plugin_nodes)
    on_dra = sum(w.gpus for w in fleet.workloads if w.key in migrated or w.key in forced)
    left = sum(w.gpus for w in staying if w.key not in forced)
    # judge.by_risk is every workload in this order, sorted once: filtering it keeps the
    # order sorting the staying ones would give (the sort is stable)
    optional = [w for w in judge.by_risk if w.key not in migrated and w.key not in forced
                and w.stays is None and reaches_dra(w.eligible)]
    moving = set(forced)
    for workload in optional:
        # Move while the device-plugin side is fuller than the DRA side would be: headroom on
        # both (the greedy placement needs some). StatefulSets and singletons only when the
        # device-plugin side cannot hold them.
        after = (on_dra + workload.gpus) / dra_gpus if dra_gpus else 1.0
        wanted = left > plugin_gpus if workload.risk >= 2 else left / max(plugin_gpus, 1) > after
        if wanted and on_dra + workload.gpus <= dra_gpus:
            moving.add(workload.key)
            on_dra += workload.gpus
            left -= workload.gpus
    by_key = {w.key: w for w in staying}
    for _ in range(3):
        plugin_side, dra_side = judge.sides(new_dra, migrated | moving)
        if not dra_side.ok:
            back = {k for k in dra_side.failed if k in moving and k not in forced}
            changed = bool(back)
            moving -= back
        elif not plugin_side.ok:
            more = [by_key[k] for k in plugin_side.failed
                    if k in by_key and k not in moving and by_key[k].stays is None
                    and reaches_dra(by_key[k].eligible)]
            room = _devices(fleet, new_dra) - dra_side.demand
            changed = False
            for workload in more:
                if workload.gpus <= room:
                    moving.add(workload.key)
                    room -= workload.gpus
                    changed = True
        else:
            break
        if not changed:
            break
    moved = tuple(sorted((by_key[k] for k in moving), key=lambda w: (w.risk, w.label)))
    return Wave(number, tuple(u.name for u in group), switching, moved, plugin_side, dra_side)


def _gpus(fleet: Fleet, names: set[str]) -> int:
    """What the device plugin advertises on these nodes (time-slicing replicas counted)."""
    return sum(n.gpus for n in fleet.nodes if n.name in names)


def _devices(fleet: Fleet, names: set[str]) -> int:
    """What the DRA driver publishes (or would) on these nodes: physical devices."""
    return sum(n.devices for n in fleet.nodes if n.name in names)


def _meets(nodes: set[str]) -> Callable[[frozenset[str]], bool]:
    """Whether an eligible set shares a node with `nodes`, remembered per eligible set."""
    known: dict[frozenset[str], bool] = {}

    def meets(eligible: frozenset[str]) -> bool:
        found = known.get(eligible)
        if found is None:
            found = known[eligible] = not eligible.isdisjoint(nodes)
        return found
    return meets


class _Judge:
    """Judges both sides of waves of one fleet with the plan engine. What no wave changes is
    worked out once per cutover: each node's predicted devices, the devices its
    ResourceSlices publish, the plan options, the order optional moves are considered in."""

    def __init__(self, fleet: Fleet, table: WorkloadTable) -> None:
        self.fleet = fleet
        self.table = table
        self._options = PlanOptions.for_target(fleet.target, table=table, explain=False,
                                               engine=default_engine(fleet.target))
        # lowest risk first, then the most GPUs: the order optional moves are considered in
        self.by_risk = sorted(fleet.workloads, key=lambda w: (w.risk, -w.gpus, w.label))
        self._predicted: dict[tuple[str, str], NodePrediction] = {}  # by _seen_as
        self._published: dict[frozenset[str], Inventory] = {}

    def sides(self, dra: set[str], migrated: set[tuple[str, str, str]]) -> tuple[Side, Side]:
        fleet = self.fleet
        plugin_nodes = [n for n in fleet.nodes if n.name not in dra]
        dra_nodes = [n for n in fleet.nodes if n.name in dra]
        staying: list[Workload] = []
        moved: list[Workload] = []
        for workload in fleet.workloads:
            (moved if workload.key in migrated else staying).append(workload)
        return (self.check("device plugin", staying, plugin_nodes),
                self.check("DRA", moved, dra_nodes))

    def check(self, stack: str, workloads: Sequence[Workload], nodes: Sequence[Node]) -> Side:
        """Do `workloads` all fit on `nodes` at once? Judged by the plan engine; a side whose
        GPUs are fewer than its pods request is judged by the count (the engine could only
        agree)."""
        fleet = self.fleet
        gpus = sum(n.devices if stack == "DRA" else n.gpus for n in nodes)
        demand = sum(w.gpus for w in workloads)
        if not workloads:
            return Side(stack, len(nodes), gpus, 0, 0, ())
        if demand > gpus:
            return Side(stack, len(nodes), gpus, len(workloads), demand,
                        (f"{plural(demand, 'GPU')} requested, {gpus} on the nodes",))
        objects: list[Any] = list(fleet.classes)
        shapes: dict[str, list[Workload]] = {}
        for workload in workloads:
            if workload.shape is None:
                objects += workload.converted
            else:
                shapes.setdefault(workload.shape, []).append(workload)
        members: dict[tuple[str, str, str], list[Workload]] = {}
        for index, same in enumerate(shapes.values()):
            stand_in = _stand_in(index, same)
            objects += [stand_in, *same[0].converted[1:]]
            members[(same[0].namespace, "Deployment", stand_in["metadata"]["name"])] = same
        inventory = self._inventory(nodes, stack)
        # with no tainted device the taint gate changes nothing and costs a check per device
        options = replace(self._options, device_taints=self._options.device_taints
                          and any(d.taints for d in inventory.devices))
        report = plan(objects, inventory, options)
        failed: list[tuple[str, str, str]] = []
        failures: list[str] = []
        # A workload placed as another kind (one convert cannot move, as plain pods) by its own
        by_placed = {(w.namespace, str(o.get("kind", "")), str(dig(o, "metadata", "name"))):
                     w.key for w in workloads if w.shape is None for o in w.converted}
        for result in report.workloads:
            if result.satisfiable:
                continue
            key = (result.namespace or "", result.kind, result.name)
            shaped = members.get(key)  # the workloads a stand-in placed for
            if shaped is None:
                key = by_placed.get(key, key)
                failed.append(key)
                failures.append(f"{'/'.join(key)}: {result.reason}")
            else:
                failed += [w.key for w in shaped]
                more = f" and {len(shaped) - 1} more of its shape" if len(shaped) > 1 else ""
                failures.append(f"{shaped[0].label}{more}: {result.reason}")
        return Side(stack, len(nodes), gpus, len(workloads), demand, tuple(failures),
                    tuple(failed))

    def _inventory(self, nodes: Sequence[Node], stack: str) -> Inventory:
        """The devices of `nodes` on `stack`: as their ResourceSlices publish them where the
        driver runs, else predicted from the node as that stack offers it (`_offered`),
        labelled with the marks of the workloads that may use it."""
        live = frozenset(n.name for n in nodes if n.on_dra)
        waiting = [n for n in nodes if n.name not in live]
        for node in waiting:
            if _seen_as(node, stack) not in self._predicted:
                [self._predicted[_seen_as(node, stack)]] = predict_nodes(
                    [self._labelled(node, stack)])
        predicted = assemble(self._predicted[_seen_as(n, stack)] for n in waiting)
        published = self._published.get(live)
        if published is None:
            slices = [s for s in self.fleet.slices if dig(s, "spec", "nodeName") in live]
            published = self._published[live] = parse_inventory(
                [*slices, *[self._labelled(n, "DRA") for n in nodes if n.name in live]],
                "cluster")
        if not published.devices:
            return predicted
        return published.merged(predicted) if predicted.devices or predicted.node_labels \
            else published

    def _labelled(self, node: Node, stack: str) -> dict[str, Any]:
        labels, allocatable = _offered(node, stack)
        labels.update({m: "true" for m in self.fleet.node_marks.get(node.name, ())})
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node.name, "labels": labels},
                "status": {"allocatable": allocatable}}


def _stand_in(index: int, same: Sequence[Workload]) -> dict[str, Any]:
    """One Deployment running every pod of workloads of one shape (placed as they would be:
    the pods are interchangeable), in the first one's namespace, with its claim templates."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"{SHAPE_PREFIX}{index}", "namespace": same[0].namespace},
            "spec": {"replicas": sum(w.pods for w in same),
                     "template": {"spec": same[0].pod}}}


def _offered(node: Node, stack: str) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and allocatable from which the node's devices are predicted on `stack`:
    the device plugin's resources as it advertises them (MIG forms included), so the
    prediction has the MIG devices of a mixed-strategy node. On the device-plugin side each
    time-slicing replica is a GPU a pod can get, so on a time-sliced node the replicas and
    count labels go (else the prediction divides the advertised count by the replicas, or
    takes GFD's physical count); on the DRA side both stay, and the driver's physical GPUs are
    predicted."""
    labels = dict(node.labels)
    advertised = {str(k): str(v) for k, v in as_mapping(
        dig(node.data, "status", "allocatable")).items() if is_device_plugin_resource(str(k))}
    if not advertised:  # counted from its slices or its count label: physical GPUs
        labels.pop(REPLICAS_LABEL, None)
        return labels, {"nvidia.com/gpu": str(node.gpus)}
    if stack != "DRA" and REPLICAS_LABEL in labels:  # each replica is what a pod gets
        labels.pop(REPLICAS_LABEL, None)
        labels.pop(COUNT_LABEL, None)
    return labels, advertised


def _seen_as(node: Node, stack: str) -> tuple[str, str]:
    """The key of the node's prediction: one per stack where `_offered` differs (time-sliced
    nodes), else one for both."""
    return (node.name, stack if REPLICAS_LABEL in node.labels else "")


def _blocked_message(wave: Wave | None, fleet: Fleet) -> str:
    if wave is None:
        return "no node pool left to switch"
    switching = set(wave.nodes)
    held = [w for w in fleet.workloads if w.stays is not None and w.eligible & switching]
    if held and not wave.plugin_side.ok and wave.dra_side.ok:
        # Workloads convert cannot move keep the nodes they may run on.
        return (f"{', '.join(wave.units)} ({plural(len(wave.nodes), 'node')}) stays on the device "
                f"plugin for {plural(len(held), 'workload')} convert cannot move: "
                + "; ".join(f"{w.label}: {w.stays}" for w in held)
                + "; migrate them by hand (docs/convert.md), then run cutover again")
    parts = []
    for side in (wave.plugin_side, wave.dra_side):
        if side.ok:
            continue
        short = max(side.demand - side.gpus, 0)
        numbers = (f"{plural(side.gpus, 'GPU')} on {plural(side.nodes, 'node')} for "
                   f"{plural(side.demand, 'GPU')} of {plural(side.workloads, 'workload')}")
        need = f" (short by {plural(short, 'GPU')})" if short else \
            " (enough GPUs in total, but not where the workloads may run)"
        parts.append(f"the {side.stack} side would have {numbers}{need}; first: "
                     f"{side.failures[0]}")
    if not wave.nodes:  # the wave of workloads whose nodes all publish already
        return (f"cannot move the {plural(len(wave.moved), 'workload')} still on the device "
                "plugin (not converted) onto the nodes that publish already: " + "; ".join(parts))
    return (f"cannot cut over without more capacity: switching the smallest pool left "
            f"({', '.join(wave.units)}, {plural(len(wave.nodes), 'node')}) fails: "
            + "; ".join(parts) + _shared_note(wave, fleet))


def _shared_note(wave: Wave, fleet: Fleet) -> str:
    """Why a time-sliced pool holds fewer pods on DRA (issue 32, item 7): the device plugin
    advertises each GPU once per replica, the DRA driver publishes the physical GPU once."""
    shared = [n for n in fleet.nodes if n.name in wave.nodes and n.gpus > n.devices]
    if wave.dra_side.ok or not shared:
        return ""
    advertised, physical = sum(n.gpus for n in shared), sum(n.devices for n in shared)
    return (f"; {', '.join(wave.units)}: the device plugin time-slices these GPUs, "
            f"{advertised} time-slicing replicas on {physical} physical GPUs, and on DRA each "
            "claim gets a whole physical GPU: scale the workloads down for the switch, or "
            "let pods share a GPU through one ResourceClaim")
