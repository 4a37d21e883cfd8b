"""The one verdict scale (`Level`) and what is judged on it (`Leveled`): the lowest floor of
gpudra.results, below the diagnostic record (results.diagnostic) whose scale it is."""

from __future__ import annotations

import enum
from typing import Protocol


class Level(enum.IntEnum):
    """One ordered scale for every verdict gpudra reports: a finding's severity, a check's
    outcome and a plan or verify verdict are points on it, and --fail-on is a threshold on it.
    `info` (audit's) and `unavailable` (preflight's) never meet: no command reports both."""

    PASS = 0
    INFO = 1
    UNAVAILABLE = 2
    WARN = 3
    FAIL = 4

    @property
    def word(self) -> str:
        """How verdict reports name it: pass, info, unavailable, warn, fail."""
        return self.name.lower()


class Leveled(Protocol):
    """Anything judged on the one scale: a severity, a check's outcome, a verdict."""

    @property
    def level(self) -> Level: ...
