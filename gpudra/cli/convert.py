"""`gpudra convert`: manifests, or the live cluster's workloads exported first."""

from __future__ import annotations

from datetime import date
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Optional

import typer

from gpudra.cli.options import (
    Connection, config_option, context_option, exclude_option, kubeconfig_option, load_cfg,
    namespace_option, parse_word, quiet_option, request_timeout_option, target_version_option,
    verbose_option,
)
from gpudra.cli.root import app, guarded
from gpudra.cli.terminal import color
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.errors import UsageError
from gpudra.results.model import ExitCode
from gpudra.run_context import RunContext
from gpudra.report import SummaryFormat

if TYPE_CHECKING:
    from gpudra.cluster.options import ClusterOptions
    from gpudra.convert.records import ConvertRequest
    from gpudra.convert.run import ConvertResult

EPILOG = (
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
    "  cat job.yaml | gpudra convert - > job-dra.yaml")


# The options convert alone has, declared here so that the command's signature reads as a list.
_PATHS = typer.Argument(None, metavar="[PATH]...",
                        help="Files or directories; '-' reads stdin, writes stdout.")
_DIFF = typer.Option(False, "--diff", help="Print a unified diff; write nothing.")
_CHECK = typer.Option(False, "--check", help="Write nothing; exit 1 when anything would change "
                                             "(with --diff: and print the diff).")
_OUTPUT_DIR = typer.Option(None, "--output-dir", metavar="DIR",
                           help="Write a converted copy of the tree to DIR.")
_CLAIM_MODE = typer.Option("template", "--claim-mode", metavar="template|shared",
                           help="A claim per pod (template) or one claim all pods share.")
_STRATEGY = typer.Option("rewrite", "--strategy", metavar="rewrite|bridge",
                         help="rewrite (also spelled claims, as guard and cutover's runbook "
                              "call it): move the requests into claims. bridge: leave plain "
                              "nvidia.com/gpu workloads unchanged and write a DeviceClass with "
                              "extendedResourceName (KEP-5004).")
_KEEP_NODE_SELECTORS = typer.Option(False, "--keep-node-selectors",
                                    help="Keep GPU node labels besides the CEL selectors.")
_ADD_TOLERATION = typer.Option(
    None, "--add-toleration/--no-add-toleration",
    help="Add the nvidia.com/gpu NoSchedule toleration to pods that requested nvidia.com/gpu "
         "and lack one (default; --from-cluster: when GPU nodes carry the taint).")
_KEEP_QUOTA = typer.Option(False, "--keep-device-plugin-quota",
                           help="Keep requests.nvidia.com/gpu quota keys (migration window).")
_SELECTOR = typer.Option([], "--selector", metavar="CEL",
                         help="Extra CEL selector for every converted request.")
_MIN_MEMORY = typer.Option(None, "--min-memory", metavar="QUANTITY",
                           help="Only GPUs with at least this memory, e.g. 40Gi.")
_PRODUCT = typer.Option(None, "--product", metavar="NAME",
                        help="Only GPUs whose product name starts with NAME.")
_CLAIMS_FILE = typer.Option(None, "--claims-file", metavar="NAME",
                            help="Put new objects in NAME in each directory "
                                 "(added to kustomization resources).")
_ADMIN_ACCESS = typer.Option(False, "--admin-access",
                             help="Give monitoring DaemonSets that see every GPU "
                                  "(NVIDIA_VISIBLE_DEVICES=all) an admin-access claim (1.34+).")
_OUTPUT = typer.Option(SummaryFormat("table"), "-o", "--output", case_sensitive=False,
                       help="Summary format.")
_FROM_CLUSTER = typer.Option(False, "--from-cluster",
                             help="Export the live cluster's GPU workloads as clean manifests "
                                  "into --output-dir, then convert them.")


@app.command(short_help="Rewrite workloads to DRA claims; only the lines that must change.",
             epilog=EPILOG)
@guarded
def convert(
    paths: Optional[list[str]] = _PATHS,
    diff: bool = _DIFF,
    check: bool = _CHECK,
    output_dir: Optional[Path] = _OUTPUT_DIR,
    target_version: Optional[str] = target_version_option(
        "Kubernetes version to write for: v1 for 1.34+, v1beta2 for 1.33, v1beta1 for 1.32 "
        f"(default: {DEFAULT}; with --from-cluster, the cluster's own).", default=None),
    claim_mode: str = _CLAIM_MODE,
    strategy: str = _STRATEGY,
    keep_node_selectors: bool = _KEEP_NODE_SELECTORS,
    add_toleration: Optional[bool] = _ADD_TOLERATION,
    keep_quota: bool = _KEEP_QUOTA,
    selector: list[str] = _SELECTOR,
    min_memory: Optional[str] = _MIN_MEMORY,
    product: Optional[str] = _PRODUCT,
    claims_file: Optional[str] = _CLAIMS_FILE,
    admin_access: bool = _ADMIN_ACCESS,
    exclude: list[str] = exclude_option("Skip matching paths."),
    config: Optional[Path] = config_option(),
    output: SummaryFormat = _OUTPUT,
    quiet: bool = quiet_option("No summary; errors still go to stderr."),
    verbose: bool = verbose_option(),
    from_cluster: bool = _FROM_CLUSTER,
    kubeconfig: Optional[str] = kubeconfig_option("--from-cluster: kubeconfig file."),
    context: Optional[str] = context_option("--from-cluster: kubeconfig context."),
    namespace: Optional[str] = namespace_option("--from-cluster: only this namespace."),
    request_timeout: Optional[str] = request_timeout_option("--from-cluster: per-request "
                                                            "timeout."),
) -> ExitCode:
    """Rewrite workloads and quotas from device-plugin requests to DRA claims, in place.

    Each pod spec that requests nvidia.com/gpu (or a MIG slice) gets a ResourceClaimTemplate
    next to it, spec.resourceClaims, and resources.claims on each GPU container; GPU node labels
    become CEL selectors. Only the lines that must change are changed; a second run changes
    nothing. Workloads gpudra would have to guess about are left alone and reported.
    """
    from gpudra.convert.records import ClaimMode, Strategy
    from gpudra.convert.records import ConvertRequest
    from gpudra.convert.run import distinct_paths

    cluster = _cluster(list(paths or []), from_cluster,
                       Connection(kubeconfig, context, namespace, request_timeout))
    # --from-cluster without --target-version writes for the release the cluster runs.
    target = TargetVersion.parse(target_version) if target_version else None
    if target is None and not from_cluster:
        target = DEFAULT
    claims = parse_word(ClaimMode, claim_mode, "--claim-mode")
    switch = parse_word(Strategy, strategy, "--strategy")
    # the config nearest to what is converted: a path another one covers is not looked from
    cfg = load_cfg(distinct_paths(tuple(paths or ())), config)
    request = ConvertRequest(
        paths=tuple(paths or ()), context=RunContext(target, cfg, cluster, today=date.today()), diff=diff,
        check=check, output_dir=output_dir, claim_mode=claims, strategy=switch,
        keep_node_selectors=keep_node_selectors, add_toleration=add_toleration,
        keep_device_plugin_quota=keep_quota, selectors=tuple(selector), min_memory=min_memory,
        product=product, claims_file=claims_file, admin_access=admin_access,
        excludes=tuple(exclude))
    return run_convert(request, ConvertShow(output, quiet, verbose), stdout=sys.stdout,
                       stderr=sys.stderr, color=diff and color(sys.stdout))


@dataclass(frozen=True)
class ConvertShow:
    """How the CLI shows a run: choices of rendering, none of which changes what is converted
    or written (so they are not the core's ConvertRequest's)."""

    output: SummaryFormat = SummaryFormat.TABLE  # the summary's format
    quiet: bool = False  # no summary, and no note that an interrupted run was finished
    verbose: bool = False  # the summary lists skipped documents


def run_convert(request: ConvertRequest, show: ConvertShow = ConvertShow(), *,
                stdout: IO[str], stderr: IO[str], stdin: Callable[[], bytes] | None = None,
                color: bool = False) -> ExitCode:
    """Convert, then write what the run shows: the converted stream (`-`) or the diff and the
    summary on stdout or stderr, each error on stderr; notes on stderr as they happen."""
    from gpudra.convert.run import convert

    if "-" in request.paths and show.output is SummaryFormat.JSON:  # before anything is read
        raise UsageError("-o json cannot be combined with '-': stdout carries the converted YAML")

    def note(line: str) -> None:
        stderr.write(f"gpudra: {line}\n")

    def finished(written: int) -> None:
        if not show.quiet:
            note(f"finished an interrupted convert: {written} more "
                 f"{'file' if written == 1 else 'files'} written")

    result = convert(request, stdin=stdin, note=note, on_finished=finished)
    write_convert(result, show, stdout=stdout, stderr=stderr, color=color)
    return result.exit_code


def write_convert(result: ConvertResult, show: ConvertShow = ConvertShow(), *,
                  stdout: IO[str], stderr: IO[str], color: bool = False) -> None:
    """The result as convert has always shown it; `color`: the diff's (a TTY, NO_COLOR)."""
    from gpudra.convert.run import stdin_result
    from gpudra.convert.summary import RENDERERS, redaction_note
    from gpudra.convert.writer import color_diff, unified_diff
    from gpudra.printable import redact
    from gpudra.report.formats import Kind, RenderOptions, render_with

    request, report = result.request, result.report
    if report is None or result.summary is None:  # --from-cluster exported nothing
        for error in result.exported:
            stderr.write(f"gpudra: {error.where}: {error.message}\n")
        for pod in result.skipped:
            stderr.write(f"gpudra: not exported: {pod.namespace}/Pod/{pod.name}: "
                         f"{pod.reason}\n")
        if not show.quiet:
            stderr.write("gpudra: the cluster has no GPU workloads or GPU quotas to export\n")
        return
    fmt = show.output.value
    if request.paths == ("-",):
        stdout.write(stdin_result(report))
    elif request.diff and fmt != "json":
        for change in report.changes:
            diff = unified_diff(change.label, change.old, change.new, change.created)
            # Redacted as every output is (docs/security.md), and said on stderr when it was.
            shown = redact(diff)
            stdout.write(color_diff(shown) if color else shown)
            note = redaction_note(change.label, diff)
            if note is not None:
                stderr.write(f"gpudra: {note}\n")
    options = RenderOptions(verbose=show.verbose)
    if fmt == "json":  # the requested output, not a summary: -q keeps it
        stdout.write(render_with(RENDERERS["json"], Kind.CONVERT, "json", result.summary,
                                 options))
    elif not show.quiet:
        summary_stream = stderr if request.paths == ("-",) or request.diff else stdout
        summary_stream.write(render_with(RENDERERS[fmt], Kind.CONVERT, fmt, result.summary,
                                         options))
    for error in report.errors:  # on stderr, as every command's input errors
        stderr.write(f"gpudra: {error.where}: {error.message}\n")


def _cluster(paths: list[str], from_cluster: bool, connection: Connection
             ) -> ClusterOptions | None:
    """gpudra.cluster.ClusterOptions under --from-cluster, else None; a usage error for
    connection flags without it, or for nothing to convert."""
    if connection.given and not from_cluster:
        raise UsageError("--kubeconfig, --context, -n and --request-timeout go with "
                         "--from-cluster")
    if not paths and not from_cluster:
        raise UsageError("give a PATH to convert (or --from-cluster --output-dir DIR)")
    return connection.cluster_options() if from_cluster else None
