"""Migration progress figures derived from a Report; shared by every renderer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.results.model import MOST_SEVERE_FIRST, Report, Severity
from gpudra.k8s.objects import plural


@dataclass(frozen=True, slots=True)
class NamespaceProgress:
    namespace: str
    gpu_workloads: int
    on_dra: int
    on_bridge: int = 0

    @property
    def percent_migrated(self) -> float:
        return percent_of(self.on_dra + self.on_bridge, self.gpu_workloads)


@dataclass(frozen=True, slots=True)
class Summary:
    files_scanned: int
    documents_parsed: int
    findings: dict[str, int]
    errors: int
    suppressed: int
    gpu_workloads: int
    on_device_plugin: int
    on_dra: int
    namespaces: tuple[NamespaceProgress, ...]
    source: str = "file"
    objects_read: int = 0
    on_bridge: int = 0  # served by DRA through a DeviceClass's extendedResourceName
    incomplete: bool = False  # an input could not be read: no workloads is not a fact
    skipped: int = 0
    advice: str | None = None  # the strategy recommendation (gpudra.dra.strategy_advice)
    # GPU workloads on the device plugin in kinds gpudra's controller registry does not list:
    # convert blocks them (unchecked) or converts them on the user's word (vouched).
    unchecked: int = 0
    vouched: int = 0

    @property
    def percent_migrated(self) -> float | None:
        """Workloads on DRA (claims or the bridge) in percent; None when nothing was found
        and an input could not be read (100% would be a guess)."""
        if self.incomplete and not self.gpu_workloads:
            return None
        return percent_of(self.on_dra + self.on_bridge, self.gpu_workloads)

    @property
    def read(self) -> str:
        """What the run read, in words: files and documents, or cluster objects."""
        if self.source == "cluster":
            return f"{plural(self.objects_read, 'object')} read from the cluster"
        return files_read(self.files_scanned, self.documents_parsed, self.skipped)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "files_scanned": self.files_scanned,
            "documents_parsed": self.documents_parsed,
            "objects_read": self.objects_read,
            "skipped": self.skipped,
            "findings": dict(self.findings),
            "errors": self.errors,
            "suppressed": self.suppressed,
            "gpu_workloads": self.gpu_workloads,
            "on_device_plugin": self.on_device_plugin,
            "on_dra": self.on_dra,
            "on_bridge": self.on_bridge,
            "percent_migrated": self.percent_migrated,
            "recommendation": self.advice,
            "unchecked_kinds": self.unchecked,
            "vouched_kinds": self.vouched,
            "namespaces": [
                {
                    "namespace": ns.namespace,
                    "gpu_workloads": ns.gpu_workloads,
                    "on_dra": ns.on_dra,
                    "on_bridge": ns.on_bridge,
                    "percent_migrated": ns.percent_migrated,
                }
                for ns in self.namespaces
            ],
        }


def percent_of(part: int, whole: int) -> float:
    # An estate with no GPU workloads has nothing left to migrate.
    return 100.0 if whole == 0 else round(100.0 * part / whole, 1)


NO_NAMESPACE = "(unset)"


def files_read(files: int, documents: int, skipped: int) -> str:
    """What a run over files read, in the words audit and convert both use."""
    return (f"{plural(files, 'file')} scanned, {plural(documents, 'document')} parsed"
            + (f", {skipped} skipped (not Kubernetes objects)" if skipped else ""))


def unchecked_words(s: Summary) -> str:
    """How many GPU workloads sit in kinds whose controllers gpudra has not checked."""
    parts = []
    if s.unchecked:
        parts.append(f"{plural(s.unchecked, 'GPU workload')} in kinds whose controllers gpudra "
                     "has not checked (convert blocks them; docs/controllers.md)")
    if s.vouched:
        parts.append(f"{s.vouched} in kinds .gpudra.yaml vouches for")
    return "; ".join(parts)


def severity_counts(counts: Mapping[str, int]) -> str:
    """`1 error, 2 warnings, 3 info`: the severities that occur, most severe first; '' if none.
    ("info" is a mass noun: `3 info`.)"""
    parts = []
    for severity in MOST_SEVERE_FIRST:
        n = counts.get(severity.value, 0)
        if n:
            parts.append(f"{n} info" if severity is Severity.INFO else plural(n, severity.value))
    return ", ".join(parts)


def summarize(report: Report) -> Summary:
    """A workload counts as migrated when it no longer uses the device plugin: it is on claims,
    or its pods' nvidia.com/gpu is served by DRA through the bridge (a third state)."""
    per_ns: dict[str, list[int]] = {}
    on_dp = on_dra = on_bridge = unchecked = vouched = 0
    for w in report.workloads:
        state = w.state
        on_dp += state == "device_plugin"
        unchecked += state == "device_plugin" and w.unchecked
        vouched += state == "device_plugin" and w.vouched
        on_dra += state == "claims"
        on_bridge += state == "bridge"
        bucket = per_ns.setdefault(w.namespace or NO_NAMESPACE, [0, 0, 0])
        bucket[0] += 1
        bucket[1] += state == "claims"
        bucket[2] += state == "bridge"
    namespaces = tuple(
        NamespaceProgress(ns, total, dra, bridge)
        for ns, (total, dra, bridge) in sorted(per_ns.items())
    )
    return Summary(
        files_scanned=report.files_scanned,
        documents_parsed=report.documents_parsed,
        source=report.source,
        objects_read=report.objects_read,
        skipped=len(report.skipped),
        findings=report.counts_by_severity(),
        errors=len(report.errors),
        suppressed=report.suppressed,
        gpu_workloads=len(report.workloads),
        on_device_plugin=on_dp,
        on_dra=on_dra,
        namespaces=namespaces,
        on_bridge=on_bridge,
        incomplete=bool(report.errors) or report.nothing_read,
        advice=report.advice,
        unchecked=unchecked,
        vouched=vouched,
    )


def held_back(report: Report) -> list[str]:
    """What the run counted but does not report: waived findings, and what --baseline held
    back and found fixed (so the baseline can shrink)."""
    out = []
    if report.waived:
        out.append(f"{len(report.waived)} waived")
    if report.baseline is not None:
        out.append(f"{report.baseline.known} known in the baseline")
        if report.baseline.fixed:
            entries = "entry" if report.baseline.fixed == 1 else "entries"
            out.append(f"{report.baseline.fixed} baseline {entries} fixed (shrink it with "
                       "--write-baseline)")
    return out
