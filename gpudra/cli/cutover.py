"""`gpudra cutover`: the switch, node pool by node pool."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Optional

import typer

from gpudra.cli.options import (
    Connection, config_option, context_option, kubeconfig_option, load_cfg, parse_word,
    quiet_option, request_timeout_option, target_version_option,
)
from gpudra.cli.output import RunbookFormat, write_runbook
from gpudra.results.model import ExitCode
from gpudra.cli.root import app, guarded, report_errors
from gpudra.cli.terminal import ListProgress
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.errors import UsageError
from gpudra.run_context import RunContext

EPILOG = (
    "Read-only: prints a runbook and writes nothing to the cluster. Each wave is checked by "
    "the plan engine: the nodes left on the device plugin fit every workload not yet "
    "migrated, the DRA nodes fit every migrated one, no node serves both.\n\n"
    "Exit codes: 0 a safe order exists; 1 none does (not enough capacity: the numbers are "
    "printed); 2 usage error; 3 the cluster or a --from file could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra cutover                                   # the current context; wave table\n"
    "  gpudra cutover --output-dir cutover/ -o markdown > runbook.md\n"
    "  gpudra cutover --pool-label node.kubernetes.io/instance-type --max-wave-nodes 4\n"
    "  gpudra cutover --strategy bridge --output-dir cutover/ -o markdown   # 1.36+: no "
    "manifest change for whole GPUs\n"
    "  kubectl get nodes,pods,rs,deploy,sts,jobs,cronjobs,ds,quota,resourceslices,"
    "resourceclaimtemplates,deviceclasses -A -o yaml > fleet.yaml\n"
    "  kubectl get leaderworkersets,jobsets,rayclusters,inferenceservices -A -o yaml "
    "> operators.yaml   # the kinds the cluster serves\n"
    "  gpudra cutover --from fleet.yaml --from operators.yaml -o json")

_OUTPUT = typer.Option("table", "-o", "--output", metavar="table|markdown|json",
                       help="Wave table, the Markdown runbook, or JSON.")
_OUTPUT_DIR = typer.Option(None, "--output-dir", metavar="DIR",
                           help="Write wave-N/original/ and wave-N/converted/ manifests and "
                                "runbook.md (a new or empty directory).")
_SOURCES = typer.Option([], "--from", metavar="FILE",
                        help="Plan on exported YAML (nodes and workloads) instead of the "
                             "cluster (repeatable).")
_POOL_LABEL = typer.Option(None, "--pool-label", metavar="LABEL",
                           help="Node label that names pools (default: the cloud's node-pool "
                                "label, else the GPU product).")
_STRATEGY = typer.Option("rewrite", "--strategy", metavar="rewrite|bridge",
                         help="rewrite (also spelled claims): each wave converts its "
                              "workloads to claims; on a 1.37+ target a workload convert "
                              "blocks because its controller reads the GPU limit (KServe, a v1 "
                              "MPIJob) rides the bridge unchanged instead, in the wave that "
                              "switches its last node (a rider: docs/cutover.md). bridge "
                              "(1.36+): they stay unchanged and DRA serves their nvidia.com/gpu "
                              "through a DeviceClass's extendedResourceName (KEP-5004); only "
                              "what the bridge cannot serve (MIG) is converted.")
_MAX_WAVE_NODES = typer.Option(None, "--max-wave-nodes", metavar="N",
                               help="Split pools into waves of at most N nodes.")


@app.command(short_help="Plan the switch node pool by node pool: waves, steps, rollback.",
             epilog=EPILOG)
@guarded
def cutover(
    output: str = _OUTPUT,
    output_dir: Optional[Path] = _OUTPUT_DIR,
    sources: list[str] = _SOURCES,
    pool_label: Optional[str] = _POOL_LABEL,
    max_wave_nodes: Optional[int] = _MAX_WAVE_NODES,
    strategy: str = _STRATEGY,
    target_version: Optional[str] = target_version_option(
        "Release the converted manifests are for (default: the cluster's own; "
        f"{DEFAULT} for --from).", default=None),
    config: Optional[Path] = config_option(),
    quiet: bool = quiet_option(),
    kubeconfig: Optional[str] = kubeconfig_option(),
    context: Optional[str] = context_option(),
    request_timeout: Optional[str] = request_timeout_option(),
) -> ExitCode:
    """Order the switch from the device plugin to DRA in waves of node pools.

    Groups GPU nodes into pools, reads where each GPU workload may run (nodeSelector, required
    node affinity, tolerations) and orders waves so that after each one both sides fit, with
    the replicas the cluster runs today: batch workloads move first, then Deployments with
    several replicas, StatefulSets and singletons last. Per wave: the node labels that stop the
    device plugin and start the DRA kubelet plugin, the converted manifests to apply, the
    `gpudra verify` gate and the rollback.
    """
    from gpudra.convert.records import Strategy
    from gpudra.cutover.run import CutoverRequest, run_cutover

    fmt = RunbookFormat.parse(output, "-o")
    connection = Connection(kubeconfig, context, None, request_timeout)
    if sources and connection.given:
        raise UsageError("--from plans on files: --kubeconfig, --context and "
                         "--request-timeout are for the cluster")
    cfg = load_cfg(sources, config)
    cluster = None if sources else connection.cluster_options()
    target = TargetVersion.parse(target_version) if target_version else None
    request = CutoverRequest(RunContext(target, cfg, cluster, today=date.today()), tuple(sources), pool_label,
                             max_wave_nodes, output_dir,
                             parse_word(Strategy, strategy, "--strategy"))
    with ListProgress(quiet or bool(sources)) as on_page:
        result = run_cutover(request, on_page=on_page)
    write_runbook(fmt, result, str(output_dir) if output_dir else None)
    report_errors(result.errors)
    return result.exit_code()
