"""The verdict records of the verdict commands (preflight, plan, verify): one judgement, on
the one scale (Level) that findings' severities and --fail-on use too, and what verify says
beside its verdicts (a workload's live facts, the decommission gate). Renderers of a list of
them are gpudra.report.outcomes'."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudra.results.diagnostic import Detail, Diagnostic, Location
from gpudra.results.model import Level


# A value of a verdict report's summary: a count, a word, a flag, or a group of them
# (preflight's `baseline`: file, known, fixed).
Scalar = str | int | float | bool | None
SummaryValue = Scalar | Mapping[str, Scalar]


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    """What verify read of one workload, beside its verdict: the JSON fields of each
    `.workloads[]` entry of `gpudra verify -o json` (docs/verify.md)."""

    state: str                    # device_plugin, bridge, claims; missing: not in the cluster
    pods: int
    pods_ready: int
    claims: int
    claims_allocated: int
    kind: str
    name: str | None
    namespace: str | None
    moved_by_wave: str | None     # the wave file that moves it (verify --wave-of)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One verdict of a verdict command: a preflight check's result (CheckResult.as_outcome),
    a plan or verify workload, verify's gate."""

    id: str                       # a check id, or a workload for plan
    title: str
    level: Level                  # PASS, UNAVAILABLE, WARN or FAIL
    message: str                  # one line: what was found
    remediation: str | None = None
    subject: str | None = None    # what was judged: a node, a file, a workload
    details: tuple[Detail, ...] = ()  # each located when it is about one place
    file: str | None = None
    line: int | None = None
    skipped: bool = False         # run, but its outcome does not count (--skip)
    workload: WorkloadFacts | None = None  # verify: the workload's live facts

    @property
    def status(self) -> str:
        """The word reports print: pass, warn, fail, unavailable."""
        return self.level.word

    @property
    def diagnostic(self) -> Diagnostic:
        """The verdict as the formats every command shares read it; the title and `skipped`
        are the verdict report's own."""
        place = None if self.file is None else Location(self.file, self.line)
        return Diagnostic(self.id, self.level, self.message, place, self.subject,
                          self.remediation, self.details)


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """verify's decommission gate: may the device plugin go? A row of every human format (its
    `outcome`, listed after the workloads); in JSON the key `.decommission` of its own, since
    it is no workload."""

    outcome: Outcome
    safe: bool
    judged: bool                  # False: not judged (-n, --selector, objects unread)
    blockers: tuple[str, ...]     # what stands in the way, one line each
    warnings: tuple[str, ...]     # what should be done but does not stand in the way
