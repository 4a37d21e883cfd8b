"""The search for one pod's claims on one node. It mirrors the structured allocator
(kubernetes/dynamic-resource-allocation @ kubernetes-1.36.2,
``structured/internal/incubating/allocator_incubating.go``,
``allocateOne``/``allocateDevice``): claims in order, requests in order, ``firstAvailable``
alternatives in order, candidates in the allocator's device order, combinations without
permutations, backtracking on failure, and per candidate:

* in use -> skipped (exclusive devices), unless the request has ``adminAccess`` (which gpudra
  never marks as taking a device);
* taints with effect NoSchedule/NoExecute must be tolerated by the request;
* consumable capacity (:mod:`gpudra.plan.capacity`): devices with
  ``allowMultipleAllocations`` are shared between claims while their capacities last; on every
  device ``capacity.requests`` must fit;
* partitionable devices (KEP-4815): ``consumesCounters`` take from the pool's shared counter
  sets, skipped for a multi-allocatable device that is already in use;
* ``matchAttribute`` / ``distinctAttribute`` constraints of the claim;
* ``allocationMode: All`` takes every matching device the node can reach (at least one).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from gpudra.plan.capacity import consumption
from gpudra.plan.demand import ALL, Constraint, Request
from gpudra.plan.inventory import Device, Inventory
from gpudra.plan.resolve import Alternative, ResolvedClaim, ResolvedRequest

_Task = tuple[int, ResolvedRequest]  # a request to place, with its claim's position


@dataclass(frozen=True, slots=True)
class Pick:
    claim: int  # index into the pod's claims
    request: str  # "gpu" or "gpu/h100"
    device: int


class BudgetSpent(Exception):
    """The search on a node tried more candidates than its step budget allows."""


class MustFail(Exception):
    """allocationMode All: a device the request must take violates a claim constraint. The
    allocator makes that an error of the whole scheduling attempt, not a node that does not fit
    (allocator_incubating.go allocateDevice with must=true)."""

    def __init__(self, device: str, message: str | None = None) -> None:
        super().__init__(message or device)
        self.device = device
        self.message = message


@dataclass(eq=False)
class _ConstraintState:
    constraint: Constraint
    value: Any = None
    count: int = 0
    seen: dict[Hashable, int] = field(default_factory=dict)  # distinctAttribute: value -> count

    def applies(self, parent: str, sub: str | None) -> bool:
        names = self.constraint.requests
        return not names or parent in names or (sub is not None and f"{parent}/{sub}" in names)


class SearchOptions(Protocol):
    """What the search reads of allocate.SimulationOptions (allocate imports this module, so
    the options are described here rather than imported)."""

    @property
    def consumable_capacity(self) -> bool: ...

    @property
    def partitionable_devices(self) -> bool: ...

    @property
    def device_taints(self) -> bool: ...

    @property
    def search_budget(self) -> int: ...


class NodeSearch:
    """Backtracking over a pod's claims, requests, alternatives and candidate devices on one
    node. A base of :class:`~gpudra.plan.allocate.Simulation`, whose state it allocates from."""

    devices: tuple[Device, ...]
    inventory: Inventory
    options: SearchOptions
    taken: set[int]
    consumed: dict[int, dict[str, Fraction]]
    counters: dict[tuple[str, str, str], dict[str, Fraction]]
    _steps: int
    _missing_counters: set[tuple[str, str, str]]

    def candidates(self, alternative: Alternative, node: str) -> tuple[int, ...]:
        raise NotImplementedError

    def _take(self, index: int) -> None:
        raise NotImplementedError

    def _release(self, index: int) -> None:
        raise NotImplementedError

    def _allocate_on(self, node: str, claims: Sequence[ResolvedClaim], warnings: set[str]
                     ) -> list[Pick] | None:
        """All `claims` on `node`, or None (state unchanged). Raises BudgetSpent."""
        plain = self._plain_picks(node, claims)
        if plain is not None:
            return plain
        tasks = [(position, request) for position, claim in enumerate(claims)
                 for request in claim.requests]
        states = [[_ConstraintState(c) for c in claim.constraints] for claim in claims]
        picks: list[Pick] = []
        self._steps = 0
        if self._solve(node, claims, tasks, 0, states, picks, warnings):
            return picks
        return None

    def _plain_picks(self, node: str, claims: Sequence[ResolvedClaim]) -> list[Pick] | None:
        """The search's result, committed, for the commonest pod: one claim of one request of
        one alternative taking a count of exclusive devices, with no constraint, and on
        candidates with no taint, counter, capacity policy or sharing. Every free candidate
        fits then, so the search takes the first `count` free ones in order, without
        backtracking, in (position of the last + 1) steps. None, with nothing changed, for any
        other pod, for too few free candidates and past the budget: the search decides."""
        if len(claims) != 1 or claims[0].constraints or len(claims[0].requests) != 1:
            return None
        alternatives = claims[0].requests[0].alternatives
        if len(alternatives) != 1:
            return None
        alt = alternatives[0]
        request = alt.request
        options = self.options
        shared_capacity = options.consumable_capacity
        if (request.allocation_mode == ALL or request.admin_access or request.count < 1
                or (shared_capacity and request.capacity)):
            return None
        candidates = self.candidates(alt, node)
        if not self._plain_devices(candidates):
            return None
        chosen: list[int] = []
        taken = self.taken
        steps = 0
        for index in candidates:
            steps += 1
            if index in taken:
                continue
            chosen.append(index)
            if len(chosen) == request.count:
                break
        else:
            return None
        if steps > options.search_budget:
            return None
        self._steps = steps
        picks = []
        for index in chosen:
            self._take(index)
            picks.append(Pick(0, alt.name, index))
        return picks

    def _plain_devices(self, candidates: tuple[int, ...]) -> bool:
        """No candidate has a taint the options judge, counters, capacity policies or sharing:
        any free one serves a plain request (see _plain_picks)."""
        options = self.options
        shared_capacity = options.consumable_capacity
        devices = self.devices
        return not any(
            devices[i].consumes_counters or (devices[i].taints and options.device_taints)
            or (shared_capacity and (devices[i].allow_multiple_allocations
                                     or devices[i].request_policies))
            for i in candidates)

    def _solve(self, node: str, claims: Sequence[ResolvedClaim], tasks: list[_Task], at: int,
               states: list[list[_ConstraintState]], picks: list[Pick], warnings: set[str]) -> bool:
        if at == len(tasks):
            return True
        request = tasks[at][1]
        for alt in request.alternatives:
            candidates = self.candidates(alt, node)
            if alt.request.allocation_mode == ALL:
                if self._take_all(node, claims, tasks, at, alt, candidates, states, picks,
                                  warnings):
                    return True
                continue
            if self._choose(node, claims, tasks, at, alt, candidates, 0, alt.request.count,
                            states, picks, warnings):
                return True
        return False

    def _choose(self, node: str, claims: Sequence[ResolvedClaim], tasks: list[_Task], at: int,
                alt: Alternative, candidates: tuple[int, ...], start: int, remaining: int,
                states: list[list[_ConstraintState]], picks: list[Pick], warnings: set[str]) -> bool:
        if remaining == 0:
            return self._solve(node, claims, tasks, at + 1, states, picks, warnings)
        position = tasks[at][0]
        for offset in range(start, len(candidates) - remaining + 1):
            self._steps += 1
            if self._steps > self.options.search_budget:
                raise BudgetSpent()
            undo = self._try(position, alt, candidates[offset], states[position], picks,
                             warnings)
            if undo is None:
                continue
            try:
                found = self._choose(node, claims, tasks, at, alt, candidates, offset + 1,
                                     remaining - 1, states, picks, warnings)
            except (BudgetSpent, MustFail):
                undo()  # the search is abandoned: leave the simulation as it was
                raise
            if found:
                return True
            undo()
        return False

    def _take_all(self, node: str, claims: Sequence[ResolvedClaim], tasks: list[_Task], at: int,
                  alt: Alternative, candidates: tuple[int, ...], states: list[list[_ConstraintState]],
                  picks: list[Pick], warnings: set[str]) -> bool:
        position = tasks[at][0]
        usable = [i for i in candidates
                  if not self.options.consumable_capacity
                  or consumption(self.devices[i], alt.request.capacity) is not None]
        if not usable:
            return False
        undos = []
        try:
            for index in usable:
                undo = self._try(position, alt, index, states[position], picks, warnings,
                                 must=True)
                if undo is None:
                    break
                undos.append(undo)
            else:
                if self._solve(node, claims, tasks, at + 1, states, picks, warnings):
                    return True
        except (BudgetSpent, MustFail) as failure:
            for undo in reversed(undos):
                undo()
            if isinstance(failure, MustFail) and failure.message is None:
                raise MustFail(failure.device, (
                    f"claim {claims[position].name}, request {alt.sub or alt.parent}: cannot "
                    f"add device {failure.device} because a claim constraint would not be "
                    "satisfied "
                    "(allocationMode All must take every matching device; the scheduler "
                    "aborts the pod's scheduling attempt with this error)")) from None
            raise
        for undo in reversed(undos):
            undo()
        return False

    def _try(self, position: int, alt: Alternative, index: int, states: list[_ConstraintState],
             picks: list[Pick], warnings: set[str], must: bool = False
             ) -> Callable[[], None] | None:
        """Allocate device `index` for `alt` if possible; returns the rollback. `must`
        (allocationMode All): a constraint that refuses the device raises :class:`MustFail`."""
        device = self.devices[index]
        request = alt.request
        multiple = device.allow_multiple_allocations and self.options.consumable_capacity
        exclusive = not multiple and not request.admin_access
        if exclusive and index in self.taken:
            return None
        if request.admin_access and any(p.device == index and p.claim == position for p in picks):
            return None
        if device.taints and self.options.device_taints and not tolerated(device, request):
            return None
        used = None
        # An exclusive device without request policies serves any request without capacity
        # requests: consumption() could not refuse it, and what it returns is not kept.
        if self.options.consumable_capacity and (
                multiple or request.capacity or device.request_policies):
            used = consumption(device, request.capacity, self.consumed.get(index) if multiple
                               else None)
            if used is None:
                return None
        counters = self._take_counters(device, index, multiple)
        if counters is False:
            return None
        constraint_undo = self._constrain(alt, device, states, warnings)
        if constraint_undo is None:
            if callable(counters):
                counters()
            if must:
                raise MustFail(f"{device.driver}/{device.pool}/{device.name}")
            return None
        if exclusive:
            self._take(index)
        if multiple and used is not None:
            held = self.consumed.setdefault(index, {})
            for name, amount in used.items():
                held[name] = held.get(name, Fraction(0)) + amount
        picks.append(Pick(position, alt.name, index))

        def undo() -> None:
            picks.pop()
            if exclusive:
                self._release(index)
            if multiple and used is not None:
                held = self.consumed[index]
                for name, amount in used.items():
                    held[name] -= amount
                if not any(held.values()):
                    del self.consumed[index]
            constraint_undo()
            if callable(counters):
                counters()

        return undo

    def _take_counters(self, device: Device, index: int, multiple: bool
                       ) -> bool | Callable[[], None]:
        """True (nothing to take), False (not enough), or a rollback."""
        if not device.consumes_counters:
            return True
        if not self.options.partitionable_devices:
            return False
        if multiple and index in self.consumed:
            return True  # the allocator skips counters for a shared device already in use
        taken: list[tuple[tuple[str, str, str], str, Fraction]] = []
        for consumption_set in device.consumes_counters:
            key = (device.driver, device.pool, consumption_set.counter_set)
            available = self.inventory.counter_sets.get(key)
            if available is None:
                self._missing_counters.add(key)
                continue
            used = self.counters.setdefault(key, {})
            for name, amount in consumption_set.counters.items():
                limit = available.get(name)
                if limit is None:
                    continue
                if used.get(name, Fraction(0)) + amount > limit:
                    for k, n, a in taken:
                        self.counters[k][n] -= a
                    return False
                used[name] = used.get(name, Fraction(0)) + amount
                taken.append((key, name, amount))

        def undo() -> None:
            for k, n, a in taken:
                self.counters[k][n] -= a

        return undo

    def _constrain(self, alt: Alternative, device: Device, states: list[_ConstraintState],
                   warnings: set[str]) -> Callable[[], None] | None:
        applied: list[tuple[_ConstraintState, Any, str]] = []
        for state in states:
            if not state.applies(alt.parent, alt.sub):
                continue
            constraint = state.constraint
            name = constraint.match_attribute or constraint.distinct_attribute or ""
            value = device.qualified(name)
            if value is None and device.predicted and _unknown(device, name):
                warnings.add(f"{name} of predicted devices is unknown: the constraint on it "
                             "was not checked")
                continue
            if constraint.match_attribute:
                if value is None or (state.count and value != state.value):
                    _rollback(applied)
                    return None
                applied.append((state, value, "match"))
                if state.count == 0:
                    state.value = value
                state.count += 1
            elif constraint.distinct_attribute:
                if value is None or state.seen.get(value):
                    _rollback(applied)
                    return None
                applied.append((state, value, "distinct"))
                state.seen[value] = 1
        return lambda: _rollback(applied)


def _rollback(applied: list[tuple[_ConstraintState, Any, str]]) -> None:
    for state, value, kind in reversed(applied):
        if kind == "match":
            state.count -= 1
            if state.count == 0:
                state.value = None
        else:
            del state.seen[value]
    applied.clear()


def _unknown(device: Device, name: str) -> bool:
    if name in device.unknown:
        return True
    domain, _, ident = name.rpartition("/")
    return domain == device.driver and f"{device.driver}/{ident}" in device.unknown


def tolerated(device: Device, request: Request) -> bool:
    """The request tolerates every NoSchedule/NoExecute taint of the device (a `None` taint,
    such as the NVIDIA driver's gpu.nvidia.com/unmonitored, only informs)."""
    for taint in device.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in request.tolerations):
            return False
    return True


def _tolerates(toleration: Mapping[str, Any], taint: Any) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.key:
        return False
    return operator == "Exists" or str(toleration.get("value", "")) == taint.value
