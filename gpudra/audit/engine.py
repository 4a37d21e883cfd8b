"""The audit engine: source (files, stdin, a cluster) -> objects -> checkers -> Report."""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpudra.config import Config
from gpudra.dra.strategy_advice import audit_mix, bridge_advice
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.results.model import Finding, InputError, NotRead, Report
from gpudra.k8s.objects import SourceObject, TemplateText
from gpudra.rules import CHECKERS, AuditContext, catalogue
from gpudra.rules.base import Checker
from gpudra.sources import Source
from gpudra.sources.files import FileSource
from gpudra.results.waivers import EXPIRED_RULE
from gpudra.k8s.workloads import WorkloadTable

if TYPE_CHECKING:  # the cluster package loads only for a cluster audit
    from gpudra.cluster.listing import ProgressHook
    from gpudra.cluster.options import ClusterOptions


@dataclass(frozen=True)
class AuditRequest:
    paths: Sequence[str]
    config: Config = field(default_factory=Config)
    excludes: Sequence[str] = ()
    target: TargetVersion = DEFAULT  # the release DRA objects must be served by (GPU611)
    today: datetime.date | None = None  # the day waivers are judged on; None: the clock's
    outputs: Sequence[str] = ()  # the files this run writes (reports, baseline): never read


def run_audit(request: AuditRequest, *, stdin: Callable[[], bytes] | None = None,
              on_file: Callable[[str], None] | None = None) -> Report:
    """Audit every input under `request.paths`. Input errors are collected, never raised."""
    excludes = (*request.config.exclude, *request.excludes)
    outputs = frozenset(os.path.realpath(p) for p in request.outputs)
    return audit(FileSource(request.paths, excludes, stdin, on_file, outputs=outputs),
                 request.config, request.target, request.today)


def audit(source: Source, config: Config, target: TargetVersion,
          today: datetime.date | None = None) -> Report:
    """Run every checker over what `source` yields: files, stdin or a cluster. Waivers are
    judged on `today` (default: the clock's date)."""
    rules = catalogue()
    table = WorkloadTable().with_kinds(config.workloads)
    # A cluster source knows its release; file trees have none.
    today = today or datetime.date.today()
    ctx = AuditContext(rules, config.settings, table, target,
                       kubernetes_minor=getattr(source, "kubernetes_minor", None),
                       inline_suppressions=not config.strict,
                       vouches=config.vouch_set(today))
    checkers = [checker() for checker in CHECKERS]
    errors: list[InputError] = []
    not_read: list[NotRead] = []
    for item in source.items():
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, NotRead):
            not_read.append(item)
        elif isinstance(item, TemplateText):
            for checker in checkers:
                checker.check_template(item, ctx)
        else:
            _check(item, checkers, ctx)
    ctx.tree = getattr(source, "tree", None)  # file sources only
    for checker in checkers:
        checker.finish(ctx)
    errors += ctx.input_errors
    waivers = config.waiver_set(today)
    findings, waived = waivers.split(_unique(ctx.findings))
    if EXPIRED_RULE not in config.settings.disabled:
        info = rules[EXPIRED_RULE]
        findings += waivers.expired(config.settings.severities.get(EXPIRED_RULE, info.severity),
                                    info.hint)
    stats = source.stats
    workloads = tuple(ctx.workloads.values())
    return Report(
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        errors=tuple(errors),
        workloads=workloads,
        files_scanned=stats.files,
        documents_parsed=stats.documents,
        suppressed=ctx.suppressed,
        rules=tuple(rules.values()),
        disabled_rules=config.settings.disabled,
        source=source.kind,
        objects_read=stats.objects,
        not_read=tuple(not_read),
        skipped=tuple(stats.skipped),
        waived=tuple(waived),
        advice=bridge_advice(target, audit_mix(ctx.findings, workloads)),
    )


def audit_cluster(options: ClusterOptions | None, config: Config, *,
                  on_page: ProgressHook | None = None,
                  target: TargetVersion) -> Report:
    """Audit the cluster `options` point at (None: every namespace of the current context). Raises
    gpudra.cluster.ClusterError when it cannot be read at all; a resource type that cannot be
    read is an error in the report, and the rest is audited."""
    from gpudra.sources.live import ClusterSource
    from gpudra.sources.live_session import cluster_session

    table = WorkloadTable().with_kinds(config.workloads)
    with cluster_session(options) as session:
        # fails fast, with one clear error, when it cannot be reached
        session.cluster.server_version()
        # the audit sorts the items itself: what was not read is a line of its report
        return replace(audit(ClusterSource(session.cluster, table, on_page), config, target),
                       cluster_read=session.read)


def _check(obj: SourceObject, checkers: list[Checker], ctx: AuditContext) -> None:
    if not obj.in_list:
        for checker in checkers:
            checker.check_document(obj, ctx)
    if not obj.listing:
        for checker in checkers:
            checker.check_object(obj, ctx)


def _unique(findings: list[Finding]) -> list[Finding]:
    # The same key reached through two table paths must be reported once.
    return list(dict.fromkeys(findings))
