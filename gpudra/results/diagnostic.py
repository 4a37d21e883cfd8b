"""The one diagnostic record every verdict gpudra reports is a view of, and its parts.

A `Diagnostic` is one judgement: what judged (a rule or check id), on the one scale `Level`,
the message, where (`Location`: a file, a line, the path inside the object), what it is about,
what to do, and `Detail` lines. An audit `Finding` (results.model) and a verdict command's
`Outcome` (results.outcome; a preflight CheckResult through as_outcome) each keep their own
fields and expose their `diagnostic`; the formats commands share (GitHub annotations, JUnit
lines, SARIF results) render it.

A check that judges many files (preflight's manifest checks) says where each of its findings
is with a Location, so a format that can point at a line (GitHub annotations) reads the file
and line from the record; no renderer parses them back out of text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The scale lives apart so that what only needs a Level (every command's start-up, through
# results.model) does not build the records below (2 ms of class creation).
from gpudra.results.levels import Level as Level, Leveled as Leveled


@dataclass(frozen=True, slots=True)
class Location:
    """A place in the inputs: a file (None: a live object, named by the diagnostic's subject),
    its 1-based line when known, and the dotted path inside the object
    (`spec.devices.requests[0]`) when the judge knows it.

    `file` is as read: like every `file` field it is not escaped by gpudra.printable.escaped,
    so a text renderer prints it through the printable helpers itself."""

    file: str | None
    line: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        """`file:line`, or the file alone: how details name it."""
        file = self.file or "-"
        return file if self.line is None else f"{file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Detail:
    """One line of a verdict's details: a text, and where it is when it is about one place.
    Shown as `file:line text` (the Location first), the form every format prints."""

    text: str
    location: Location | None = None

    def __str__(self) -> str:
        return self.text if self.location is None else f"{self.location} {self.text}"


def as_details(lines: Iterable[str | Detail]) -> tuple[Detail, ...]:
    """Details from lines of text (unlocated) and Details as they are."""
    return tuple(line if isinstance(line, Detail) else Detail(line) for line in lines)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One judgement, as every shared format reads it. `id`: the rule or check (a workload for
    plan and verify); `subject`: what was judged (`namespace/Kind/name`, a node, a file);
    `remediation`: what to do (a finding's hint, a check's fix)."""

    id: str
    level: Level
    message: str
    location: Location | None = None
    subject: str | None = None
    remediation: str | None = None
    details: tuple[Detail, ...] = ()
