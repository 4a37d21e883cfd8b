"""Where a verdict points, as data: a `Location` (a file, a line, the path inside an object) and
a `Detail` (one line of a verdict's details, located or not).

A check that judges many files (preflight's manifest checks) says where each of its findings
is with a Location, so a format that can point at a line (GitHub annotations) reads the file
and line from the record; no renderer parses them back out of text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """A place in the inputs: a file, its 1-based line when known, and the dotted path inside
    the object (`spec.devices.requests[0]`) when the judge knows it.

    `file` is as read: like every `file` field it is not escaped by gpudra.printable.escaped,
    so a text renderer prints it through the printable helpers itself."""

    file: str
    line: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        """`file:line`, or the file alone: how details name it."""
        return self.file if self.line is None else f"{self.file}:{self.line}"


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
