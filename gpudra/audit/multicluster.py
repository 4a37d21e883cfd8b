"""Audit many kube contexts at once: `gpudra audit --context a --context b`, `--all-contexts`.

Each cluster is read by the one cluster audit (gpudra.audit.engine.audit_cluster) on its own
connection: `connect()` builds a fresh client Configuration and ApiClient per call, so no
credentials, pool or state is shared between contexts. Reads are I/O, so threads overlap them;
at most `max_parallel` clusters are read at once. A cluster that cannot be read at all becomes
an entry with its one-line reason and never hides the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpudra.dra.versions import TargetVersion
from gpudra.errors import GpudraError, UsageError
from gpudra.results.model import ClusterAudit, InputError, Report

if TYPE_CHECKING:  # the CLI imports this module for its default; the rules load when used
    from gpudra.cluster.options import ClusterOptions
    from gpudra.config import Config

DEFAULT_MAX_PARALLEL = 4


@dataclass(frozen=True, slots=True)
class ClusterDone:
    """Progress: one cluster finished (read, or failed), `seconds` after it started."""

    audit: ClusterAudit
    seconds: float


AuditOne = Callable[["ClusterOptions", "Config", TargetVersion], Report]


def audit_contexts(contexts: Sequence[str], options: ClusterOptions, config: Config, *,
                   target: TargetVersion, max_parallel: int = DEFAULT_MAX_PARALLEL,
                   on_done: Callable[[ClusterDone], None] | None = None,
                   audit_one: AuditOne | None = None) -> Report:
    """Audit each context of `contexts` (with the other connection flags of `options`, a
    gpudra.cluster.ClusterOptions) and combine the reports, in the order given. `on_done` is
    called from this thread, in the order clusters finish. `audit_one` is for tests."""
    if max_parallel < 1:
        raise UsageError(f"--max-parallel must be at least 1, got {max_parallel}")
    # Here, not at the top: the CLI imports this module for DEFAULT_MAX_PARALLEL on every
    # run, and concurrent.futures brings logging and threads with it (~3 ms of start-up).
    from concurrent.futures import ThreadPoolExecutor, as_completed

    names = tuple(dict.fromkeys(contexts))  # a context named twice is read once
    read = audit_one or _audit_one
    done: dict[str, ClusterAudit] = {}
    with ThreadPoolExecutor(max_workers=min(max_parallel, len(names)) or 1,
                            thread_name_prefix="gpudra-cluster") as pool:
        futures = {pool.submit(_timed, read, replace(options, context=name), config, target):
                   name for name in names}
        for future in as_completed(futures):
            name = futures[future]
            result, seconds = future.result()  # a bug (not a GpudraError) stops the run
            done[name] = _entry(name, result, config)
            if on_done is not None:
                on_done(ClusterDone(done[name], seconds))
    return combine([done[name] for name in names])


def _audit_one(options: ClusterOptions, config: Config, target: TargetVersion) -> Report:
    from gpudra.audit.engine import audit_cluster

    return audit_cluster(options, config, target=target)


def _timed(read: AuditOne, options: ClusterOptions, config: Config,
           target: TargetVersion) -> tuple[Report | GpudraError, float]:
    start = time.monotonic()
    try:
        return read(options, config, target), time.monotonic() - start
    except GpudraError as error:  # unreachable, 401/403 on discovery, timeout, no context
        return error, time.monotonic() - start


def _entry(name: str, result: Report | GpudraError, config: Config) -> ClusterAudit:
    from gpudra.rules import catalogue

    if isinstance(result, Report):
        return ClusterAudit(name, result)
    message = str(result)
    failed = Report(findings=(), errors=(InputError(None, message),), workloads=(),
                    files_scanned=0, documents_parsed=0, suppressed=0,
                    rules=tuple(catalogue().values()),
                    disabled_rules=config.settings.disabled, source="cluster")
    return ClusterAudit(name, failed, error=message)


def combine(clusters: Sequence[ClusterAudit]) -> Report:
    """One report of many clusters (at least one): every finding, error and workload with its
    context, the counts summed; `clusters` keeps each cluster's own report for grouped
    output."""
    reports = [(c.name, c.report) for c in clusters]
    first = clusters[0].report
    return Report(
        findings=tuple(replace(f, context=name) for name, r in reports for f in r.findings),
        errors=tuple(replace(e, context=name) for name, r in reports for e in r.errors),
        workloads=tuple(replace(w, context=name) for name, r in reports for w in r.workloads),
        files_scanned=0,
        documents_parsed=0,
        suppressed=sum(r.suppressed for _, r in reports),
        rules=first.rules,
        disabled_rules=first.disabled_rules,
        source="cluster",
        objects_read=sum(r.objects_read for _, r in reports),
        not_read=tuple(replace(n, object=f"{name}: {n.object}")
                       for name, r in reports for n in r.not_read),
        waived=tuple(replace(w, finding=replace(w.finding, context=name))
                     for name, r in reports for w in r.waived),
        clusters=tuple(clusters),
    )
