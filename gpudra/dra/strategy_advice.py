"""When gpudra recommends the bridge strategy over rewriting workloads to claims, in the one
line cutover's and audit's summaries print.

The extended-resource bridge (KEP-5004, `DeviceClass.spec.extendedResourceName`) is GA and
locked on from Kubernetes 1.37 (docs/facts.md, "The bridge, its neighbours and the strategy"):
an unchanged pod asking `nvidia.com/gpu: N` is then served by DRA on nodes without
device-plugin capacity, so pools switch with no manifest change. The bridge serves whole GPUs
only: MIG profiles and shared (time-sliced, MPS) GPUs still need a rewrite or a class of their
own. So the recommendation needs a 1.37+ target and a fleet that is *mostly whole GPUs*: of
the GPU workloads still on the device plugin, at least MOSTLY_WHOLE (four in five) ask for
whole GPUs only. Below that share most of the fleet is rewritten anyway, and one strategy for
all is simpler to run and verify.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from gpudra.dra.versions import TargetVersion
from gpudra.results.model import Finding, WorkloadStatus

BRIDGE_GA_MINOR = 37          # KEP-5004 `stage: stable`, DRAExtendedResource GA and locked
MOSTLY_WHOLE = Fraction(4, 5)  # the share of device-plugin workloads asking whole GPUs only
# The command that plans the bridge strategy (issue 33, item 1)
COMMAND = "gpudra cutover --strategy bridge"
# The audit's rules for a device-plugin request, by what it asks (rules/device_requests.py)
WHOLE_RULE = "GPU101"
PARTIAL_RULES = frozenset({"GPU102", "GPU103"})  # a MIG profile; a shared GPU


@dataclass(frozen=True, slots=True)
class FleetMix:
    """GPU workloads still on the device plugin, by what they ask for."""

    whole: int    # whole GPUs only (`nvidia.com/gpu` on nodes that do not share them)
    partial: int  # a MIG profile or a shared GPU (time-slicing, MPS, `.shared` names)

    @property
    def total(self) -> int:
        return self.whole + self.partial

    @property
    def mostly_whole(self) -> bool:
        return self.total > 0 and Fraction(self.whole, self.total) >= MOSTLY_WHOLE


def bridge_advice(target: TargetVersion, mix: FleetMix) -> str | None:
    """The recommendation line, or None when the bridge is not the better plan: a target
    before 1.37, nothing left on the device plugin, or too many MIG or shared workloads."""
    if target.minor < BRIDGE_GA_MINOR or not mix.mostly_whole:
        return None
    rest = (f"; only the {mix.partial} asking for MIG or shared GPUs need claims"
            if mix.partial else "")
    return (f"recommended: the bridge strategy ({COMMAND}): {mix.whole} of the {mix.total} GPU "
            f"workloads still on the device plugin ask for whole GPUs, and on 1.{target.minor} "
            "the extended-resource bridge (KEP-5004, GA in 1.37) serves them unchanged, so "
            f"pools switch with no manifest change{rest} (docs/cutover.md, \"Choosing a "
            "strategy\")")


def audit_mix(findings: Iterable[Finding], workloads: Iterable[WorkloadStatus]) -> FleetMix:
    """An audit's workloads still on the device plugin, by the requests its findings name: a
    workload with a MIG or shared request (GPU102, GPU103) is partial, one with only whole
    GPUs (GPU101) whole. A time-slicing config that keeps the name `nvidia.com/gpu` is not in
    a manifest: cutover, which reads the nodes, counts those workloads as partial."""
    asked: dict[tuple[str | None, ...], set[str]] = {}  # (file, kind, name, namespace)
    for finding in findings:
        if finding.rule == WHOLE_RULE or finding.rule in PARTIAL_RULES:
            key = (finding.file, finding.kind, finding.name, finding.namespace)
            asked.setdefault(key, set()).add(finding.rule)
    whole = partial = 0
    for workload in workloads:
        if workload.state != "device_plugin":
            continue
        rules = asked.get((workload.file, workload.kind, workload.name, workload.namespace),
                          set())
        if rules & PARTIAL_RULES:
            partial += 1
        elif WHOLE_RULE in rules:
            whole += 1
    return FleetMix(whole, partial)
