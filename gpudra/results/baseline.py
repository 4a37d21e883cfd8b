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
from gpudra.results.model import BaselineCounts, Finding, Report
from gpudra.safe_write import WriteRefused
from gpudra.safe_write import replace as replace_file
from gpudra.input_files import decode_json, read_small

FORMAT_VERSION = 1
_FIELDS = ("rule", "kind", "namespace", "name", "container", "resource")

Identity = tuple[str | None, ...]
MAX_COUNT = 2**31 - 1  # findings of one identity; a tree holding more is no tree


def identity(finding: Finding) -> Identity:
    return tuple(getattr(finding, key) for key in _FIELDS)


@dataclass(frozen=True, slots=True)
class BaselineEntry:
    """One line of a baseline file, as msgspec checks it (unknown keys are ignored)."""
    rule: str
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    container: str | None = None
    resource: str | None = None
    count: int = 1


@dataclass(frozen=True, slots=True)
class BaselineFile:
    version: int
    findings: list[BaselineEntry]


@dataclass(frozen=True)
class Baseline:
    file: str
    entries: Counter[Identity]  # how many findings had each identity

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

    try:  # never through a committed link, into a FIFO or a device
        replace_file(path, (as_text(findings).encode("utf-8"),))
    except WriteRefused as exc:
        raise UnreadableInputError(f"{path}: cannot write the baseline: {exc}") from None
    except OSError as exc:
        raise UnreadableInputError(f"{path}: cannot write the baseline: {exc.strerror or exc}") \
            from None


# A baseline holds one short entry per distinct finding: 100,000 of them are ~15 MB, and
# reading one takes ~8 times its size in memory.
MAX_BASELINE_BYTES = 32 << 20


def load_baseline(path: Path) -> Baseline:
    """Read a baseline file. UnreadableInputError when it cannot be read, ConfigError (one line
    naming the file and the field) when it is no baseline of this version."""
    import msgspec  # only runs with --baseline load it

    try:
        data = decode_json(read_small(str(path), MAX_BASELINE_BYTES))
    except ValueError as exc:
        raise ConfigError(f"{path}: not a gpudra baseline ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ConfigError(f"{path}: not a gpudra baseline of version {FORMAT_VERSION} "
                          "(write one with --write-baseline)")
    try:
        entries = msgspec.convert(data, BaselineFile).findings
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: not a gpudra baseline: {exc}") from None
    counts: Counter[Identity] = Counter()
    for i, entry in enumerate(entries):
        if not 1 <= entry.count <= MAX_COUNT:
            raise ConfigError(f"{path}: not a gpudra baseline: at `$.findings[{i}].count`: "
                              f"a count is a whole number from 1 to {MAX_COUNT:,}")
        counts[tuple(getattr(entry, key) for key in _FIELDS)] += entry.count
    return Baseline(str(path), counts)


def apply_baseline(report: Report, baseline: Baseline) -> Report:
    """The report with only the findings the baseline does not hold, and the counts."""
    new, known, fixed = baseline.split(report.findings)
    return replace(report, findings=tuple(new),
                   baseline=BaselineCounts(baseline.file, known, fixed))
