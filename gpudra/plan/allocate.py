"""Simulated placement: can every pod of every workload get its devices at the same time?

For each workload (in a deterministic order), for each of its pods, the pod's claims must all be
allocated from devices reachable from **one** node: that node's slices plus network-attached
ones (``allNodes``/``nodeSelector`` slices; their node selector is not evaluated), searched
as the allocator does (:mod:`gpudra.plan.node_search`).

A claim named by ``resourceClaimName`` is allocated once, by the first pod that needs it; every
later pod using it must go to the node it was allocated on (unless all its devices are
network-attached). Template claims are new per pod. DaemonSet pods go one to each known node
whose labels (when known) match the pod's ``nodeSelector``; other pods honour ``nodeSelector``
the same way.

**This is a greedy heuristic**, not the scheduler. Pods are placed one after another and never
moved: workloads whose requests match the fewest devices first (``order="scarcest"``, the
default) or in input order, each pod on the first node in name order that fits (packing).
Placements are final, so a pod can fail because earlier pods took the devices in a way the real
scheduler would not have, and the real scheduler, which places pods in creation/priority order
and scores nodes, can fail where this pass succeeds. Each failure says which it is: no device
matches at all, no single node has enough matching devices, the pod does not fit even on an
empty cluster (constraints, capacity, counters), or "competition": it would fit, but the
devices went to workloads placed before it. The per-node search has a step budget (the real
scheduler has a filter timeout); running out is reported.

Not modelled: devices already allocated in the cluster (the plan assumes every device is free),
node taints and pod tolerations, node affinity other than ``nodeSelector``, binding conditions,
pool validity beyond completeness, device taint rules, and scoring.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from gpudra.k8s.objects import plural
from gpudra.plan.demand import Request, Workload
from gpudra.plan.free_counts import Check, FreeCounts, may_fit
from gpudra.plan.inventory import Device, Inventory
from gpudra.plan.node_search import BudgetSpent, MustFail, NodeSearch, Pick
from gpudra.plan.resolve import (
    Alternative,
    ResolvedClaim,
    ResolvedRequest,
    resolved_for,
    unresolved,
)
from gpudra.plan.unplaced import no_fit, no_node

ANY_NODE = "(any node)"  # stands for every node when the inventory names none
SEARCH_BUDGET = 20_000  # candidate devices tried per pod and node
# What a cached answer depends on (a claim's content, a pod's claims, their nodes), hashable
_Key = tuple[Hashable, ...]


@dataclass(frozen=True)
class GroupOutcome:
    """What happened to one pod group (identical pods) of a workload."""

    path: str
    pods: int
    placed: int
    nodes: Mapping[str, int]  # node -> pods placed there
    failure: str | None = None
    failure_kind: str | None = None  # "no-node" | "no-fit" | "competition" | "budget" | "shared"
    #                                  | "error" (the allocator would return an error)
    chosen: Mapping[str, int] = field(default_factory=dict)  # "gpu/h100" -> devices allocated
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkloadOutcome:
    workload: Workload
    groups: tuple[GroupOutcome, ...]

    @property
    def pods(self) -> int:
        return sum(g.pods for g in self.groups)

    @property
    def placed(self) -> int:
        return sum(g.placed for g in self.groups)


# --- the simulation --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Failure:
    message: str
    kind: str


@dataclass(frozen=True)
class SimulationOptions:
    consumable_capacity: bool = True  # DRAConsumableCapacity (beta, on from 1.36)
    partitionable_devices: bool = True  # DRAPartitionableDevices (beta, on from 1.36)
    device_taints: bool = True  # DRADeviceTaints (beta, on from 1.36)
    order: str = "scarcest"  # or "input"
    search_budget: int = SEARCH_BUDGET
    # Pods of one shape (the same claims' content and eligible nodes) reuse what earlier pods
    # of that shape found: feasible nodes, nodes that could not hold one (placements only take
    # devices, so such a node stays unable), the empty-cluster answers. False: every pod
    # searches from scratch; the same results, much slower (the reference for the tests).
    reuse: bool = True


class Simulation(NodeSearch):
    """Greedy placement of a demand's pods on an inventory (see the module docstring)."""

    options: SimulationOptions  # more than the search's SearchOptions: order, reuse

    def __init__(self, inventory: Inventory, options: SimulationOptions = SimulationOptions()
                 ) -> None:
        self.devices: tuple[Device, ...] = inventory.devices
        self.inventory = inventory
        self.options = options
        self.nodes: tuple[str, ...] = inventory.nodes or (ANY_NODE,)
        self.taken: set[int] = set()
        self.consumed: dict[int, dict[str, Fraction]] = {}
        self.counters: dict[tuple[str, str, str], dict[str, Fraction]] = {}
        # shared claim -> its node; None: only network devices, usable anywhere
        self.shared: dict[tuple[str, str], str | None] = {}
        self.allocated: set[int] = set()  # every device some pod got (for the report)
        self._steps = 0
        self.free = FreeCounts()
        self._candidates: dict[tuple[int, str], tuple[int, ...]] = {}
        self._plain: dict[int, bool] = {}  # id of a candidates tuple -> _plain_devices
        self._cursor: dict[_Key, int] = {}
        self._feasible: dict[_Key, tuple[str, ...]] = {}
        self._reaches: dict[_Key, tuple[str, ...] | None] = {}
        self._fits_empty: dict[_Key, bool] = {}
        self._missing_counters: set[tuple[str, str, str]] = set()
        self._eligible: dict[_Key, tuple[str, ...]] = {}
        self._claim_keys: dict[int, _Key] = {}
        self._alone: dict[_Key, int] = {}
        self._no_nodes: dict[_Key, str] = {}

    def _fresh(self) -> Simulation:
        """The same inventory and static lookups, nothing allocated and no free-device
        pruning: for "would it fit without the others" questions."""
        other = Simulation.__new__(Simulation)
        other.__dict__.update(self.__dict__)
        other.taken, other.consumed, other.counters = set(), {}, {}
        other.shared, other.allocated, other._steps = {}, set(), 0
        other.free = FreeCounts()
        other._cursor, other._fits_empty, other._missing_counters = {}, {}, set()
        other._alone, other._no_nodes = {}, {}
        return other

    # --- bookkeeping ------------------------------------------------------------------------

    def _take(self, index: int) -> None:
        self.taken.add(index)
        self.free.take(index, self.devices[index].node)

    def _release(self, index: int) -> None:
        self.taken.discard(index)
        self.free.release(index, self.devices[index].node)

    def candidates(self, alternative: Alternative, node: str) -> tuple[int, ...]:
        """Matching devices reachable from `node`, in the allocator's search order."""
        key = (id(alternative.selected), node)  # by_node and network follow from it
        found = self._candidates.get(key)
        if found is None:
            local = alternative.by_node.get(node, ()) if node != ANY_NODE else ()
            found = tuple(sorted(local + alternative.network))
            self._candidates[key] = found
        return found

    def _plain_devices(self, candidates: tuple[int, ...]) -> bool:
        # Once per candidates tuple: `candidates` keeps each one alive, so its id is its own.
        found = self._plain.get(id(candidates))
        if found is None:
            found = self._plain[id(candidates)] = super()._plain_devices(candidates)
        return found

    # --- running ----------------------------------------------------------------------------

    def run(self, workloads: Sequence[Workload], claims: Mapping[int, ResolvedClaim],
            blocked: Callable[[Workload], bool]) -> list[WorkloadOutcome]:
        """Place the pods of every workload that `blocked` does not rule out; returns the
        outcomes in the order of `workloads`."""
        resolved = {id(w): self._workload_claims(w, claims) for w in workloads}
        for per_group in resolved.values():
            for group_claims in per_group:
                for claim in group_claims:
                    for request in claim.requests:
                        for alternative in request.alternatives:
                            self.free.track(alternative)
        order = list(workloads)
        if self.options.order == "scarcest":
            order.sort(key=lambda w: (_scarcity(resolved[id(w)]), w.key))
        outcomes: dict[int, WorkloadOutcome] = {}
        for workload in order:
            if blocked(workload):
                outcomes[id(workload)] = WorkloadOutcome(workload, tuple(
                    GroupOutcome(g.path, g.pods or 0, 0, {}) for g in workload.groups))
                continue
            groups = tuple(self._group(workload, index, resolved[id(workload)][index])
                           for index in range(len(workload.groups)))
            outcomes[id(workload)] = WorkloadOutcome(workload, groups)
        return [outcomes[id(w)] for w in workloads]

    def _workload_claims(self, workload: Workload, claims: Mapping[int, ResolvedClaim]
                         ) -> list[tuple[ResolvedClaim, ...]]:
        out = []
        for group in workload.groups:
            out.append(tuple(resolved_for(c, claims) or unresolved(c) for c in group.claims))
        return out

    def eligible_nodes(self, selector: Mapping[str, str]) -> tuple[str, ...]:
        """Known nodes whose labels (where known) match a pod's nodeSelector."""
        key = tuple(sorted(selector.items()))
        found = self._eligible.get(key)
        if found is None:
            labels = self.inventory.node_labels
            found = tuple(n for n in self.nodes if n not in labels
                          or all(labels[n].get(k) == v for k, v in key))
            if len(found) == len(self.nodes):
                found = self.nodes  # the same object: _feasible_nodes takes a shortcut for it
            self._eligible[key] = found
        return found

    def _group(self, workload: Workload, index: int, claims: tuple[ResolvedClaim, ...]
               ) -> GroupOutcome:
        group = workload.groups[index]
        eligible = self.eligible_nodes(group.node_selector)
        daemon = group.pods is None
        pods = len(eligible) if daemon else group.pods or 0
        nodes: dict[str, int] = defaultdict(int)
        chosen: dict[str, int] = defaultdict(int)
        warnings: set[str] = set()
        failure = kind = None
        placed = 0
        refused: list[str] = []  # DaemonSet nodes that cannot run the pod
        if not eligible and not daemon and pods:
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(group.node_selector.items()))
            return GroupOutcome(group.path, pods, 0, {}, (
                f"no known node matches the pod's nodeSelector ({wanted})"), "no-node")
        # Without a shared claim (whose first pod pins the rest to its node) every pod of the
        # group is placed alike: where it may go and what it needs are worked out once, not
        # per pod (a fleet's checks place hundreds of thousands of pods).
        alike = None if daemon or not pods or any(c.shared is not None for c in claims) else \
            self._where(claims, eligible, None)
        checks = self.free.checks(alike[0]) if alike is not None and \
            not isinstance(alike, _Failure) else None
        for pod in range(pods):
            only = (eligible[pod],) if daemon else None
            result = self._place_pod(claims, eligible, only, warnings, alike, checks)
            if isinstance(result, _Failure):
                failure, kind = result.message, result.kind
                if daemon:
                    refused.append(eligible[pod])
                    if len(refused) == 1:
                        first = failure
                    failure = (f"{len(refused)} of {pods} eligible nodes cannot run its pod "
                               f"({', '.join(refused[:5])}{', …' if len(refused) > 5 else ''})"
                               f"; first: {first}")
                    continue
                if kind == "competition":
                    alone = self._fit_alone(claims, eligible, pods)
                    if alone < pods:
                        failure = (f"not enough matching devices: even with no other workload "
                                   f"only {alone} of its {plural(pods, 'pod')} fit")
                        kind = "capacity"
                break
            node, picks = result
            placed += 1
            nodes[node] += 1
            for pick in picks:
                chosen[pick.request] += 1
        return GroupOutcome(group.path, pods, placed, dict(nodes), failure, kind, dict(chosen),
                            tuple(sorted(warnings)))

    def _place_pod(self, claims: tuple[ResolvedClaim, ...], eligible: tuple[str, ...],
                   only: tuple[str, ...] | None, warnings: set[str],
                   where: tuple[list[ResolvedClaim], tuple[str, ...], _Key, bool] | _Failure
                   | None = None, checks: list[Check] | None = None
                   ) -> tuple[str, list[Pick]] | _Failure:
        """`where`: what _where gives for these claims, and `checks` what free.checks gives
        for its claims, when the caller knows they hold."""
        if where is None:
            where = self._where(claims, eligible, only)
        if isinstance(where, _Failure):
            return where
        to_allocate, nodes, shape, pinned = where
        if not to_allocate:
            return nodes[0], []
        cacheable = (self.options.reuse and not pinned and only is None
                     and not any(c.shared for c in to_allocate))
        placed = self._scan(to_allocate, nodes, shape, cacheable, warnings, checks)
        if placed is not None:
            return placed
        if self._fits_when_empty(shape, to_allocate, nodes):
            return _Failure("competition: the pod would fit on an empty cluster, but the "
                            "matching devices were taken by pods placed before it (greedy "
                            "order)", "competition")
        return _Failure(no_fit(to_allocate, self.devices), "no-fit")

    def _where(self, claims: tuple[ResolvedClaim, ...], eligible: tuple[str, ...],
               only: tuple[str, ...] | None
               ) -> tuple[list[ResolvedClaim], tuple[str, ...], _Key, bool] | _Failure:
        """The claims still to allocate (a shared claim allocated before pins the pod to its
        node instead), the nodes to try in order, the pod's shape and whether it is pinned."""
        pinned: set[str] = set()
        to_allocate: list[ResolvedClaim] = []
        for claim in claims:
            if claim.shared is not None and claim.shared in self.shared:
                node = self.shared[claim.shared]
                if node is not None:
                    pinned.add(node)
            else:
                to_allocate.append(claim)
        if len(pinned) > 1:
            return _Failure(f"the pod's shared claims are allocated on different nodes "
                            f"({', '.join(sorted(pinned))})", "shared")
        shape = (self._shape(to_allocate), id(eligible))  # eligible: cached per nodeSelector
        if pinned:
            nodes = tuple(n for n in pinned if n in eligible)
            if not nodes:
                return _Failure("a shared claim is allocated on a node the pod's nodeSelector "
                                "excludes", "shared")
        else:
            feasible = self._feasible_nodes(shape, to_allocate, eligible)
            nodes = feasible if only is None else tuple(n for n in only if n in feasible)
            if not nodes:
                return _Failure(self._no_node(to_allocate, only or eligible), "no-node")
        return to_allocate, nodes, shape, bool(pinned)

    def _scan(self, claims: list[ResolvedClaim], nodes: tuple[str, ...], shape: _Key,
              cacheable: bool, warnings: set[str], checks: list[Check] | None = None
              ) -> tuple[str, list[Pick]] | _Failure | None:
        """The first node (from the shape's cursor) that holds the claims, committed; a
        failure when the allocator would return an error or some node's search ran out of
        budget; None when no node fits."""
        start = self._cursor.get(shape, 0) if cacheable else 0
        if checks is None:
            checks = self.free.checks(claims)
        # The first node a later pod of this shape must try again: every node before it was
        # searched to the end without a fit and without a warning, and will be again.
        reopen: int | None = None
        budget_hit = False
        for position in range(start, len(nodes)):
            node = nodes[position]
            if checks and not may_fit(checks, node):
                continue
            noted: set[str] = set()
            try:
                picks = self._allocate_on(node, claims, noted)
            except BudgetSpent:
                budget_hit = True
                picks = None
            except MustFail as failure:
                warnings |= noted
                return _Failure(failure.message or str(failure), "error")
            warnings |= noted
            if reopen is None and (picks is not None or budget_hit or noted):
                reopen = position
            if picks is not None:
                if cacheable:  # reopen is set: at this node at the latest
                    self._cursor[shape] = position if reopen is None else reopen
                self._commit(claims, node, picks)
                return node, picks
        if cacheable:
            self._cursor[shape] = len(nodes) if reopen is None else reopen
        if budget_hit:
            return _Failure("the search ran out of budget on some node (too many combinations "
                            "of candidate devices and constraints)", "budget")
        return None

    def _claim_key(self, claim: ResolvedClaim) -> _Key:
        """What placing a claim depends on: its constraints and its requests' names and
        content, not the workload it came from (every workload has claims of its own)."""
        key = self._claim_keys.get(id(claim))
        if key is None:
            key = (claim.constraints, tuple(
                (r.name, tuple((a.sub, a.key, _request_key(a.request)) for a in r.alternatives))
                for r in claim.requests))
            self._claim_keys[id(claim)] = key
        return key

    def _shape(self, claims: Sequence[ResolvedClaim]) -> _Key:
        return tuple(self._claim_key(c) for c in claims)

    def _fit_alone(self, claims: tuple[ResolvedClaim, ...], eligible: tuple[str, ...],
                   pods: int) -> int:
        """How many of the group's pods fit on an empty cluster (no other workload)."""
        key = (tuple((self._claim_key(c), c.shared) for c in claims), id(eligible), pods)
        found = self._alone.get(key) if self.options.reuse else None
        if found is None:
            alone = self._fresh()
            found = pods
            for placed in range(pods):
                if isinstance(alone._place_pod(claims, eligible, None, set()), _Failure):
                    found = placed
                    break
            if self.options.reuse:
                self._alone[key] = found
        return found

    def _feasible_nodes(self, shape: _Key, claims: Sequence[ResolvedClaim],
                        eligible: tuple[str, ...]) -> tuple[str, ...]:
        """Nodes where every request could be met if nothing were in use (by device counts),
        in the order of `eligible` (a filter of self.nodes: name order)."""
        found = self._feasible.get(shape) if self.options.reuse else None
        if found is not None:
            return found
        reach: tuple[str, ...] | None = None  # None: no request limits the nodes
        for claim in claims:
            for request in claim.requests:
                ok = self._reach(request)
                if ok is not None:
                    reach = ok if reach is None else tuple(sorted(set(reach).intersection(ok)))
        if reach is None:
            found = eligible
        elif eligible is self.nodes:  # every node with devices is one of self.nodes
            found = reach
        else:
            allowed = set(eligible)
            found = tuple(n for n in reach if n in allowed)
        if self.options.reuse:
            self._feasible[shape] = found
        return found

    def _reach(self, request: ResolvedRequest) -> tuple[str, ...] | None:
        """Nodes, in name order, where some alternative of `request` finds enough matching
        devices (network-attached ones count everywhere); None when the network-attached
        ones alone are enough. Per selections and counts: requests of many shapes share it."""
        key = tuple((id(a.selected), a.request.needed) for a in request.alternatives)
        if self.options.reuse and key in self._reaches:
            return self._reaches[key]
        parts: list[tuple[str, ...]] = []  # per alternative, in name order
        found: tuple[str, ...] | None = None
        for alt in request.alternatives:
            need, extra = alt.request.needed, len(alt.network)
            if extra >= need:
                break
            if alt.narrowest >= need:  # every node with a matching device: the usual fleet
                parts.append(alt.nodes)
            else:
                parts.append(tuple(n for n in alt.nodes if len(alt.by_node[n]) + extra >= need))
        else:
            found = parts[0] if len(parts) == 1 else tuple(sorted(set().union(*parts)))
        if self.options.reuse:
            self._reaches[key] = found
        return found

    def _commit(self, claims: Sequence[ResolvedClaim], node: str, picks: list[Pick]) -> None:
        for pick in picks:
            self.allocated.add(pick.device)
        for position, claim in enumerate(claims):
            if claim.shared is not None:
                local = any(self.devices[p.device].node is not None
                            for p in picks if p.claim == position)
                self.shared[claim.shared] = node if local else None

    def _fits_when_empty(self, shape: _Key, claims: Sequence[ResolvedClaim],
                         nodes: tuple[str, ...]) -> bool:
        key = (shape, nodes)  # nodes: the feasible ones, a DaemonSet pod's or a shared claim's
        found = self._fits_empty.get(key) if self.options.reuse else None
        if found is None:
            empty = self._fresh()
            found = False
            for node in nodes:
                try:
                    if empty._allocate_on(node, claims, set()) is not None:
                        found = True
                        break
                except (BudgetSpent, MustFail):
                    continue
            if self.options.reuse:
                self._fits_empty[key] = found
        return found

    # --- explanations -------------------------------------------------------------------------

    def _no_node(self, claims: Sequence[ResolvedClaim], nodes: tuple[str, ...]) -> str:
        """Why no node in `nodes` (the eligible ones, or a DaemonSet pod's own) can do."""
        key = (tuple((c.name, self._claim_key(c)) for c in claims), nodes)
        found = self._no_nodes.get(key) if self.options.reuse else None
        if found is None:
            found = no_node(claims, nodes, self.nodes)
            if self.options.reuse:
                self._no_nodes[key] = found
        return found


def _request_key(request: Request) -> _Key:
    """A request's content, hashable (capacity and tolerations are mappings)."""
    return (request.name, request.device_class, request.selectors, request.allocation_mode,
            request.count, tuple(sorted(request.capacity.items())), request.admin_access,
            repr(request.tolerations))


def _scarcity(groups: list[tuple[ResolvedClaim, ...]]) -> tuple[int, int, int]:
    """Sort key: workloads whose requests match the fewest devices go first, larger pods
    before smaller ones among those (most constrained first)."""
    fewest: int | None = None
    largest = 0
    for claims in groups:
        for claim in claims:
            for request in claim.requests:
                have = max(len(a.selected.matching) for a in request.alternatives)
                fewest = have if fewest is None else min(fewest, have)
                largest = max(largest, min(a.request.count for a in request.alternatives))
    return (0 if fewest is None else 1, fewest or 0, -largest)
