"""Requests joined with the devices they select: the input of the placement simulation.

Each request (or ``firstAvailable`` alternative) of each distinct claim spec is resolved once:
its DeviceClass is looked up (a missing class is an error of the claim), the class and request
selectors are evaluated by :class:`~gpudra.plan.matching.Matcher`, and the matching devices are
split per node, network-attached ones apart. Capacity requests while DRAConsumableCapacity is
off are an error, as in the allocator (kubernetes/dynamic-resource-allocation @
kubernetes-1.36.2, ``allocator_incubating.go``: "has capacity requests, but the
DRAConsumableCapacity feature is disabled").
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudra.plan.demand import Constraint, Demand, DeviceClass, PodClaim, Request
from gpudra.plan.matching import Matcher, SetResult


# What the devices an alternative matches depend on: its class by name, the class's selectors
# and its own
SelectorSet = tuple[str, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, eq=False)
class Alternative:
    """One request, or one ``firstAvailable`` subrequest, joined with the devices it selects."""

    parent: str
    sub: str | None
    request: Request
    device_class: DeviceClass | None
    selected: SetResult
    by_node: Mapping[str, tuple[int, ...]]
    network: tuple[int, ...]
    nodes: tuple[str, ...]  # the keys of by_node in name order
    widest: int  # the most matching devices one node reaches: its own plus the network's
    narrowest: int  # the fewest one of `nodes` reaches (0 without nodes)

    @property
    def name(self) -> str:
        return f"{self.parent}/{self.sub}" if self.sub else self.parent

    @property
    def key(self) -> SelectorSet:
        cls = self.device_class
        return (self.request.device_class, cls.selectors if cls else (), self.request.selectors)

    def max_on_one_node(self) -> int:
        return self.widest


@dataclass(frozen=True, eq=False)
class ResolvedRequest:
    name: str
    alternatives: tuple[Alternative, ...]
    first_available: bool = False


@dataclass(frozen=True, eq=False)
class ResolvedClaim:
    name: str  # the pod's name for the claim
    source: str
    requests: tuple[ResolvedRequest, ...]
    constraints: tuple[Constraint, ...] = ()
    shared: tuple[str, str] | None = None
    errors: tuple[str, ...] = ()


def resolve(demand: Demand, matcher: Matcher, consumable_capacity: bool = True
            ) -> dict[int, ResolvedClaim]:
    """Every claim spec of the demand resolved once (keyed by ``id(PodClaim.spec)``; claims
    without a spec are resolved per pod claim by :func:`resolve_claim`)."""
    out: dict[int, ResolvedClaim] = {}
    splits = _Splits()
    for workload in demand.workloads:
        for group in workload.groups:
            for claim in group.claims:
                if claim.spec is not None and id(claim.spec) not in out:
                    out[id(claim.spec)] = resolve_claim(claim, demand, matcher,
                                                        consumable_capacity, splits)
    return out


def resolved_for(claim: PodClaim, claims: Mapping[int, ResolvedClaim]) -> ResolvedClaim | None:
    """The resolved spec of a pod claim (from :func:`resolve`); None when it has none."""
    return claims.get(id(claim.spec)) if claim.spec is not None else None


def unresolved(claim: PodClaim) -> ResolvedClaim:
    """A pod claim without a spec: no requests, and why as its error."""
    return ResolvedClaim(claim.name, claim.source, (), (), claim.shared,
                         (claim.problem or "claim not found",))


def resolve_claim(claim: PodClaim, demand: Demand, matcher: Matcher,
                  consumable_capacity: bool = True, splits: _Splits | None = None
                  ) -> ResolvedClaim:
    if claim.spec is None:
        return unresolved(claim)
    errors = list(claim.spec.problems)
    requests = []
    for request in claim.spec.requests:
        alternatives = []
        for alt in request.alternatives:
            sub = alt.name if request.subrequests else None
            device_class = demand.classes.get(alt.device_class)
            label = f"request {request.name}" + (f"/{sub}" if sub else "")
            if device_class is None:
                if alt.device_class:
                    errors.append(f"{label}: DeviceClass {alt.device_class!r} not found")
                selected = SetResult((), 0)
            else:
                selected = matcher.select(device_class.name, device_class.selectors,
                                          alt.selectors)
            if alt.capacity and not consumable_capacity:
                errors.append(f"{label}: has capacity requests, but the DRAConsumableCapacity "
                              "feature is disabled")
            split = _split(selected, matcher, _Splits() if splits is None else splits)
            alternatives.append(Alternative(request.name, sub, alt, device_class, selected,
                                            *split))
        requests.append(ResolvedRequest(request.name, tuple(alternatives),
                                        bool(request.subrequests)))
    return ResolvedClaim(claim.name, claim.source, tuple(requests), claim.spec.constraints,
                         claim.shared, tuple(errors))


_Split = tuple[Mapping[str, tuple[int, ...]], tuple[int, ...], tuple[str, ...], int, int]
_PerNode = tuple[Mapping[str, tuple[int, ...]], tuple[int, ...]]


@dataclass
class _Splits:
    """The splits one resolve has made, by the id of a selection (a SetResult) and of a
    group of equal devices (a member tuple of the matcher's); both live as long as it."""

    selections: dict[int, _Split] = field(default_factory=dict)
    groups: dict[int, _PerNode] = field(default_factory=dict)


def _split(selected: SetResult, matcher: Matcher, splits: _Splits) -> _Split:
    """Matching devices per node, the network-attached ones, the nodes in name order and the
    most and fewest one node reaches: computed once per selection and shared by every request
    using it (10,000 workloads over 50 selector sets must not cost 10,000 walks of 100,000
    devices). A selection the matcher made of groups of equal devices is joined from each
    group's split, itself made once."""
    found = splits.selections.get(id(selected))
    if found is None:
        per_node: _PerNode
        if selected.parts is None:
            per_node = _per_node(selected.matching, matcher)
        else:
            per_node = _joined(selected.parts, matcher, splits.groups)
        by_node, network = per_node
        sizes = list(map(len, by_node.values()))
        found = (by_node, network, tuple(sorted(by_node)), max(sizes, default=0) + len(network),
                 min(sizes, default=0) + len(network))
        splits.selections[id(selected)] = found
    return found


def _per_node(devices: tuple[int, ...], matcher: Matcher
              ) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    """`devices` (in index order) per node, and the network-attached ones."""
    by_node: dict[str, list[int]] = {}
    network: list[int] = []
    # A node's devices are mostly adjacent in the allocator's order: one step per run.
    for node, run in itertools.groupby(devices, matcher.device_nodes.__getitem__):
        if node is None:
            network.extend(run)
        elif (found := by_node.get(node)) is None:
            by_node[node] = list(run)
        else:
            found.extend(run)
    return {k: tuple(v) for k, v in by_node.items()}, tuple(network)


def _joined(parts: tuple[tuple[int, ...], ...], matcher: Matcher,
            made: dict[int, _PerNode]) -> _PerNode:
    """_per_node of the union of disjoint `parts` (each in index order), from each part's,
    which `made` holds by the part's id."""
    splits: list[_PerNode] = []
    for part in parts:
        found = made.get(id(part))
        if found is None:
            found = made[id(part)] = _per_node(part, matcher)
        splits.append(found)
    if len(splits) == 1:
        return splits[0]  # never written to: shared
    by_node: dict[str, tuple[int, ...]] = {}
    several: set[str] = set()  # nodes with devices in more than one part
    network: list[int] = []
    for part_nodes, part_network in splits:
        network += part_network
        for node, devices in part_nodes.items():
            have = by_node.get(node)
            if have is None:
                by_node[node] = devices
            else:
                by_node[node] = have + devices
                several.add(node)
    for node in several:
        by_node[node] = tuple(sorted(by_node[node]))
    network.sort()
    return by_node, tuple(network)
