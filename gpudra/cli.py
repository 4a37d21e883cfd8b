"""The command line. Thin: parse options, call one core function, render, choose the exit code."""

from __future__ import annotations

import enum
import functools
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from pathlib import Path, PureWindowsPath
from typing import Any, Optional, TypeVar

import typer

from gpudra import __version__
from gpudra.dra.versions import DEFAULT, SUPPORTED_RANGE, TargetVersion, checked_against
from gpudra.errors import GpudraError, UsageError
from gpudra.fleet import DEFAULT_MAX_PARALLEL
from gpudra.model import ExitCode, FailOn
from gpudra.report import SummaryFormat
from gpudra.report.formats import Kind, RenderOptions, find, names, render

app = typer.Typer(
    name="gpudra",
    help=(
        "Move Kubernetes GPU workloads from the NVIDIA device plugin (nvidia.com/gpu) to "
        "Dynamic Resource Allocation (ResourceClaims, DeviceClasses, CEL selectors).\n\n"
        "Start with `gpudra audit ./manifests` (what must change), then `gpudra convert "
        "./manifests --diff` (the change itself); `gpudra rules` lists what audit checks."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpudra {__version__}\nchecked against:")
        typer.echo("".join(f"  {line}\n" for line in checked_against().splitlines()), nl=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version, the Kubernetes releases and "
                                      "the NVIDIA DRA driver it was checked against, and "
                                      "exit."),
) -> None:
    """Root options."""


def _color(stream) -> bool:
    # https://no-color.org: any non-empty NO_COLOR disables colour.
    if os.environ.get("NO_COLOR"):
        return False
    return _terminal(stream)


def _terminal(stream) -> bool:
    """Output for a person at a terminal; FORCE_COLOR (https://force-color.org) asks for it
    where there is no terminal, e.g. in CI logs."""
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def _width() -> int | None:
    """Columns for tables: $COLUMNS when set (as ls and git honour it), else the terminal's;
    None when stdout is no terminal: nothing wraps, so files and pipes get whole lines."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _cluster_options(kubeconfig: str | None, context: str | None, namespace: str | None,
                     request_timeout: str | None) -> Any:
    """kubectl's connection flags as ClusterOptions: every namespace unless -n names one.
    Imported here: the Kubernetes client loads only for cluster work."""
    from gpudra.cluster import ClusterOptions, parse_duration

    return ClusterOptions(kubeconfig=kubeconfig, context=context, namespace=namespace,
                          all_namespaces=not namespace,
                          request_timeout=parse_duration(request_timeout)
                          if request_timeout else None)


def _fail(message: str, code: ExitCode) -> typer.Exit:
    typer.echo(f"gpudra: error: {message}", err=True)
    return typer.Exit(int(code))


_Command = TypeVar("_Command", bound=Callable[..., Any])
DEBUG_ENV = "GPUDRA_DEBUG"
INTERRUPTED = "gpudra: interrupted"


def _guarded(command: _Command) -> _Command:
    """The one place errors become exit codes. A user's mistake (UsageError) exits 2 and an
    input that could not be read (any other GpudraError) exits 3, each with one line on stderr.
    A bug must not look like a result either: exit 0 reads as "clean", 1 as "findings", so any
    unexpected exception also becomes exit 3 with one line; GPUDRA_DEBUG=1 adds the traceback
    for the bug report."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise  # control flow and a closed pipe keep their usual handling
        except KeyboardInterrupt:
            # typer would turn Ctrl-C into a silent exit 130: say why the run stopped
            typer.echo(INTERRUPTED, err=True)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except UsageError as exc:
            raise _fail(str(exc), ExitCode.USAGE) from None
        except GpudraError as exc:
            raise _fail(str(exc), ExitCode.INPUT_ERROR) from None
        except Exception as exc:  # noqa: BLE001 - the point of this wrapper
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                traceback.print_exc(file=sys.stderr)
            detail = " ".join(str(exc).split())
            what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            raise _fail(f"internal error: {what} (please report it)", ExitCode.INPUT_ERROR) \
                from None

    return run  # type: ignore[return-value]


AUDIT_FORMATS = names(Kind.AUDIT)
OUTCOME_FORMATS = names(Kind.OUTCOMES)  # preflight, plan, verify


def _targets(values: list[str] | None, formats: tuple[str, ...], default: str = "table",
             configmaps: bool = False) -> Any:
    """-o FORMAT[=PATH], repeatable, as gpudra.report.targets.OutputTarget records; a bad one
    is click's usage error, like any bad option value."""
    from gpudra.report.targets import parse_targets

    try:
        return parse_targets(values or [], formats, default, configmaps=configmaps)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


class _SeverityWord(str, enum.Enum):
    """audit's --fail-on: the severities, and preflight's words for two of them."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"
    FAIL = "fail"
    WARN = "warn"


class _OutcomeWord(str, enum.Enum):
    """preflight's --fail-on: the outcomes, and audit's words for two of them."""

    FAIL = "fail"
    WARN = "warn"
    UNAVAILABLE = "unavailable"
    ERROR = "error"
    WARNING = "warning"


# Connection options, declared once for audit, convert --from-cluster, preflight, verify, plan
# and cutover; only how each command's help words them differs.
def _kubeconfig_option(help: str = "Cluster: kubeconfig file.") -> Any:
    return typer.Option(None, "--kubeconfig", metavar="FILE", help=help)


def _context_option(help: str = "Cluster: kubeconfig context to use.") -> Any:
    return typer.Option(None, "--context", metavar="NAME", help=help)


def _namespace_option(help: str = "Cluster: only this namespace's workloads.") -> Any:
    return typer.Option(None, "-n", "--namespace", metavar="NS", help=help)


def _all_namespaces_option(help: str = "Cluster: every namespace (the default).") -> Any:
    return typer.Option(False, "-A", "--all-namespaces", help=help)


def _request_timeout_option(help: str = "Cluster: per-request timeout.") -> Any:
    return typer.Option(None, "--request-timeout", metavar="DURATION", help=help)


# Audit options that preflight --manifests passes on to the audit, declared once.
def _strict_option(help: str) -> Any:
    return typer.Option(False, "--strict", help=help)


def _baseline_option(help: str) -> Any:
    return typer.Option(None, "--baseline", metavar="FILE", help=help)


@app.command(short_help="What still uses the device plugin, in manifests or the cluster.",
             epilog=(
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
    "  gpudra audit k8s/ --fail-on error --exclude 'charts/vendor/*'"))
@_guarded
def audit(
    paths: Optional[list[str]] = typer.Argument(
        None, metavar="[PATH]...",
        help="Files or directories to scan; '-' reads stdin. None: the live cluster."),
    output: list[str] = typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                                     callback=lambda v: _targets(v, AUDIT_FORMATS,
                                                                 configmaps=True),
                                     help="Report format: table, json, yaml, sarif, junit, "
                                          "markdown, github or html; FORMAT=PATH writes a "
                                          "file (repeatable: one scan, many reports); "
                                          "json=configmap:[NS/]NAME creates or replaces a "
                                          "ConfigMap in the cluster audited."),
    fail_on: _SeverityWord = typer.Option(_SeverityWord.WARNING, "--fail-on",
                                          case_sensitive=False,
                                          help="Lowest severity that makes the exit code 1 "
                                               "(fail and warn, as preflight says: error and "
                                               "warning)."),
    exclude: list[str] = typer.Option([], "--exclude", metavar="GLOB",
                                      help="Skip matching files/directories (repeatable)."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
    verbose: bool = typer.Option(False, "-v", "--verbose",
                                 help="List skipped documents (not Kubernetes objects)."),
    kubeconfig: Optional[str] = _kubeconfig_option(
        "Cluster: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)."),
    context: list[str] = typer.Option(
        [], "--context", metavar="NAME",
        help="Cluster: kubeconfig context to use; repeat it to audit several clusters at "
             "once (grouped by cluster)."),
    all_contexts: bool = typer.Option(False, "--all-contexts",
                                      help="Cluster: audit every context of the kubeconfig."),
    max_parallel: int = typer.Option(DEFAULT_MAX_PARALLEL, "--max-parallel", metavar="N",
                                     help="Several clusters: read at most N at once."),
    namespace: Optional[str] = _namespace_option(),
    all_namespaces: bool = _all_namespaces_option(),
    request_timeout: Optional[str] = _request_timeout_option(
        "Cluster: per-request timeout, e.g. 30s or 1m."),
    target_version: str = typer.Option(str(DEFAULT), "--target-version", metavar=SUPPORTED_RANGE,
                                       help="Release whose served resource.k8s.io versions DRA "
                                            "objects must use (GPU611)."),
    strict: bool = _strict_option("Inline gpudra.io/ignore annotations suppress nothing "
                                  "(.gpudra.yaml waivers still apply)."),
    baseline: Optional[Path] = _baseline_option("Report only findings FILE does not hold, and "
                                                "how many of its entries are fixed."),
    write_baseline: Optional[Path] = typer.Option(None, "--write-baseline", metavar="FILE",
                                                  help="Record today's findings in FILE (by "
                                                       "rule and object, never line); exit 0."),
) -> None:
    """Find device-plugin GPU requests, quotas, GPU placement and DRA mistakes in manifests
    or in the live cluster.

    Reads YAML and JSON files (multi-document, kind: List, Helm charts as text) and reports
    each finding with file and line; without a path, reads the cluster of the current kube
    context and reports each workload once, at its top controller. Findings go to stdout;
    progress and errors to stderr.
    """
    from gpudra.config import config_for, load_config
    from gpudra.rules import catalogue

    paths = list(paths or [])
    level = FailOn.parse(fail_on.value)
    cluster_flags = any((kubeconfig, context, all_contexts, namespace, all_namespaces,
                         request_timeout))
    if paths and cluster_flags:
        raise UsageError("--kubeconfig, --context, --all-contexts, -n, -A and "
                         "--request-timeout are for cluster audits: give no PATH to audit "
                         "the cluster")
    if namespace and all_namespaces:
        raise UsageError("choose one of -n/--namespace and -A/--all-namespaces")
    if context and all_contexts:
        raise UsageError("choose one of --context and --all-contexts")
    many = all_contexts or len(set(context)) > 1
    if many and (baseline or write_baseline):
        raise UsageError("--baseline and --write-baseline take one cluster at a time "
                         "(a baseline's entries do not name their cluster)")
    configmaps = [t for t in output if t.configmap is not None]
    if configmaps and (paths or many):
        raise UsageError(f"-o {configmaps[0].format}={configmaps[0].path}: a report "
                         "ConfigMap is written to the one cluster audited (no PATH, one "
                         "context)")
    if configmaps:
        from gpudra.cluster.publish import parse_target

        for target in configmaps:  # a bad name is a usage error before the audit, not after
            parse_target(target.configmap)
    from gpudra.report.targets import write_targets

    target = TargetVersion.parse(target_version)
    cfg = _strict(load_config(config_for(paths, config), catalogue()), strict)
    known = _load_baseline(baseline)
    flags = dict(kubeconfig=kubeconfig, namespace=namespace, request_timeout=request_timeout)
    if paths:
        report = _audit_files(paths, cfg, tuple(exclude), quiet, target)
    elif many:
        report = _audit_clusters(context, cfg, quiet, target, max_parallel, **flags)
    else:
        report = _audit_cluster(cfg, quiet, target, context=context[0] if context else None,
                                **flags)
    if write_baseline is not None:  # every finding, before --baseline holds any back
        _write_baseline(write_baseline, report.findings, quiet)
        level = FailOn.NEVER  # recording findings is the point: only unreadable input fails
    if known is not None:
        from gpudra.baseline import apply_baseline

        report = apply_baseline(report, known)

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.AUDIT, fmt, report, RenderOptions(
            color=to_stdout and _color(sys.stdout), width=_width() if to_stdout else None,
            tool_version=__version__, fail_on=level, verbose=verbose, inputs=tuple(paths)))

    publish = None if paths or many else _publisher(
        quiet, context=context[0] if context else None, **flags)
    write_targets(output, text, sys.stdout, publish)
    for error in report.errors:
        typer.echo(f"gpudra: {error.where}: {error.message}", err=True)
    if report.nothing_read and not report.errors:
        typer.echo(f"gpudra: error: {report.nothing_read_message}", err=True)
    raise typer.Exit(int(report.exit_code(level)))


def _publisher(quiet: bool, **flags) -> Callable[[Any, str], None]:
    """Writes `-o json=configmap:[NS/]NAME` to the cluster audited (gpudra.cluster.publish)."""

    def publish(target, text: str) -> None:
        from gpudra.cluster.publish import parse_target, write_report

        written = write_report(_cluster_options(**flags), parse_target(target.configmap), text)
        if not quiet:
            how = "gzipped in binaryData report.json.gz" if written.encoding == "gzip" \
                else "in data report.json"
            typer.echo(f"gpudra: {'created' if written.created else 'replaced'} ConfigMap "
                       f"{written.namespace}/{written.name} ({written.stored_bytes:,} bytes "
                       f"{how})", err=True)

    return publish


def _strict(cfg, strict: bool):
    """--strict on top of the config's own `strict:`."""
    from dataclasses import replace

    return replace(cfg, strict=True) if strict else cfg


def _load_baseline(path: Path | None):
    if path is None:
        return None
    from gpudra.baseline import load_baseline

    return load_baseline(path)


def _write_baseline(path: Path, findings, quiet: bool) -> None:
    from gpudra.baseline import write_baseline

    write_baseline(path, findings)
    if not quiet:
        typer.echo(f"gpudra: recorded {len(findings)} findings in {path}", err=True)


def _audit_files(paths: list[str], cfg, excludes: tuple[str, ...], quiet: bool, target):
    from gpudra.audit import AuditRequest, run_audit

    with _progress(quiet) as on_file:
        return run_audit(AuditRequest(paths, cfg, excludes, target), on_file=on_file)


def _audit_cluster(cfg, quiet: bool, target, **flags):
    from gpudra.audit import audit_cluster

    options = _cluster_options(**flags)
    with _ListProgress(quiet) as on_page:
        return audit_cluster(options, cfg, on_page=on_page, target=target)


def _audit_clusters(contexts: list[str], cfg, quiet: bool, target, max_parallel: int,
                    **flags):
    """Several clusters (all of the kubeconfig's when `contexts` is empty), a line on stderr
    as each one finishes."""
    from gpudra.cluster.kubeconfig import context_names
    from gpudra.fleet import audit_contexts

    options = _cluster_options(context=None, **flags)
    names = contexts or context_names(flags["kubeconfig"], os.environ)

    def done(finished) -> None:
        audit = finished.audit
        if audit.error:
            what = "not read"
        else:
            from gpudra.report.summary import summarize

            s = summarize(audit.report)
            what = f"{s.read}, {sum(s.findings.values())} findings" + \
                (f", {s.errors} unreadable" if s.errors else "")
        typer.echo(f"gpudra: cluster {audit.name}: {what} ({finished.seconds:.1f} s)",
                   err=True)

    return audit_contexts(names, options, cfg, target=target, max_parallel=max_parallel,
                          on_done=None if quiet else done)


class _ListProgress:
    """Objects read per resource type, on stderr, only when stderr is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self._progress = None
        self._tasks: dict[str, int] = {}
        self._enabled = not quiet and sys.stderr.isatty()

    def __enter__(self):
        if not self._enabled:
            return None
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn

        console = Console(stderr=True, no_color=not _color(sys.stderr))
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),
                                  TextColumn("{task.completed:>9,.0f} objects"),
                                  console=console, transient=True)
        self._progress.__enter__()
        return self._page

    def _page(self, progress) -> None:
        name = progress.resource.qualified_name
        task = self._tasks.get(name)
        if task is None:
            task = self._tasks[name] = self._progress.add_task(name, total=None)
        self._progress.update(task, completed=progress.objects)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


class _progress:
    """A spinner on stderr with the current file, only when stderr is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self._status = None
        self._count = 0
        self._enabled = not quiet and sys.stderr.isatty()

    def __enter__(self):
        if not self._enabled:
            return None
        from rich.console import Console

        console = Console(stderr=True, no_color=not _color(sys.stderr))
        self._status = console.status("scanning")
        self._status.__enter__()
        return self._tick

    def _tick(self, label: str) -> None:
        self._count += 1
        if self._count % 50 == 0 and self._status is not None:
            from rich.text import Text

            # A Text, not a string: rich would read a path such as [/srv/x] as markup.
            self._status.update(Text(f"scanning: {self._count} files ({label})"))

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)


@app.command(short_help="Rewrite workloads to DRA claims; only the lines that must change.",
             epilog=(
    "Exit codes: 0 converted (or nothing to do); 1 --check/--diff found changes to make; "
    "2 usage error (bad option, invalid CEL); 3 an input could not be read (that file is left "
    "untouched) or a file could not be written; 4 only blocked workloads are left (nothing "
    "more can be converted without a human; after writing, or under --check/--diff when "
    "there is nothing else to change).\n\n"
    "Examples:\n\n\b\n"
    "  gpudra convert ./manifests --diff\n"
    "  gpudra convert ./manifests --target-version 1.33\n"
    "  gpudra convert . --check    # CI: fail while anything is left to convert\n"
    "  gpudra convert --from-cluster -n ml --output-dir exported/\n"
    "  gpudra convert . --check || [ $? -eq 4 ]    # ...but accept blocked workloads\n"
    "  gpudra convert k8s/ --min-memory 40Gi --no-add-toleration\n"
    "  cat job.yaml | gpudra convert - > job-dra.yaml"))
@_guarded
def convert(
    paths: Optional[list[str]] = typer.Argument(
        None, metavar="[PATH]...", help="Files or directories; '-' reads stdin, writes stdout."),
    diff: bool = typer.Option(False, "--diff", help="Print a unified diff; write nothing."),
    check: bool = typer.Option(False, "--check",
                               help="Write nothing; exit 1 when anything would change "
                                    "(with --diff: and print the diff)."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", metavar="DIR",
                                              help="Write a converted copy of the tree to DIR."),
    target_version: str = typer.Option(str(DEFAULT), "--target-version", metavar=SUPPORTED_RANGE,
                                       help="Kubernetes version to write for: v1 for 1.34+, "
                                            "v1beta2 for 1.33, v1beta1 for 1.32."),
    claim_mode: str = typer.Option("template", "--claim-mode", metavar="template|shared",
                                   help="A claim per pod (template) or one claim all pods share."),
    strategy: str = typer.Option("rewrite", "--strategy", metavar="rewrite|bridge",
                                 help="bridge: leave plain nvidia.com/gpu workloads unchanged and "
                                      "write a DeviceClass with extendedResourceName (KEP-5004)."),
    keep_node_selectors: bool = typer.Option(False, "--keep-node-selectors",
                                             help="Keep GPU node labels besides the CEL selectors."),
    add_toleration: Optional[bool] = typer.Option(
        None, "--add-toleration/--no-add-toleration",
        help="Add the nvidia.com/gpu NoSchedule toleration to pods that requested nvidia.com/gpu "
             "and lack one (default; --from-cluster: when GPU nodes carry the taint)."),
    keep_quota: bool = typer.Option(False, "--keep-device-plugin-quota",
                                    help="Keep requests.nvidia.com/gpu quota keys (migration window)."),
    selector: list[str] = typer.Option([], "--selector", metavar="CEL",
                                       help="Extra CEL selector for every converted request."),
    min_memory: Optional[str] = typer.Option(None, "--min-memory", metavar="QUANTITY",
                                             help="Only GPUs with at least this memory, e.g. 40Gi."),
    product: Optional[str] = typer.Option(None, "--product", metavar="NAME",
                                          help="Only GPUs whose product name starts with NAME."),
    claims_file: Optional[str] = typer.Option(None, "--claims-file", metavar="NAME",
                                              help="Put new objects in NAME in each directory "
                                                   "(added to kustomization resources)."),
    admin_access: bool = typer.Option(False, "--admin-access",
                                      help="Give monitoring DaemonSets that see every GPU "
                                           "(NVIDIA_VISIBLE_DEVICES=all) an admin-access claim "
                                           "(1.34+)."),
    exclude: list[str] = typer.Option([], "--exclude", metavar="GLOB", help="Skip matching paths."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    output: SummaryFormat = typer.Option(SummaryFormat.TABLE, "-o", "--output",
                                         case_sensitive=False, help="Summary format."),
    quiet: bool = typer.Option(False, "-q", "--quiet",
                               help="No summary; errors still go to stderr."),
    verbose: bool = typer.Option(False, "-v", "--verbose",
                                 help="List skipped documents (not Kubernetes objects)."),
    from_cluster: bool = typer.Option(False, "--from-cluster",
                                      help="Export the live cluster's GPU workloads as clean "
                                           "manifests into --output-dir, then convert them."),
    kubeconfig: Optional[str] = _kubeconfig_option("--from-cluster: kubeconfig file."),
    context: Optional[str] = _context_option("--from-cluster: kubeconfig context."),
    namespace: Optional[str] = _namespace_option("--from-cluster: only this namespace."),
    request_timeout: Optional[str] = _request_timeout_option(
        "--from-cluster: per-request timeout."),
) -> None:
    """Rewrite workloads and quotas from device-plugin requests to DRA claims, in place.

    Each pod spec that requests nvidia.com/gpu (or a MIG slice) gets a ResourceClaimTemplate
    next to it, spec.resourceClaims, and resources.claims on each GPU container; GPU node labels
    become CEL selectors. Only the lines that must change are changed; a second run changes
    nothing. Workloads gpudra would have to guess about are left alone and reported.
    """
    from gpudra.convert.run import ConvertRequest, run_convert

    paths = list(paths or [])
    cluster = None
    if any((kubeconfig, context, namespace, request_timeout)) and not from_cluster:
        raise UsageError("--kubeconfig, --context, -n and --request-timeout go with "
                         "--from-cluster")
    if not paths and not from_cluster:
        raise UsageError("give a PATH to convert (or --from-cluster --output-dir DIR)")
    if from_cluster:
        cluster = _cluster_options(kubeconfig, context, namespace, request_timeout)
    request = ConvertRequest(
        cluster=cluster, paths=tuple(paths), diff=diff, check=check, output_dir=output_dir,
        target_version=target_version, claim_mode=claim_mode, strategy=strategy,
        keep_node_selectors=keep_node_selectors, add_toleration=add_toleration,
        keep_device_plugin_quota=keep_quota, selectors=tuple(selector), min_memory=min_memory,
        product=product, claims_file=claims_file, admin_access=admin_access,
        excludes=tuple(exclude), config=config,
        output=output.value, quiet=quiet, verbose=verbose, color=diff and _color(sys.stdout))
    code = run_convert(request, stdout=sys.stdout, stderr=sys.stderr)
    raise typer.Exit(int(code))




def _write_outcomes(targets, report) -> None:
    """Every -o target of preflight, plan or verify."""
    from gpudra.report.targets import write_targets

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.OUTCOMES, fmt, report, RenderOptions(
            color=to_stdout and _color(sys.stdout), width=_width() if to_stdout else None))

    write_targets(targets, text, sys.stdout)


@app.command(short_help="Is the cluster, a node or a manifest tree ready for DRA?",
             epilog=(
    "Tiers: the cluster (default: the current kube context, read-only); --node: this node's "
    "container runtime, CDI and NVIDIA driver (on a node, or in a privileged pod with "
    "--host-root); --manifests PATH: a manifest tree against a target release, for CI.\n\n"
    "Exit codes: 0 no check at or above --fail-on; 1 a check failed (or warned, with "
    "--fail-on warn); 2 usage error; 3 the cluster or an input could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra preflight                                  # the current cluster\n"
    "  gpudra preflight --target-version 1.36 --context prod\n"
    "  gpudra preflight --node --host-root /host -o json\n"
    "  gpudra preflight --manifests ./manifests -o github --require-migrated\n"
    "  gpudra preflight --skip CLUSTER013,CLUSTER014 --fail-on warn"))
@_guarded
def preflight(
    node: bool = typer.Option(False, "--node", help="Check this node instead of the cluster."),
    host_root: str = typer.Option("/", "--host-root", metavar="DIR",
                                  help="--node: where the host's filesystem is mounted."),
    manifests: list[str] = typer.Option([], "--manifests", metavar="PATH",
                                        help="Check a manifest tree (repeatable); no cluster."),
    target_version: Optional[str] = typer.Option(None, "--target-version", metavar=SUPPORTED_RANGE,
                                                 help="Judge against this Kubernetes release "
                                                      "(plan an upgrade)."),
    require_migrated: bool = typer.Option(False, "--require-migrated",
                                          help="--manifests: fail while a workload still "
                                               "requests device-plugin GPUs."),
    skip: list[str] = typer.Option([], "--skip", metavar="CHECK_ID",
                                   help="Run but do not count a check (repeatable, "
                                        "comma-separated, 'all')."),
    fail_on: _OutcomeWord = typer.Option(_OutcomeWord.FAIL, "--fail-on", case_sensitive=False,
                                         help="Lowest outcome that makes the exit code 1 "
                                              "(error and warning, as audit says: fail and "
                                              "warn)."),
    output: list[str] = typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                                     callback=lambda v: _targets(v, OUTCOME_FORMATS),
                                     help="table, json, junit, markdown, github or html; "
                                          "FORMAT=PATH writes a file (repeatable)."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    strict: bool = _strict_option("--manifests: inline gpudra.io/ignore annotations "
                                  "suppress nothing (waivers still apply)."),
    baseline: Optional[Path] = _baseline_option("--manifests: findings FILE holds (`gpudra "
                                                "audit --write-baseline`) do not count."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
    kubeconfig: Optional[str] = _kubeconfig_option(),
    context: Optional[str] = _context_option(),
    request_timeout: Optional[str] = _request_timeout_option(),
) -> None:
    """Is the cluster (or this node, or a manifest tree) ready for DRA?

    One line per check: pass, warn, fail or unavailable (a check that cannot run says why,
    never pass), with the reason and the remediation; `gpudra checks` lists every check.
    """
    from gpudra.config import config_for, load_config
    from gpudra.preflight.run import PreflightRequest, as_report, fail_on_level, run_preflight
    from gpudra.rules import catalogue as rule_catalogue

    if node and manifests:
        raise UsageError("choose one of --node and --manifests")
    if (node or manifests) and any((kubeconfig, context, request_timeout)):
        raise UsageError("--kubeconfig, --context and --request-timeout are for the "
                         "cluster tier")
    if (strict or baseline) and not manifests:
        raise UsageError("--strict and --baseline go with --manifests")
    tier = "node" if node else "manifests" if manifests else "cluster"
    fail_on = fail_on_level(fail_on.value)
    cfg = _strict(load_config(config_for(list(manifests), config), rule_catalogue()), strict)
    cluster = None
    if tier == "cluster":
        cluster = _cluster_options(kubeconfig, context, None, request_timeout)
    request = PreflightRequest(tier=tier, skip=tuple(skip), fail_on=fail_on,
                               target_version=target_version, manifests=tuple(manifests),
                               require_migrated=require_migrated, host_root=host_root,
                               cluster=cluster, config=cfg, baseline=_load_baseline(baseline))
    with _ListProgress(quiet or tier != "cluster") as on_page:
        result = run_preflight(request, on_page=on_page)
    _write_outcomes(output, as_report(result, fail_on))
    for error in result.errors:
        typer.echo(f"gpudra: {error.where}: {error.message}", err=True)
    raise typer.Exit(int(result.exit_code(fail_on)))


@app.command(short_help="Will each claim find real devices? On which nodes?",
             epilog=(
    "Devices: --inventory files (ResourceSlices, or Node objects such as `kubectl get nodes "
    "-o yaml`, from which the NVIDIA DRA driver's devices are predicted), else ResourceSlices "
    "or Nodes in the tree, else the current cluster's (read-only).\n\n"
    "Exit codes: 0 every workload can be satisfied; 1 one cannot; 2 usage error; 3 an input "
    "or the cluster could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra plan ./manifests --inventory slices.yaml\n"
    "  kubectl get nodes -o yaml > nodes.yaml && gpudra plan ./manifests --inventory nodes.yaml\n"
    "  gpudra plan                      # workloads and devices of the current cluster\n"
    "  gpudra plan ./manifests -o json | jq '.workloads[] | select(.satisfiable | not)'"))
@_guarded
def plan(
    paths: Optional[list[str]] = typer.Argument(
        None, metavar="[PATH]...", help="Manifests (converted or not); none: the cluster."),
    inventory: list[str] = typer.Option([], "--inventory", metavar="FILE",
                                        help="ResourceSlice or Node YAML (repeatable)."),
    target_version: str = typer.Option(str(DEFAULT), "--target-version", metavar=SUPPORTED_RANGE,
                                       help="Release unconverted workloads are converted for."),
    consumable_shares: Optional[str] = typer.Option(
        None, "--consumable-shares", metavar="memory|unlimited|N",
        help="Predicted devices: the DRA driver's --consumable-shares setting."),
    full_matches: bool = typer.Option(
        False, "--full-matches",
        help="JSON: name every node with a matching device per request (default: the first "
             "20 when there are several workloads; matching_nodes counts them)."),
    output: list[str] = typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                                     callback=lambda v: _targets(v, OUTCOME_FORMATS),
                                     help="table, json, junit, markdown, github or html; "
                                          "FORMAT=PATH writes a file (repeatable)."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
    kubeconfig: Optional[str] = _kubeconfig_option(),
    context: Optional[str] = _context_option(),
    namespace: Optional[str] = _namespace_option(),
    request_timeout: Optional[str] = _request_timeout_option(),
) -> None:
    """Prove each claim matches real devices before the switch.

    Simulates placement of every workload (replicas x claims x count) on the device
    inventory: which requests match how many devices on which nodes, which selector term
    rejects which devices, and devices nothing matches. Unconverted workloads are converted in
    memory first, as `gpudra convert` would.
    """
    from gpudra.config import config_for, load_config
    from gpudra.plan.run import PlanRequest, as_report, run_plan
    from gpudra.rules import catalogue as rule_catalogue

    paths = list(paths or [])
    cfg = load_config(config_for(paths, config), rule_catalogue())
    # No connection flags: no gpudra.cluster import (a tree with --inventory needs none);
    # run_plan defaults to every namespace of the current context when it does connect.
    cluster = (_cluster_options(kubeconfig, context, namespace, request_timeout)
               if any((kubeconfig, context, namespace, request_timeout)) else None)
    request = PlanRequest(paths=tuple(paths), inventory=tuple(inventory), cluster=cluster,
                          target_version=target_version,
                          consumable_shares=consumable_shares, config=cfg,
                          full_matches=full_matches)
    with _ListProgress(quiet) as on_page:
        result = run_plan(request, on_page=on_page)
    _write_outcomes(output, as_report(result))
    for error in result.errors:
        typer.echo(f"gpudra: {error.where}: {error.message}", err=True)
    raise typer.Exit(int(result.exit_code()))


@app.command(short_help="After applying: allocated and running? Why Pending? Safe to remove "
                        "the plugin?",
             epilog=(
    "Read-only (get and list; `gpudra rbac` grants it, events included). One verdict per GPU "
    "workload at its top owner (device plugin, bridge or claims), reasons for every Pending "
    "pod or unallocated claim, and the decommission gate.\n\n"
    "Exit codes: 0 every workload on claims is allocated and Running; 1 one is not (or, with "
    "--decommission, the device plugin cannot be removed yet); 2 usage error; 3 the cluster "
    "could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra verify                          # every namespace of the current context\n"
    "  gpudra verify -n ml --selector app=trainer -o json\n"
    "  gpudra verify --decommission -o github # CI: the last step of the migration"))
@_guarded
def verify(
    output: list[str] = typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                                     callback=lambda v: _targets(v, OUTCOME_FORMATS),
                                     help="table, json, junit, markdown, github or html; "
                                          "FORMAT=PATH writes a file (repeatable)."),
    selector: Optional[str] = typer.Option(None, "-l", "--selector", metavar="LABELS",
                                           help="Only workloads whose labels match "
                                                "(app=x,tier!=y,key,!key)."),
    decommission: bool = typer.Option(False, "--decommission",
                                      help="Exit 1 while the device plugin cannot be removed."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
    kubeconfig: Optional[str] = _kubeconfig_option(),
    context: Optional[str] = _context_option(),
    namespace: Optional[str] = _namespace_option("Only this namespace's workloads."),
    all_namespaces: bool = _all_namespaces_option("Every namespace (the default)."),
    request_timeout: Optional[str] = _request_timeout_option(),
) -> None:
    """Prove each step of the switch worked, on the live cluster.

    For every GPU workload: on the device plugin, the bridge or claims; for claims, whether
    every pod's claims are allocated (driver, pool, device) and reserved for it and the pods
    Running and Ready. A Pending pod gets the scheduler's last FailedScheduling message and
    the plan engine's view of the live devices: which selector term rejects which devices,
    which nodes have free matching devices, which claims hold them, tainted devices, a missing
    DeviceClass or driver. Last, the decommission gate: safe to remove the device plugin, or
    what stands in the way.
    """
    from gpudra.config import config_for, load_config
    from gpudra.rules import catalogue as rule_catalogue
    from gpudra.verify.run import VerifyRequest, as_report, run_verify

    if namespace and all_namespaces:
        raise UsageError("choose one of -n/--namespace and -A/--all-namespaces")
    cfg = load_config(config_for([], config), rule_catalogue())
    request = VerifyRequest(_cluster_options(kubeconfig, context, namespace, request_timeout),
                            selector, decommission, cfg)
    with _ListProgress(quiet) as on_page:
        result = run_verify(request, on_page=on_page)
    _write_outcomes(output, as_report(result))
    for error in result.errors:
        typer.echo(f"gpudra: {error.where}: {error.message}", err=True)
    raise typer.Exit(int(result.exit_code()))


@app.command(short_help="Plan the switch node pool by node pool: waves, steps, rollback.",
             epilog=(
    "Read-only: prints a runbook and writes nothing to the cluster. Each wave is checked by "
    "the plan engine: the nodes left on the device plugin fit every workload not yet "
    "migrated, the DRA nodes fit every migrated one, no node serves both.\n\n"
    "Exit codes: 0 a safe order exists; 1 none does (not enough capacity: the numbers are "
    "printed); 2 usage error; 3 the cluster or a --from file could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra cutover                                   # the current context; wave table\n"
    "  gpudra cutover --output-dir cutover/ -o markdown > runbook.md\n"
    "  gpudra cutover --pool-label node.kubernetes.io/instance-type --max-wave-nodes 4\n"
    "  kubectl get nodes,deploy,sts,jobs,cronjobs -A -o yaml > fleet.yaml\n"
    "  gpudra cutover --from fleet.yaml -o json"))
@_guarded
def cutover(
    output: str = typer.Option("table", "-o", "--output", metavar="table|markdown|json",
                               help="Wave table, the Markdown runbook, or JSON."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", metavar="DIR",
                                              help="Write wave-N/original/ and "
                                                   "wave-N/converted/ manifests and "
                                                   "runbook.md (a new or empty directory)."),
    sources: list[str] = typer.Option([], "--from", metavar="FILE",
                                      help="Plan on exported YAML (nodes and workloads) "
                                           "instead of the cluster (repeatable)."),
    pool_label: Optional[str] = typer.Option(None, "--pool-label", metavar="LABEL",
                                             help="Node label that names pools (default: the "
                                                  "cloud's node-pool label, else the GPU "
                                                  "product)."),
    max_wave_nodes: Optional[int] = typer.Option(None, "--max-wave-nodes", metavar="N",
                                                 help="Split pools into waves of at most N "
                                                      "nodes."),
    target_version: str = typer.Option(str(DEFAULT), "--target-version", metavar=SUPPORTED_RANGE,
                                       help="Release the converted manifests are for."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="Config file (default: nearest .gpudra.yaml)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
    kubeconfig: Optional[str] = _kubeconfig_option(),
    context: Optional[str] = _context_option(),
    request_timeout: Optional[str] = _request_timeout_option(),
) -> None:
    """Order the switch from the device plugin to DRA in waves of node pools.

    Groups GPU nodes into pools, reads where each GPU workload may run (nodeSelector, required
    node affinity, tolerations) and orders waves so that after each one both sides fit, with
    the replicas the cluster runs today: batch workloads move first, then Deployments with
    several replicas, StatefulSets and singletons last. Per wave: the node labels that stop the
    device plugin and start the DRA kubelet plugin, the converted manifests to apply, the
    `gpudra verify` gate and the rollback.
    """
    from gpudra.config import config_for, load_config
    from gpudra.cutover.run import CutoverRequest, run_cutover
    from gpudra.cutover.runbook import Runbook
    from gpudra.rules import catalogue as rule_catalogue

    find(Kind.RUNBOOK, output)  # a bad -o before the cluster is read
    if sources and any((kubeconfig, context, request_timeout)):
        raise UsageError("--from plans on files: --kubeconfig, --context and "
                         "--request-timeout are for the cluster")
    cfg = load_config(config_for(list(sources), config), rule_catalogue())
    cluster = None if sources else _cluster_options(kubeconfig, context, None, request_timeout)
    request = CutoverRequest(tuple(sources), cluster, pool_label, max_wave_nodes, output_dir,
                             target_version, cfg)
    with _ListProgress(quiet or bool(sources)) as on_page:
        result = run_cutover(request, on_page=on_page)
    where = str(output_dir) if output_dir else None
    sys.stdout.write(render(Kind.RUNBOOK, output, Runbook(result.plan, where, result.pools)))
    for error in result.errors:
        typer.echo(f"gpudra: {error.where}: {error.message}", err=True)
    raise typer.Exit(int(result.exit_code()))


@app.command(short_help="List the preflight checks.")
@_guarded
def checks(
    output: str = typer.Option("table", "-o", "--output", help="table, json or markdown."),
) -> None:
    """List every preflight check: id, tier, title and what it looks at (docs/checks.md)."""
    from gpudra.preflight import catalogue as check_catalogue

    sys.stdout.write(render(Kind.CHECKS, output, list(check_catalogue().values())))


@app.command(short_help="Print the read-only RBAC that gpudra's cluster commands need.",
             epilog=(
    "Examples:\n\n\b\n"
    "  gpudra rbac | kubectl apply -f -                 # ServiceAccount gpudra/gpudra-reader\n"
    "  gpudra rbac --user alice@example.com | kubectl apply -f -\n"
    "  gpudra rbac --group platform-team > gpudra-rbac.yaml"))
@_guarded
def rbac(
    name: str = typer.Option("gpudra-reader", "--name", help="ClusterRole (and binding) name."),
    namespace: Optional[str] = typer.Option(None, "-n", "--namespace", metavar="NS",
                                            help="An existing namespace for the "
                                                 "ServiceAccount (default: a Namespace "
                                                 "gpudra, printed too)."),
    service_account: Optional[str] = typer.Option(None, "--service-account", metavar="NAME",
                                                  help="Bind to this ServiceAccount "
                                                       "(default: --name)."),
    user: Optional[str] = typer.Option(None, "--user", help="Bind to a user instead."),
    group: Optional[str] = typer.Option(None, "--group", help="Bind to a group instead."),
    report_configmap: Optional[str] = typer.Option(
        None, "--report-configmap", metavar="NAME",
        help="Also let it create and update the ConfigMap NAME in its namespace, for audit "
             "-o json=configmap:NAME (deploy/'s CronJob)."),
) -> None:
    """Print the read-only ClusterRole and binding that audit, plan, preflight, verify and
    cutover need.

    get and list on the resource types gpudra reads, nothing else (docs/rbac.md). Pipe it to
    `kubectl apply -f -`, or use deploy/ to run the audit as an in-cluster CronJob.
    """
    from gpudra.rbac import manifests, render

    if sum(map(bool, (user, group, service_account))) > 1:
        raise UsageError("choose one of --user, --group and --service-account")
    if report_configmap:
        from gpudra.cluster.publish import parse_target

        parse_target(report_configmap)  # a name the API server accepts
        if "/" in report_configmap:
            raise UsageError("--report-configmap takes a NAME; -n/--namespace says where")
    sys.stdout.write(render(manifests(name, namespace, service_account, user, group,
                                      report_configmap)))


@app.command(short_help="List the audit rules.")
@_guarded
def rules(
    output: str = typer.Option("table", "-o", "--output", help="table, json or markdown."),
) -> None:
    """List the rule catalogue: id, default severity, name and summary."""
    from gpudra.rules import catalogue

    sys.stdout.write(render(Kind.RULES, output, list(catalogue().values())))


@app.command(short_help="Explain a rule or a check (GPU101, CLUSTER001).")
@_guarded
def explain(rule: str = typer.Argument(..., metavar="ID",
                                       help="A rule id (GPU101) or a preflight check id "
                                            "(CLUSTER001).")) -> None:
    """Print a rule's or a preflight check's documentation: why it matters, what is wrong and
    right, the fix."""
    from gpudra.preflight.docs import explain_id

    text = explain_id(rule)
    if not _terminal(sys.stdout):
        sys.stdout.write(text)  # the Markdown source: for pipes, files and docs
        return
    from rich.console import Console
    from rich.markdown import Markdown

    # Rendered for a person; NO_COLOR keeps the layout (and bold) but drops the colours.
    Console(force_terminal=True, no_color=not _color(sys.stdout)).print(Markdown(text))


report_app = typer.Typer(name="report", no_args_is_help=True,
                         help="Work with JSON reports: merge the reports of many clusters.")
app.add_typer(report_app)
MERGE_FORMATS = names(Kind.FLEET)


@report_app.command("merge", short_help="Merge JSON reports of many clusters into one.",
                    epilog=(
    "Each REPORT is a `gpudra audit -o json` report (of a cluster, a tree or a fleet), "
    "validated against the report schema first; a report of another schema_version is "
    "refused. A single-cluster report is named by --name, else by the cluster its workloads "
    "name, else by its file name without .json; two clusters of one name are refused.\n\n"
    "Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage error "
    "(two clusters of one name); 3 a report cannot be read or is invalid, or a cluster in it "
    "could not be audited (the worst input's code).\n\n"
    "Examples:\n\n\b\n"
    "  gpudra report merge prod.json staging.json -o html=fleet.html\n"
    "  gpudra report merge reports/*.json -o markdown -o json=fleet.json\n"
    "  gpudra report merge a/report.json b/report.json --name a/report.json=eu-west"))
@_guarded
def report_merge(
    reports: list[str] = typer.Argument(..., metavar="REPORT.json...",
                                        help="JSON reports to merge."),
    output: list[str] = typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                                     callback=lambda v: _targets(v, MERGE_FORMATS, "markdown"),
                                     help="json, markdown (the default) or html; "
                                          "FORMAT=PATH writes a file (repeatable)."),
    names: list[str] = typer.Option([], "--name", metavar="FILE=NAME",
                                    help="Name the cluster of a single-cluster report "
                                         "(repeatable)."),
    fail_on: _SeverityWord = typer.Option(_SeverityWord.WARNING, "--fail-on",
                                          case_sensitive=False,
                                          help="Lowest severity that makes the exit code 1."),
) -> None:
    """Merge the JSON reports of many clusters: one summary (their sum), one row per cluster,
    every finding and workload named by its cluster."""
    from gpudra.report.merge import exit_code, load_report, merge_reports, parse_names
    from gpudra.report.targets import write_targets

    named = parse_names(names)
    unknown = sorted(set(named) - set(reports))
    if unknown:
        raise UsageError(f"--name {unknown[0]}=...: no such REPORT among the arguments")
    merged = merge_reports([load_report(path, named.get(path)) for path in reports])

    def text(fmt: str, to_stdout: bool) -> str:
        return render(Kind.FLEET, fmt, merged, RenderOptions(tool_version=__version__))

    write_targets(output, text, sys.stdout)
    raise typer.Exit(int(exit_code(merged, FailOn.parse(fail_on.value))))


KUBECTL_PLUGIN = "kubectl-gpudra"


def program_name(argv0: str) -> str | None:
    """`kubectl gpudra` when run as the kubectl plugin (kubectl execs `kubectl-gpudra`), so that
    usage lines show what the user typed; None lets click name it (`gpudra`,
    `python -m gpudra`)."""
    name = PureWindowsPath(argv0).name.lower()  # splits on slashes and backslashes alike
    return "kubectl gpudra" if name.removesuffix(".exe") == KUBECTL_PLUGIN else None


def main() -> None:
    """Console-script entry point (gpudra and kubectl-gpudra)."""
    try:
        app(prog_name=program_name(sys.argv[0]) if sys.argv else None)
    except KeyboardInterrupt:  # before or after a command runs (imports, option parsing)
        typer.echo(INTERRUPTED, err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
