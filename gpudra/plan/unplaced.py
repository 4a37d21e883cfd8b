"""Why a pod could not be placed, in words: the failure texts of :mod:`gpudra.plan.allocate`
for "no node has enough matching devices" and "no node can hold the pod"."""

from __future__ import annotations

from collections.abc import Sequence

from gpudra.k8s.objects import plural
from gpudra.plan.inventory import Device
from gpudra.plan.resolve import Alternative, ResolvedClaim


def no_node(claims: Sequence[ResolvedClaim], nodes: tuple[str, ...],
            known: tuple[str, ...]) -> str:
    """Why no node in `nodes` (the eligible ones, or a DaemonSet pod's own) can do; `known`:
    every node of the inventory."""
    for claim in claims:
        for request in claim.requests:
            def reach(alt: Alternative) -> int:  # len(candidates) without building them
                return max((len(alt.by_node.get(n, ())) for n in nodes), default=0) + len(
                    alt.network)

            best = max(request.alternatives, key=reach)
            need = best.request.needed
            most = reach(best)
            if most < need:
                where = (f"node {nodes[0]} has {most}" if len(nodes) == 1
                         else f"the most any eligible node has is {most}")
                if len(nodes) < len(known) and len(nodes) != 1:
                    where += (f" ({len(nodes)} of {plural(len(known), 'node')} "
                          f"{'is' if len(nodes) == 1 else 'are'} eligible)")
                return (f"claim {claim.name} request {request.name} needs {need} matching "
                        f"device{'s' if need != 1 else ''} on one node; {where}")
    return "no eligible node has enough matching devices for all of the pod's claims"


def no_fit(claims: Sequence[ResolvedClaim], devices: Sequence[Device]) -> str:
    """Why the pod fits no node even with every device free."""
    parts = []
    if any(c.constraints for c in claims):
        parts.append("matchAttribute/distinctAttribute constraints")
    if any(a.request.capacity for c in claims for r in c.requests for a in r.alternatives):
        parts.append("capacity requests")
    seen: set[int] = set()
    for request in (r for c in claims for r in c.requests):
        selected = {i for a in request.alternatives for i in a.selected.matching}
        if selected & seen:
            parts.append("several requests competing for the same devices")
            break
        seen |= selected
    candidates = {i for c in claims for r in c.requests for a in r.alternatives
                  for i in a.selected.matching}
    if any(devices[i].consumes_counters for i in candidates):
        parts.append("shared counters of partitionable devices")
    if any(devices[i].taints for i in candidates):
        parts.append("device taints")
    why = ", ".join(parts) or "capacity"
    return f"no node can hold the pod even with every device free ({why})"
