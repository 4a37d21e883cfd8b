"""The preflight use case: which tier, read its inputs, run its checks, decide the exit code.

Streams and the terminal stay in the CLI; this module returns results and the report to render.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpudra.errors import UnreadableInputError, UsageError
from gpudra.results.model import ClusterRead, ExitCode, FailOn, InputError
from gpudra.k8s.objects import noun_for, plural
from gpudra.preflight import catalogue
from gpudra.preflight.check_records import CheckResult, Tier, apply_skips, count_outcomes
from gpudra.report.outcomes import OutcomeReport
from gpudra.run_context import RunContext
from gpudra.sources.live_session import cluster_session
from gpudra.dra.versions import DEFAULT

if TYPE_CHECKING:
    from gpudra.cluster.listing import ProgressHook
    from gpudra.dra.versions import TargetVersion
    from gpudra.results.baseline import Baseline

# The --fail-on levels preflight takes (FailOn, by their outcome words: fail, warn, unavailable)
FAIL_ON = (FailOn.ERROR, FailOn.WARNING, FailOn.UNAVAILABLE)
FAIL_ON_WORDS = tuple(level.outcome_word for level in FAIL_ON)


def fail_on_level(text: str) -> FailOn:
    """`--fail-on` (preflight's words or audit's) as one of preflight's levels. Raises
    UsageError."""
    try:
        level: FailOn | None = FailOn.parse(text)
    except ValueError:
        level = None
    if level is None or level not in FAIL_ON:
        raise UsageError(f"--fail-on must be one of {', '.join(FAIL_ON_WORDS)} (or warning, "
                         f"error), not {text!r}")
    return level


@dataclass(frozen=True)
class PreflightRequest:
    # its target: None to judge against the cluster's own release; its cluster: the cluster
    # tier's; its config: excludes, workloads and skips
    context: RunContext = field(default_factory=RunContext)
    tier: Tier = Tier.CLUSTER
    skip: Sequence[str] = ()
    fail_on: FailOn = FailOn.ERROR  # the lowest level that fails the run (one of FAIL_ON)
    manifests: Sequence[str] = ()
    require_migrated: bool = False
    host_root: str = "/"
    node_name: str | None = None
    baseline: Baseline | None = None  # --manifests: known findings do not count


@dataclass(frozen=True)
class PreflightResult:
    tier: str
    results: tuple[CheckResult, ...]
    errors: tuple[InputError, ...] = ()
    target: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    cluster: ClusterRead | None = None  # the cluster tier: which cluster was read, and when

    def failing(self, result: CheckResult, fail_on: FailOn) -> bool:
        return not result.skipped and fail_on.triggered_by(result.outcome.level)

    def exit_code(self, fail_on: FailOn) -> ExitCode:
        """3 when an input could not be read (a file, or a resource the cluster refused) or
        nothing was checked; 1 when a check at or above --fail-on failed; else 0."""
        if self.errors or not self.results:
            return ExitCode.INPUT_ERROR
        if any(self.failing(r, fail_on) for r in self.results):
            return ExitCode.FINDINGS
        return ExitCode.OK


def validate(request: PreflightRequest) -> tuple[frozenset[str], TargetVersion | None]:
    """Check the options before anything is read: the skip list as check ids, and the
    --target-version (None without one; the request carries it parsed)."""
    configured = request.context.config.preflight_skip
    return catalogue().parse_skip_list([*configured, *request.skip]), request.context.target


def run_preflight(request: PreflightRequest, *,
                  on_page: ProgressHook | None = None) -> PreflightResult:
    """Run the request's tier. Raises gpudra.cluster.ClusterError when the cluster cannot be
    read at all, UsageError for bad options."""
    skips, target = validate(request)
    if request.tier is Tier.MANIFESTS:
        result = _manifests(request, target)
    elif request.tier is Tier.NODE:
        result = _node(request)
    else:
        result = _cluster(request, target, on_page)
    return PreflightResult(result.tier, apply_skips(result.results, skips), result.errors,
                           str(target) if target else None, result.facts, result.cluster)


def _cluster(request: PreflightRequest, target: TargetVersion | None,
             on_page: ProgressHook | None) -> PreflightResult:
    from gpudra.preflight.cluster import run_cluster_checks
    from gpudra.preflight.cluster.options import ClusterOptions as CheckOptions
    from gpudra.preflight.cluster.read import read_snapshot

    # No server_version() first: read_snapshot reads it, and an error answer is a check's.
    with cluster_session(request.context.cluster) as session:
        read = session.read
        snapshot = read_snapshot(session.cluster, on_page)
        facts = {"server": session.cluster.target.shown_server,
                 "server_version": snapshot.server_version}
    results = run_cluster_checks(snapshot, CheckOptions(target_version=target))
    # What the cluster refused is also an input error: the checks that needed it say
    # unavailable, and the run is partial (exit 3), as a partial audit is.
    errors = tuple(InputError(None, reason, object=key)
                   for key, reason in sorted(snapshot.unavailable.items()))
    return PreflightResult("cluster", results, errors, None, facts, read)


def _node(request: PreflightRequest) -> PreflightResult:
    from gpudra.preflight.node import NodeOptions, run_node_checks
    from gpudra.preflight.node.host import LocalHost

    if not os.path.isdir(request.host_root):
        # Every check would say unavailable and the run pass: a wrong mount is an input error.
        problem = "not a directory" if os.path.exists(request.host_root) else \
            "no such directory"
        raise UnreadableInputError(f"--host-root {request.host_root}: {problem} (mount the host's "
                             "root there, e.g. read-only at /host)")
    results = run_node_checks(LocalHost(request.host_root),
                              NodeOptions(node_name=request.node_name))
    return PreflightResult("node", results, (), None, {"host_root": request.host_root})


def _manifests(request: PreflightRequest, target: TargetVersion | None) -> PreflightResult:
    from gpudra.audit.engine import AuditRequest
    from gpudra.preflight.manifests import ManifestOptions, run_manifest_checks
    from gpudra.preflight.manifests.read import read_manifests

    if not request.manifests:
        raise UsageError("--manifests needs a PATH")
    tree = read_manifests(AuditRequest(list(request.manifests), request.context.config,
                                       target=target or DEFAULT))
    options = ManifestOptions(target_version=target or DEFAULT,
                              require_migrated=request.require_migrated)
    facts: dict[str, Any] = {"files_scanned": tree.files_scanned}
    if request.baseline is not None:  # the checks judge only findings the baseline lacks
        new, known, fixed = request.baseline.split(tree.findings)
        tree = replace(tree, findings=tuple(new))
        facts["baseline"] = {"file": request.baseline.file, "known": known, "fixed": fixed}
    errors = tree.errors
    if tree.files_scanned == 0 and not errors:
        errors = (InputError(None, "no manifests found (looked for *.yaml, *.yml, *.json)"),)
    return PreflightResult("manifests", run_manifest_checks(tree, options), errors, None, facts)


def as_report(result: PreflightResult, fail_on: FailOn) -> OutcomeReport:
    """The results in the shared outcome format; the JSON contract is design.md's:
    `{"checks": [{"id", "title", "outcome", "message", "remediation", ...}], "summary"}`."""
    verdicts = tuple(r.as_outcome() for r in result.results)
    summary = {"tier": result.tier, **count_outcomes(result.results),
               "target_version": result.target, **result.facts,
               "fail_on": fail_on.outcome_word, "passed": result.exit_code(fail_on) is ExitCode.OK}
    headline = f"gpudra preflight ({result.tier})"
    known = result.facts.get("baseline")
    if known:
        headline = (f"gpudra preflight ({result.tier}; baseline: "
                    f"{known['known']} known {noun_for(known['known'], 'finding')} not counted, "
                    f"{plural(known['fixed'], 'entry', 'entries')} fixed)")
    return OutcomeReport("preflight", "checks", verdicts, result.errors, summary,
                         fail_on, headline, cluster=result.cluster)

