"""`--write-baseline FILE` / `--baseline FILE`: fail CI only on findings that are new.

A finding's identity is what it is about: rule, kind, namespace, name, container, resource.
Never its line, file or message, so moving a block, reformatting a file or rewording a message
does not make an old finding new. Identities are counted (two identical containers in two
overlays are two findings), and baseline entries no finding matches any more are "fixed": the
file can shrink.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpudra.errors import ConfigError, UnreadableInputError
from gpudra.model import BaselineCounts, Finding, Report

FORMAT_VERSION = 1
_FIELDS = ("rule", "kind", "namespace", "name", "container", "resource")

Identity = tuple[str | None, ...]


def identity(finding: Finding) -> Identity:
    return tuple(getattr(finding, key) for key in _FIELDS)


@dataclass(frozen=True)
class Baseline:
    file: str
    entries: Counter  # Identity -> how many findings had it

    def split(self, findings: Sequence[Finding]) -> tuple[list[Finding], int, int]:
        """(findings not in the baseline, how many were, baseline entries now fixed)."""
        left = Counter(self.entries)
        new: list[Finding] = []
        for finding in findings:
            key = identity(finding)
            if left[key] > 0:
                left[key] -= 1
            else:
                new.append(finding)
        return new, len(findings) - len(new), sum(left.values())


def as_text(findings: Iterable[Finding]) -> str:
    counts = Counter(identity(f) for f in findings)
    entries = [{**dict(zip(_FIELDS, key)), **({"count": n} if n > 1 else {})}
               for key, n in sorted(counts.items(), key=lambda kv: [v or "" for v in kv[0]])]
    return json.dumps({"version": FORMAT_VERSION, "findings": entries}, indent=2) + "\n"


def write_baseline(path: Path, findings: Iterable[Finding]) -> None:
    from gpudra.safe_write import WriteRefused, replace

    try:  # never through a committed link, into a FIFO or a device
        replace(path, (as_text(findings).encode("utf-8"),))
    except WriteRefused as exc:
        raise UnreadableInputError(f"{path}: cannot write the baseline: {exc}") from None
    except OSError as exc:
        raise UnreadableInputError(f"{path}: cannot write the baseline: {exc.strerror or exc}") \
            from None


def load_baseline(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UnreadableInputError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not a gpudra baseline (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION \
            or not isinstance(data.get("findings"), list):
        raise ConfigError(f"{path}: not a gpudra baseline of version {FORMAT_VERSION} "
                          "(write one with --write-baseline)")
    entries: Counter = Counter()
    for i, entry in enumerate(data["findings"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
            raise ConfigError(f"{path}: findings[{i}] needs at least a rule")
        count = entry.get("count", 1)
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"{path}: findings[{i}]: count must be a positive integer")
        entries[tuple(entry.get(key) for key in _FIELDS)] += count
    return Baseline(str(path), entries)


def apply_baseline(report: Report, baseline: Baseline) -> Report:
    """The report with only the findings the baseline does not hold, and the counts."""
    new, known, fixed = baseline.split(report.findings)
    return replace(report, findings=tuple(new),
                   baseline=BaselineCounts(baseline.file, known, fixed))
