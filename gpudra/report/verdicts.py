"""What every renderer of pass/warn/fail reports shares: the statuses, most severe first, and
when a detail only repeats its message. Apart from `outcomes` so that `html`, which
`outcomes` calls, needs nothing of `outcomes`."""

from __future__ import annotations

STATUSES = ("fail", "warn", "unavailable", "pass")  # most severe first


def repeats(detail: str, message: str) -> bool:
    """A detail whose values (`label: a, b`) all appear in the message adds nothing."""
    values = detail.split(": ", 1)[-1].split(", ")
    return all(v and v in message for v in values)
