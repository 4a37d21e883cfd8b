"""Free matching devices per selector set and node while pods are placed: a cheap upper
bound that lets :mod:`gpudra.plan.allocate` skip nodes that surely cannot hold a pod, without
searching them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Sequence

from gpudra.plan.demand import ALL
from gpudra.plan.resolve import Alternative, ResolvedClaim, SelectorSet

# (free devices by node, None: network-attached; devices needed)
Check = tuple[dict[str | None, int], int]


class FreeCounts:
    """Counts per selector set (Alternative.key) and node, lowered as devices are taken.
    Empty (nothing tracked) it prunes nothing."""

    def __init__(self) -> None:
        self._free: dict[SelectorSet, dict[str | None, int]] = {}
        # node (None: network-attached) -> the counts of each selector set matching devices
        # there, with those devices: a taken device lowers the counts whose devices hold it.
        self._at: dict[str | None, list[tuple[dict[str | None, int], Container[int]]]] = {}

    def track(self, alternative: Alternative) -> None:
        key = alternative.key
        if key in self._free:
            return
        counts: dict[str | None, int] = defaultdict(int)
        counts.update((node, len(devices)) for node, devices in alternative.by_node.items())
        at = self._at
        for node, devices in alternative.by_node.items():  # a short tuple is searched fastest
            (at.get(node) or at.setdefault(node, [])).append(
                (counts, devices if len(devices) <= 16 else frozenset(devices)))
        if alternative.network:
            counts[None] = len(alternative.network)
            at.setdefault(None, []).append((counts, frozenset(alternative.network)))
        self._free[key] = counts

    def take(self, index: int, node: str | None) -> None:
        for counts, devices in self._at.get(node, ()):
            if index in devices:
                counts[node] -= 1

    def release(self, index: int, node: str | None) -> None:
        for counts, devices in self._at.get(node, ()):
            if index in devices:
                counts[node] += 1

    def checks(self, claims: Sequence[ResolvedClaim]) -> list[Check]:
        """What every single-alternative ExactCount request needs, against its live counts:
        a node where one of them lacks free devices surely cannot hold the pod."""
        found = []
        for claim in claims:
            for request in claim.requests:
                if len(request.alternatives) != 1:
                    continue
                alt = request.alternatives[0]
                if alt.request.allocation_mode == ALL or alt.request.admin_access:
                    continue
                free = self._free.get(alt.key)
                if free is not None:
                    found.append((free, alt.request.count))
        return found


def may_fit(checks: list[Check], node: str) -> bool:
    for free, count in checks:
        if free.get(node, 0) + free.get(None, 0) < count:
            return False
    return True
