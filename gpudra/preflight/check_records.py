"""Records of `gpudra preflight`: what a check is, what one run of it found, and the catalogue.

A *check* is a catalogue entry (`CheckInfo`): a stable id, the tier it belongs to, and the
Markdown that docs/checks.md is generated from. A *result* (`CheckResult`) is one judgement of
one check about one subject (a node, a file, the cluster). The preflight JSON report
(`{"checks": [{"id", "title", "outcome", "message", "remediation"}], ...}`, docs/design.md) is a
projection of `CheckResult`, so its field names are part of the public contract.

Outcomes follow the troubleshoot/kubeadm model (docs/anchor-tools.md, Part B) plus
`unavailable`: a check that could not look (no permission, no such runtime on this node, a
command missing) says so instead of passing. NVIDIA/aicr#2431 is the user complaint behind it.

Skipping (`--skip ID`) follows kubeadm's `--ignore-preflight-errors`: the check still runs and is
still shown, a `fail` is reported as `warn`, and the result is marked `skipped`. Because gpudra
can fail a run on warnings (`--fail-on warn`) and kubeadm cannot, a skipped result does not count
towards the worst outcome either: kubeadm's "shown as a warning" means "does not stop you", and
`worst()` keeps that meaning. `all` skips every check, as in kubeadm.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from gpudra.errors import UsageError
from gpudra.results.diagnostic import Detail, as_details
from gpudra.results.model import Level
from gpudra.results.outcome import Outcome

DOCS_PAGE = "docs/checks.md"
SKIP_ALL = "all"


class CheckOutcome(str, enum.Enum):
    """How a check ended. Ordered for `worst()`: pass < unavailable < warn < fail."""

    PASS = "pass"
    UNAVAILABLE = "unavailable"
    WARN = "warn"
    FAIL = "fail"

    @property
    def level(self) -> Level:
        """Its point on the one verdict scale (gpudra.results.model.Level); they share words."""
        return Level[self.name]

    @property
    def rank(self) -> int:
        return int(self.level)


class Tier(str, enum.Enum):
    """Where a check looks: the API server, one node's files and commands, or manifests."""

    CLUSTER = "cluster"
    NODE = "node"
    MANIFESTS = "manifests"


_ID_PREFIX = {Tier.CLUSTER: "CLUSTER", Tier.NODE: "NODE", Tier.MANIFESTS: "MANIFEST"}
_ID_RE = re.compile(r"^(CLUSTER|NODE|MANIFEST)\d{3}$")


@dataclass(frozen=True, slots=True)
class CheckInfo:
    """Catalogue entry of a check: what `gpudra checks` lists and docs/checks.md explains.

    `explanation` is Markdown: why the check matters, what each outcome means, how to fix it.
    `outcomes` lists every outcome the check can produce; the test suite requires a test case
    for each of them.
    """

    id: str
    title: str
    tier: Tier
    summary: str
    explanation: str
    outcomes: tuple[CheckOutcome, ...]
    docs_anchor: str

    @property
    def docs_url(self) -> str:
        """Relative link into the generated checks page, usable as a remediation."""
        return f"{DOCS_PAGE}#{self.docs_anchor}"


def check(id: str, title: str, tier: Tier, summary: str, explanation: str,
          outcomes: Iterable[CheckOutcome]) -> CheckInfo:
    """Declare a catalogue entry. The id must carry its tier's prefix (NODE001, CLUSTER012)."""
    if not _ID_RE.match(id) or not id.startswith(_ID_PREFIX[tier]):
        raise ValueError(f"check id {id!r} does not match tier {tier.value}")
    ordered = tuple(sorted(set(outcomes), key=lambda o: o.rank))
    return CheckInfo(id, title, tier, summary, explanation.strip(), ordered, id.lower())


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One judgement. `message` is one line saying what was found; `remediation` is a command or
    a docs link (None on pass); `subject` names what was judged (a node, a file) when a check
    reports on several; `details` carries per-item findings (one per file, one per key), each
    with its file and line when it is about one place (`Detail.location`)."""

    id: str
    title: str
    outcome: CheckOutcome
    message: str
    remediation: str | None = None
    subject: str | None = None
    details: tuple[Detail, ...] = ()
    skipped: bool = False

    def __post_init__(self) -> None:
        if self.outcome is CheckOutcome.PASS and self.remediation is not None:
            raise ValueError(f"{self.id}: a passing result carries no remediation")
        if "\n" in self.message:
            raise ValueError(f"{self.id}: the message is one line")

    def as_outcome(self) -> Outcome:
        """The result as the verdict record every verdict format renders."""
        return Outcome(self.id, self.title, self.outcome.level, self.message, self.remediation,
                       self.subject, self.details, skipped=self.skipped)


def result(info: CheckInfo, outcome: CheckOutcome, message: str, remediation: str | None = None, *,
           subject: str | None = None, details: Iterable[str | Detail] = ()) -> CheckResult:
    """Build a result for `info`; a non-passing result without remediation links to the docs.
    A detail given as text is about no one place."""
    if outcome is not CheckOutcome.PASS and remediation is None:
        remediation = info.docs_url
    return CheckResult(info.id, info.title, outcome, message, remediation, subject,
                       as_details(details))


class Catalogue(Mapping[str, CheckInfo]):
    """Every check by id, in id order (CLUSTER, MANIFEST, NODE). Immutable once built."""

    __slots__ = ("_checks",)

    def __init__(self, checks: Iterable[CheckInfo]) -> None:
        by_id: dict[str, CheckInfo] = {}
        for info in checks:
            if info.id in by_id:
                raise ValueError(f"duplicate check id {info.id}")
            by_id[info.id] = info
        self._checks = dict(sorted(by_id.items()))

    def __getitem__(self, check_id: str) -> CheckInfo:
        return self._checks[check_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._checks)

    def __len__(self) -> int:
        return len(self._checks)

    def in_tier(self, tier: Tier) -> tuple[CheckInfo, ...]:
        return tuple(info for info in self._checks.values() if info.tier is tier)

    def parse_skip_list(self, values: Iterable[str]) -> frozenset[str]:
        """`--skip` values (repeatable, comma-separated, any case) -> ids, or `{"all"}`.

        An id that is not in the catalogue is a usage error: a typo must not silently turn a
        skip into a no-op (kubeadm#700 is users confused by exactly that).
        """
        wanted: set[str] = set()
        for value in values:
            for part in value.split(","):
                token = part.strip()
                if not token:
                    continue
                if token.lower() == SKIP_ALL:
                    wanted.add(SKIP_ALL)
                    continue
                check_id = token.upper()
                if check_id not in self._checks:
                    raise UsageError(
                        f"unknown check {token!r} in --skip; `gpudra checks` lists them")
                wanted.add(check_id)
        return frozenset(wanted)


def apply_skips(results: Iterable[CheckResult], skips: frozenset[str]) -> tuple[CheckResult, ...]:
    """Mark skipped results; a skipped `fail` is shown as `warn` (kubeadm's behaviour)."""
    out = []
    for res in results:
        if SKIP_ALL in skips or res.id in skips:
            outcome = CheckOutcome.WARN if res.outcome is CheckOutcome.FAIL else res.outcome
            note = " (failed; reported as a warning because the check is skipped)" \
                if res.outcome is CheckOutcome.FAIL else ""
            res = replace(res, outcome=outcome, message=res.message + note, skipped=True)
        out.append(res)
    return tuple(out)


def worst(results: Iterable[CheckResult]) -> CheckOutcome:
    """The worst outcome among results that are not skipped; `pass` when there are none."""
    ranked = [r.outcome for r in results if not r.skipped]
    return max(ranked, key=lambda o: o.rank, default=CheckOutcome.PASS)


def count_outcomes(results: Iterable[CheckResult]) -> dict[str, int]:
    """{"pass": n, "warn": n, "fail": n, "unavailable": n, "skipped": n} for the JSON summary."""
    counts = {o.value: 0 for o in CheckOutcome}
    counts["skipped"] = 0
    for res in results:
        counts[res.outcome.value] += 1
        counts["skipped"] += res.skipped
    return counts
