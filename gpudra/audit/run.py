"""The audit command's use case: what to audit (files, one cluster or many), the baseline to
record or to hold findings back with, and the report ConfigMap to publish to. Streams and the terminal stay
in the CLI: this module returns the report and the level its exit code is judged at.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpudra.audit.multicluster import DEFAULT_MAX_PARALLEL, ClusterDone
from gpudra.dra.versions import DEFAULT
from gpudra.results.model import ExitCode, FailOn, Report
from gpudra.run_context import RunContext
from gpudra.audit.multicluster import audit_contexts

if TYPE_CHECKING:
    from gpudra.cluster.listing import ProgressHook
    from gpudra.results.baseline import Baseline
    from gpudra.cluster.options import ClusterOptions
    from gpudra.cluster.publish import Written


@dataclass(frozen=True)
class AuditRunRequest:
    # its cluster: the one cluster audited without a PATH (None: the current context's every
    # namespace); its target: the release DRA objects must be served by (None: DEFAULT)
    context: RunContext = field(default_factory=RunContext)
    paths: tuple[str, ...] = ()        # files and directories ('-': stdin); none: the cluster
    excludes: tuple[str, ...] = ()
    fail_on: FailOn = FailOn.WARNING
    outputs: tuple[str, ...] = ()      # files this run writes (reports, baseline): never read
    baseline: Baseline | None = None   # findings it holds do not count
    write_baseline: Path | None = None  # record every finding here; the run then fails only
    # on unreadable input
    # several clusters (no baseline then): these contexts, or every context of the
    # kubeconfig when none is named; the context's cluster holds the flags they share
    many: bool = False
    contexts: tuple[str, ...] = ()
    max_parallel: int = DEFAULT_MAX_PARALLEL


@dataclass(frozen=True)
class AuditResult:
    report: Report
    fail_on: FailOn  # the level the exit code is judged at (never, after --write-baseline)
    recorded: int | None = None  # --write-baseline: how many findings were recorded

    def exit_code(self) -> ExitCode:
        return self.report.exit_code(self.fail_on)


def run_audit_command(request: AuditRunRequest, *,
                      on_file: Callable[[str], None] | None = None,
                      on_page: ProgressHook | None = None,
                      on_cluster: Callable[[ClusterDone], None] | None = None) -> AuditResult:
    """Audit the files (or the cluster, or several), record a baseline, hold known findings
    back. Progress: `on_file` per file, `on_page` per page of one cluster, `on_cluster` as each
    of several clusters finishes. Raises gpudra.cluster.ClusterError when the one cluster cannot
    be read at all (of several, each that cannot be read is an entry of the report)."""
    if request.paths:
        report = _audit_files(request, on_file)
    elif request.many:
        report = _audit_clusters(request, on_cluster)
    else:
        report = _audit_cluster(request, on_page)
    return apply_baselines(request, report)


def apply_baselines(request: AuditRunRequest, report: Report) -> AuditResult:
    """After the audit: every finding recorded with --write-baseline first, then those
    --baseline holds left out."""
    level, recorded = request.fail_on, None
    if request.write_baseline is not None:  # every finding, before --baseline holds any back
        from gpudra.results.baseline import write_baseline

        write_baseline(request.write_baseline, report.findings)
        recorded = len(report.findings)
        level = FailOn.NEVER  # recording findings is the point: only unreadable input fails
    if request.baseline is not None:
        from gpudra.results.baseline import apply_baseline

        report = apply_baseline(report, request.baseline)
    return AuditResult(report, level, recorded)


def publish(cluster: ClusterOptions, configmap: str, text: str) -> Written:
    """`-o json=configmap:[NS/]NAME`: the report into that ConfigMap of the cluster audited."""
    from gpudra.cluster.publish import parse_target, write_report

    return write_report(cluster, parse_target(configmap), text)


def _audit_files(request: AuditRunRequest, on_file: Callable[[str], None] | None) -> Report:
    from gpudra.audit.engine import AuditRequest, run_audit

    context = request.context
    return run_audit(AuditRequest(list(request.paths), context.config, request.excludes,
                                  context.target or DEFAULT, context.today,
                                  outputs=request.outputs),
                     on_file=on_file)


def _audit_clusters(request: AuditRunRequest,
                    on_cluster: Callable[[ClusterDone], None] | None) -> Report:
    """Several clusters: the contexts named, else every context of the kubeconfig."""
    from gpudra.cluster.kubeconfig import context_names
    from gpudra.cluster.options import ClusterOptions

    context = request.context
    options = context.cluster or ClusterOptions()
    names = list(request.contexts) or context_names(options.kubeconfig, os.environ)
    return audit_contexts(names, options, context.config, target=context.target or DEFAULT,
                          max_parallel=request.max_parallel, on_done=on_cluster)


def _audit_cluster(request: AuditRunRequest, on_page: ProgressHook | None) -> Report:
    from gpudra.audit.engine import audit_cluster

    context = request.context
    return audit_cluster(context.cluster, context.config, on_page=on_page,
                         target=context.target or DEFAULT)
