"""The verdict record of the verdict commands (preflight, plan, verify): one judgement, on
the one scale (Level) that findings' severities and --fail-on use too. Renderers of a list of
them are gpudra.report.outcomes'."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.results.diagnostic import Detail
from gpudra.results.model import Level


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
    extra: Mapping[str, Any] = field(default_factory=dict)  # per-command JSON fields

    @property
    def status(self) -> str:
        """The word reports print: pass, warn, fail, unavailable."""
        return self.level.word
