"""``plan(objects, inventory, options)``: the core of ``gpudra plan``.

Flow: objects -> :func:`~gpudra.plan.demand.extract_demand` (workloads, claims, classes) ->
:class:`~gpudra.plan.matching.Matcher` (which devices each request selects; every distinct
expression compiled once, evaluated at most once per device) ->
:func:`~gpudra.plan.resolve.resolve` (requests joined with their devices) ->
:class:`~gpudra.plan.allocate.Simulation` (greedy placement of every pod) -> a
:class:`~gpudra.plan.report.PlanReport`.

Inventory: :func:`~gpudra.plan.inventory.parse_inventory` for ResourceSlices from a file or
the cluster, :func:`~gpudra.plan.synthesis.synthesize` for predictions from Node objects, or
both merged (what ``gpudra plan`` does: :mod:`gpudra.plan.run`).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from gpudra.dra.cel import SelectorEngine
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.k8s.objects import plural
from gpudra.plan.allocate import SEARCH_BUDGET, Simulation, SimulationOptions, WorkloadOutcome
from gpudra.plan.capacity import consumption
from gpudra.plan.demand import (
    ALL, ConvertHook, Demand, PlainOrRecord, Workload, extract_demand,
)
from gpudra.plan.inventory import Device, Inventory
from gpudra.plan.matching import Matcher
from gpudra.plan.node_search import tolerated
from gpudra.plan.report import (
    NETWORK,
    NODE_SAMPLE,
    DeviceSummary,
    NodeDevices,
    PlanReport,
    PlanStats,
    RequestReport,
    WorkloadReport,
)
from gpudra.plan.resolve import (
    Alternative,
    ResolvedClaim,
    ResolvedRequest,
    resolve,
    resolved_for,
)
from gpudra.plan.selector_text import format_quantity
from gpudra.k8s.workloads import WorkloadTable


@dataclass(frozen=True)
class PlanOptions:
    converter: ConvertHook | None = None  # converts not-yet-DRA objects in memory
    table: WorkloadTable | None = None
    engine: SelectorEngine | None = None
    memoise: bool = True  # share CEL results between devices with equal read values
    order: str = "scarcest"  # workload order for the greedy pass: "scarcest" | "input"
    # Kubernetes feature gates, by default as the newest release has them (for_target: as a
    # given release has them)
    consumable_capacity: bool = DEFAULT.supports("allowMultipleAllocations").default_on
    partitionable_devices: bool = DEFAULT.supports("sharedCounters").default_on
    device_taints: bool = DEFAULT.supports("taints").default_on
    search_budget: int = SEARCH_BUDGET
    explain: bool = True  # per-term rejection counts for requests that fall short
    # Node names listed per request (`nodes`, in name order; `matching_nodes` counts them
    # all): a bounded sample keeps the report proportional to the workloads. None: every one,
    # as for a plan of a single workload.
    node_sample: int | None = NODE_SAMPLE
    reuse: bool = True  # pods of one shape share what earlier ones found (SimulationOptions)

    @classmethod
    def for_target(cls, target: TargetVersion, **options: Any) -> PlanOptions:
        """Options with the feature gates `target` has on by default (dra.versions)."""
        gates = {"consumable_capacity": target.supports("allowMultipleAllocations").default_on,
                 "partitionable_devices": target.supports("sharedCounters").default_on,
                 "device_taints": target.supports("taints").default_on}
        return cls(**{**gates, **options})


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside: plans and the inventories they read allocate
    millions of small, acyclic records, which the collector would rescan again and again (a
    third of a plan at 100,000 devices, half of reading and parsing them), as
    gpudra.cluster.jsonparse does per page."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            # What was made inside and is still alive (an inventory, a plan) goes to the oldest
            # generation first (through the permanent one, the only way there): else the first
            # pass once the collector is back on scans all of it as young (0.6 to 0.8 s after
            # 100,000 devices), to no end. Not while something is frozen: that is another's.
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def plan(objects: Iterable[PlainOrRecord], inventory: Inventory,
         options: PlanOptions = PlanOptions()) -> PlanReport:
    with collector_paused():
        return _plan(objects, inventory, options)


def _plan(objects: Iterable[PlainOrRecord], inventory: Inventory, options: PlanOptions) -> PlanReport:
    started = time.perf_counter()
    demand = extract_demand(objects, options.table, options.converter)
    if len(demand.workloads) == 1:  # one workload (a pod verify explains): every node named
        options = replace(options, node_sample=None)
    matcher = Matcher(inventory.devices, options.engine, options.memoise)
    matcher.precompile(_expressions(demand))
    claims = resolve(demand, matcher, options.consumable_capacity)
    simulation = Simulation(inventory, SimulationOptions(
        options.consumable_capacity, options.partitionable_devices, options.device_taints,
        options.order, options.search_budget, options.reuse))
    blocking = {id(w): _blocking(w, claims) for w in demand.workloads}
    outcomes = simulation.run(demand.workloads, claims, lambda w: bool(blocking[id(w)]))
    memo = _SelectionFacts(matcher)
    workloads = tuple(_workload_report(o, claims, blocking[id(o.workload)], memo, options)
                      for o in outcomes)
    devices = _device_summary(inventory, claims, simulation)
    notes = list(inventory.notes)
    if simulation._missing_counters:
        notes.append("counter sets referenced by devices but not in the inventory (not "
                     "enforced): " + ", ".join("/".join(k) for k in sorted(
                         simulation._missing_counters)))
    stats = PlanStats(time.perf_counter() - started, matcher.stats.results,
                      matcher.stats.evaluations, matcher.stats.compiled,
                      sum(w.pods for w in workloads))
    return PlanReport(workloads, devices, inventory.source, demand.unconverted,
                      inventory.problems + demand.problems, tuple(notes), stats)


def _expressions(demand: Demand) -> list[str]:
    out = [e for c in demand.classes.values() for e in c.selectors]
    for workload in demand.workloads:
        for group in workload.groups:
            for claim in group.claims:
                if claim.spec is None:
                    continue
                for request in claim.spec.requests:
                    for alt in request.alternatives:
                        out.extend(alt.selectors)
    return list(dict.fromkeys(out))


def _claims_of(workload: Workload, claims: dict[int, ResolvedClaim]) -> list[ResolvedClaim]:
    return [r for g in workload.groups for c in g.claims
            if (r := resolved_for(c, claims)) is not None]


def _blocking(workload: Workload, claims: dict[int, ResolvedClaim]) -> list[str]:
    """Reasons that make a workload fail before any placement is tried."""
    reasons = list(workload.problems)
    for claim in _claims_of(workload, claims):
        reasons.extend(f"claim {claim.name}: {e}" for e in claim.errors)
        for request in claim.requests:
            alts = request.alternatives
            for alt in alts:
                for failure in alt.selected.compile_errors:
                    reasons.append(f"claim {claim.name} request {alt.name}: {failure.source} "
                                   f"{failure.compile_text}")
                for failure in alt.selected.runtime_errors:
                    reasons.append(
                        f"claim {claim.name} request {alt.name}: {failure.source} fails at run "
                        f"time on {failure.devices} device{'s' if failure.devices != 1 else ''} "
                        f"(first: {failure.device}): {failure.message}; the scheduler aborts "
                        "the pod's scheduling attempt when it reaches such a device")
            if alts and all(not a.selected.matching for a in alts) and not any(
                    a.selected.compile_errors or a.selected.runtime_errors
                    or a.device_class is None for a in alts):
                unknown = sum(len(a.selected.unknown) for a in alts)
                extra = (f" ({unknown} predicted devices could not be judged)"
                         if unknown else "")
                reasons.append(f"claim {claim.name} request {request.name}: no device "
                               f"matches{extra}")
    return list(dict.fromkeys(reasons))


class _SelectionFacts:
    """What the report says about a selection (and a request's tolerations or capacity),
    worked out once: 10,000 workloads over 50 selector sets share 50 selections, and each
    walk of one is a walk of up to every device."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        # keyed by the selection (its id) and what else decides the answer
        self._refused: dict[tuple[int, str], tuple[Device, ...]] = {}
        self._capacity: dict[tuple[int, tuple[tuple[str, Fraction], ...]], tuple[str, ...]] = {}
        self._unions: dict[tuple[int, ...], tuple[int, tuple[str, ...], int]] = {}
        self._tainted = {i for i, d in enumerate(matcher.devices) if d.taints}

    def refused(self, alt: Alternative) -> tuple[Device, ...]:
        """Matching devices with a NoSchedule/NoExecute taint the request does not tolerate."""
        key = (id(alt.selected), repr(alt.request.tolerations))
        found = self._refused.get(key)
        if found is None:
            devices = self.matcher.devices
            # Only tainted devices can refuse; `matching` is sorted, so sorted() keeps its order.
            tainted = sorted(self._tainted.intersection(alt.selected.matching))
            found = tuple(devices[i] for i in tainted if not tolerated(devices[i], alt.request))
            self._refused[key] = found
        return found

    def capacity_rejection(self, alt: Alternative) -> tuple[str, ...]:
        key = (id(alt.selected), tuple(sorted(alt.request.capacity.items())))
        found = self._capacity.get(key)
        if found is None:
            found = self._capacity[key] = _capacity_rejection(alt, self.matcher)
        return found

    def union(self, alternatives: tuple[Alternative, ...]) -> tuple[int, tuple[str, ...], int]:
        """A firstAvailable request: devices any alternative matches, their nodes in name
        order, and how many are network-attached."""
        key = tuple(id(a.selected) for a in alternatives)
        found = self._unions.get(key)
        if found is None:
            devices = self.matcher.devices
            union: set[int] = set()
            for alt in alternatives:
                union.update(alt.selected.matching)
            nodes = tuple(sorted({node for i in union if (node := devices[i].node)}))
            found = self._unions[key] = (len(union), nodes,
                                         sum(1 for i in union if devices[i].node is None))
        return found


def _workload_report(outcome: WorkloadOutcome, claims: dict[int, ResolvedClaim],
                     blocking: list[str], memo: _SelectionFacts, options: PlanOptions
                     ) -> WorkloadReport:
    workload = outcome.workload
    failed_groups = [g for g in outcome.groups if g.failure]
    reason = None
    kind = None
    if blocking:
        reason = blocking[0] + (f" (+{len(blocking) - 1} more)" if len(blocking) > 1 else "")
        kind = "blocked"
    elif failed_groups:
        group = failed_groups[0]
        where = f"{group.path}: " if len(outcome.groups) > 1 else ""
        reason = f"{where}{group.placed} of {plural(group.pods, 'pod')} placed; {group.failure}"
        kind = group.failure_kind
    satisfiable = reason is None
    placement: Counter[str] = Counter()
    chosen: Counter[str] = Counter()
    for group in outcome.groups:
        placement.update(group.nodes)
    requests: list[RequestReport] = []
    for group_index, pod_group in enumerate(workload.groups):
        result = outcome.groups[group_index]
        chosen = Counter(result.chosen)
        for pod_claim in pod_group.claims:
            claim = resolved_for(pod_claim, claims)
            if claim is None:
                continue
            for request in claim.requests:
                requests.append(_request_report(request, claim, pod_group.path, chosen, memo,
                                                options, short=not satisfiable))
    if reason is not None and kind == "blocked" and "no device matches" in blocking[0]:
        zero = next((r for q in requests for a in (q.subrequests or (q,))
                     if a.matching_devices == 0 for r in a.rejections if ": 0 of" in r), None)
        if zero:
            reason = reason.replace("no device matches", f"no device matches ({zero})", 1)
    warnings = tuple(dict.fromkeys(w for g in outcome.groups for w in g.warnings))
    if options.device_taints:
        warnings += _taint_warnings(workload, claims, memo)
    if satisfiable and outcome.pods == 0:
        warnings += ("no pods: replicas is 0, or no node is eligible for the DaemonSet",)
    return WorkloadReport(workload.kind, workload.name, workload.namespace, satisfiable, reason,
                          tuple(requests), outcome.pods, outcome.placed, dict(placement), kind,
                          warnings, workload.converted, workload.file)


def _taint_warnings(workload: Workload, claims: dict[int, ResolvedClaim],
                    memo: _SelectionFacts) -> tuple[str, ...]:
    """Per request: matching devices a NoSchedule/NoExecute taint keeps from it (the NVIDIA
    driver's health checks taint gpu.nvidia.com/xid and gpu.nvidia.com/gpu-lost NoSchedule)
    because it has no matching toleration; the simulation never allocates them."""
    found: list[str] = []
    for claim in _claims_of(workload, claims):
        for request in claim.requests:
            for alt in request.alternatives:
                refused = memo.refused(alt)
                if not refused:
                    continue
                shown = ", ".join(
                    f"{d.node or d.pool}/{d.name} ("
                    + ", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}"
                                for t in d.taints if t.effect in ("NoSchedule", "NoExecute"))
                    + ")" for d in refused[:3])
                more = f" and {len(refused) - 3} more" if len(refused) > 3 else ""
                found.append(f"claim {claim.name} request {alt.name}: "
                             f"{len(refused)} of {len(alt.selected.matching)} matching devices "
                             f"are tainted and not tolerated, so never allocated: {shown}{more}")
    return tuple(dict.fromkeys(found))


def _request_report(request: ResolvedRequest, claim: ResolvedClaim, pod_group: str, chosen: Counter[str],
                    memo: _SelectionFacts, options: PlanOptions, short: bool) -> RequestReport:
    alternatives = [_alternative_report(a, claim, pod_group, chosen, memo, options, short)
                    for a in request.alternatives]
    if not request.first_available:
        return alternatives[0]
    first = alternatives[0]
    devices, nodes, network = memo.union(request.alternatives)
    return RequestReport(
        request.name, first.count, devices, _sample(nodes, options), claim.name, pod_group,
        first.allocation_mode, None, network,
        sum(a.unknown_devices for a in alternatives), sum(a.allocated for a in alternatives),
        tuple(alternatives), tuple(e for a in alternatives for e in a.errors),
        matching_nodes=len(nodes))


def _sample(nodes: tuple[str, ...], options: PlanOptions) -> tuple[str, ...]:
    return nodes if options.node_sample is None else nodes[:options.node_sample]


def _alternative_report(alt: Alternative, claim: ResolvedClaim, pod_group: str,
                        chosen: Counter[str], memo: _SelectionFacts, options: PlanOptions,
                        short: bool) -> RequestReport:
    matcher = memo.matcher
    selected = alt.selected
    request = alt.request
    all_mode = request.allocation_mode == ALL
    errors = tuple(f"{f.source} {f.compile_text}" for f in selected.compile_errors)
    errors += tuple(f"{f.source}: {f.message} on {f.devices} device(s), first {f.device}"
                    for f in selected.runtime_errors)
    rejections: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    cls = alt.device_class
    falls_short = (len(selected.matching) < request.needed
                   or alt.max_on_one_node() < request.needed)
    if cls is not None and not selected.compile_errors and (falls_short or short):
        if options.explain and (falls_short or selected.runtime_errors):
            stats = matcher.explain(cls.name, cls.selectors, request.selectors)
            rejections = tuple(s.message() for s in stats)
        rejections += memo.capacity_rejection(alt)
        hints = tuple(h for e in request.selectors
                      for h in matcher.hints(e, cls.name, cls.selectors))
    return RequestReport(
        alt.sub or alt.parent, None if all_mode else request.count, len(selected.matching),
        _sample(alt.nodes, options), claim.name, pod_group, request.allocation_mode,
        request.device_class, len(alt.network), len(selected.unknown), chosen.get(alt.name, 0),
        (), errors, rejections, hints, matching_nodes=len(alt.nodes))


def _capacity_rejection(alt: Alternative, matcher: Matcher) -> tuple[str, ...]:
    """capacity.requests that no matching device can hold."""
    if not alt.request.capacity or not alt.selected.matching:
        return ()
    fit = [i for i in alt.selected.matching
           if consumption(matcher.devices[i], alt.request.capacity) is not None]
    if fit:
        return ()
    wanted = ", ".join(f"{k}={format_quantity(v)}" for k, v in alt.request.capacity.items())
    largest = {k: max((matcher.devices[i].capacity[k] for i in alt.selected.matching
                       if k in matcher.devices[i].capacity), default=None)
               for k in alt.request.capacity}
    have = ", ".join(f"{k} {format_quantity(v)}" if v is not None else f"no {k}"
                     for k, v in largest.items())
    count = len(alt.selected.matching)
    text = f"capacity.requests {wanted}: fits none of the {count} matching devices (largest: "
    return (f"{text}{have})",)


def _device_summary(inventory: Inventory, claims: dict[int, ResolvedClaim],
                    simulation: Simulation) -> DeviceSummary:
    matched: set[int] = set()
    unknown: set[int] = set()
    selections = {id(a.selected): a.selected for c in claims.values() for r in c.requests
                  for a in r.alternatives}  # shared by many claims: each walked once
    for selected in selections.values():
        matched.update(selected.matching)
        unknown.update(selected.unknown)
    unknown -= matched
    devices = inventory.devices
    # Counted per node by Counter over node names (in C), not device by device (100,000).
    nodes = [NETWORK if d.node is None else d.node for d in devices]
    predicted = [i for i, d in enumerate(devices) if d.predicted]
    total = Counter(nodes)
    on_node = [Counter(map(nodes.__getitem__, indices))
               for indices in (matched, unknown, simulation.allocated, predicted)]
    by_node = {}
    for node, count in total.items():
        m, u, a, p = (c.get(node, 0) for c in on_node)
        by_node[node] = NodeDevices(count, m, count - m - u, u, a, p)
    stranded_at = [i for i in range(len(devices)) if i not in matched and i not in unknown]
    stranded_kinds = Counter(_kind(devices[i]) for i in stranded_at)
    return DeviceSummary(len(devices), len(devices) - len(predicted), len(predicted),
                         len(matched), len(stranded_at), len(unknown), len(simulation.allocated),
                         by_node, dict(stranded_kinds),
                         tuple(devices[i].label for i in stranded_at))


def _kind(device: Device) -> str:
    kind = device.device_type() or device.driver
    product = device.qualified(f"{device.driver}/productName")
    profile = device.qualified(f"{device.driver}/profile")
    parts = [kind] + [str(p) for p in (product, profile) if p is not None]
    return " ".join(parts)
