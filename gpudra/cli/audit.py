"""`gpudra audit`: manifests, one cluster or many."""

from __future__ import annotations

from datetime import date
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from gpudra.cli.options import (
    Connection, SeverityWord, all_namespaces_option, baseline_option, config_option,
    context_option, exclude_option, exclusive_namespaces, kubeconfig_option, load_baseline,
    load_cfg, namespace_option, quiet_option, request_timeout_option, strict_option,
    target_version_option, verbose_option,
)
from gpudra.cli.output import Targets, audit_targets_option, given, write_audit
from gpudra.cli.root import app, guarded, report_errors, say
from gpudra.cli.terminal import FileProgress, ListProgress
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError
from gpudra.audit.multicluster import DEFAULT_MAX_PARALLEL
from gpudra.results.model import ExitCode, FailOn
from gpudra.k8s.objects import plural
from gpudra.printable import quote_name
from gpudra.run_context import RunContext

if TYPE_CHECKING:
    from gpudra.audit.multicluster import ClusterDone
    from gpudra.audit.run import AuditRunRequest
    from gpudra.cluster.options import ClusterOptions

EPILOG = (
    "Without a PATH, audits the cluster of the current kube context (read-only: get and list "
    "only; all namespaces unless -n is given).\n\n"
    "Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or "
    "config error; 3 an input could not be read (a file, or a resource type the cluster "
    "refused: the audit is partial), nothing was scanned, or the cluster cannot be reached.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra audit                          # the current kube context, all namespaces\n"
    "  gpudra audit --context prod -n ml -o json\n"
    "  gpudra audit ./manifests\n"
    "  gpudra audit . -o sarif > gpudra.sarif\n"
    "  helm template rel ./chart | gpudra audit -\n"
    "  gpudra audit k8s/ --fail-on error --exclude 'charts/vendor/*'")


@dataclass(frozen=True)
class AuditCommand:
    """The audit's request (gpudra.audit.run) and how to report it, every option parsed."""

    request: AuditRunRequest
    targets: Targets
    quiet: bool
    verbose: bool


@app.command(short_help="What still uses the device plugin, in manifests or the cluster.",
             epilog=EPILOG)
@guarded
def audit(
    paths: Optional[list[str]] = typer.Argument(
        None, metavar="[PATH]...",
        help="Files or directories to scan; '-' reads stdin. None: the live cluster."),
    output: list[str] = audit_targets_option(),
    fail_on: SeverityWord = typer.Option(SeverityWord.WARNING, "--fail-on",
                                         case_sensitive=False,
                                         help="Lowest severity that makes the exit code 1 "
                                              "(fail and warn, as preflight says: error and "
                                              "warning)."),
    exclude: list[str] = exclude_option("Skip matching files/directories (repeatable)."),
    config: Optional[Path] = config_option(),
    quiet: bool = quiet_option(),
    verbose: bool = verbose_option(),
    kubeconfig: Optional[str] = kubeconfig_option(
        "Cluster: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)."),
    context: list[str] = context_option(
        "Cluster: kubeconfig context to use; repeat it to audit several clusters at "
        "once (grouped by cluster).", many=True),
    all_contexts: bool = typer.Option(False, "--all-contexts",
                                      help="Cluster: audit every context of the kubeconfig."),
    max_parallel: int = typer.Option(DEFAULT_MAX_PARALLEL, "--max-parallel", metavar="N",
                                     help="Several clusters: read at most N at once."),
    namespace: Optional[str] = namespace_option(),
    all_namespaces: bool = all_namespaces_option(),
    request_timeout: Optional[str] = request_timeout_option(
        "Cluster: per-request timeout, e.g. 30s or 1m."),
    target_version: str = target_version_option("Release whose served resource.k8s.io "
                                                "versions DRA objects must use (GPU611)."),
    strict: bool = strict_option("Inline gpudra.io/ignore annotations suppress nothing "
                                 "(.gpudra.yaml waivers still apply)."),
    baseline: Optional[Path] = baseline_option("Report only findings FILE does not hold, and "
                                               "how many of its entries are fixed."),
    write_baseline: Optional[Path] = typer.Option(None, "--write-baseline", metavar="FILE",
                                                  help="Record today's findings in FILE (by "
                                                       "rule and object, never line); exit 0."),
) -> ExitCode:
    """Find device-plugin GPU requests, quotas, GPU placement and DRA mistakes in manifests
    or in the live cluster.

    Reads YAML and JSON files (multi-document, kind: List, Helm charts as text) and reports
    each finding with file and line; without a path, reads the cluster of the current kube
    context and reports each workload once, at its top controller. Findings go to stdout;
    progress and errors to stderr.
    """
    command = _parse(
        paths=list(paths or []), targets=given(output), fail_on=fail_on, excludes=tuple(exclude),
        config=config, quiet=quiet, verbose=verbose, contexts=context,
        all_contexts=all_contexts, max_parallel=max_parallel, all_namespaces=all_namespaces,
        target_version=target_version, strict=strict, baseline=baseline,
        write_baseline=write_baseline,
        connection=Connection(kubeconfig=kubeconfig, namespace=namespace,
                              request_timeout=request_timeout))
    return run(command)


def _parse(*, paths: list[str], targets: Targets, fail_on: SeverityWord,
           excludes: tuple[str, ...], config: Optional[Path], quiet: bool, verbose: bool,
           contexts: list[str], all_contexts: bool, max_parallel: int, all_namespaces: bool,
           target_version: str, strict: bool, baseline: Optional[Path],
           write_baseline: Optional[Path], connection: Connection) -> AuditCommand:
    """The command line as an AuditCommand; every usage error before anything is read."""
    from gpudra.audit.run import AuditRunRequest

    level = FailOn.parse(fail_on.value)
    if paths and (connection.given or contexts or all_contexts or all_namespaces):
        raise UsageError("--kubeconfig, --context, --all-contexts, -n, -A and "
                         "--request-timeout are for cluster audits: give no PATH to audit "
                         "the cluster")
    exclusive_namespaces(connection.namespace, all_namespaces)
    if contexts and all_contexts:
        raise UsageError("choose one of --context and --all-contexts")
    many = all_contexts or len(set(contexts)) > 1
    if many and (baseline or write_baseline):
        raise UsageError("--baseline and --write-baseline take one cluster at a time "
                         "(a baseline's entries do not name their cluster)")
    _check_configmaps(targets, bool(paths) or many)
    target = TargetVersion.parse(target_version)
    cfg = load_cfg(paths, config, strict)
    if not many and contexts:
        connection = replace(connection, context=contexts[0])
    known = load_baseline(baseline)
    # the files this run writes are never read as input
    written = [t.path for t in targets if t.path and t.configmap is None]
    if write_baseline is not None:
        written.append(str(write_baseline))
    # No cluster options for files: gpudra.cluster loads only for cluster work.
    cluster = None if paths else connection.cluster_options()
    context = RunContext(target, cfg, cluster, today=date.today())
    request = AuditRunRequest(context, tuple(paths), excludes, level,
                              tuple(written), known, write_baseline, many, tuple(contexts),
                              max_parallel)
    return AuditCommand(request, targets, quiet, verbose)


def _check_configmaps(targets: Targets, not_one_cluster: bool) -> None:
    configmaps = [(t, name) for t in targets if (name := t.configmap) is not None]
    if configmaps and not_one_cluster:
        first = configmaps[0][0]
        raise UsageError(f"-o {first.format}={first.path}: a report "
                         "ConfigMap is written to the one cluster audited (no PATH, one "
                         "context)")
    if configmaps:
        from gpudra.cluster.publish import parse_target

        for _, name in configmaps:  # a bad name is a usage error before the audit, not after
            parse_target(name)


def run(command: AuditCommand) -> ExitCode:
    """Audit, write every report, and say on stderr what could not be read."""
    from gpudra.audit.run import run_audit_command

    request = command.request
    if request.paths:
        with FileProgress(command.quiet) as on_file:
            result = run_audit_command(request, on_file=on_file)
    elif request.many:
        result = run_audit_command(request, on_cluster=None if command.quiet else _cluster_done)
    else:
        with ListProgress(command.quiet) as on_page:
            result = run_audit_command(request, on_page=on_page)
    if result.recorded is not None and not command.quiet:
        say(f"recorded {plural(result.recorded, 'finding')} in "
            f"{quote_name(str(request.write_baseline))}")
    report = result.report
    cluster = request.context.cluster  # None: files (their audit writes no ConfigMap)
    publish = None if request.paths or request.many or cluster is None else \
        _publisher(command.quiet, cluster)
    write_audit(command.targets, report, result.fail_on, command.verbose, request.paths,
                publish)
    report_errors(report.errors)
    if report.nothing_read and not report.errors:
        say(f"error: {report.nothing_read_message}")
    return result.exit_code()


def _cluster_done(finished: ClusterDone) -> None:
    """One of several clusters finished: a line on stderr."""
    audit = finished.audit
    if audit.error:
        what = "not read"
    else:
        from gpudra.report.summary import summarize

        s = summarize(audit.report)
        what = f"{s.read}, {plural(sum(s.findings.values()), 'finding')}" + \
            (f", {s.errors} unreadable" if s.errors else "")
    say(f"cluster {audit.name}: {what} ({finished.seconds:.1f} s)")


def _publisher(quiet: bool, cluster: ClusterOptions) -> Callable[[str, str], None]:
    """Writes `-o json=configmap:[NS/]NAME` to the cluster audited (gpudra.audit.run.publish)
    and says so."""

    def publish(configmap: str, text: str) -> None:
        from gpudra.audit.run import publish as publish_report

        written = publish_report(cluster, configmap, text)
        if not quiet:
            how = "gzipped in binaryData report.json.gz" if written.encoding == "gzip" \
                else "in data report.json"
            say(f"{'created' if written.created else 'replaced'} ConfigMap "
                f"{written.namespace}/{written.name} ({written.stored_bytes:,} bytes {how})")

    return publish
