"""`gpudra plan`: will each claim find real devices, and on which nodes?"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from gpudra.cli.options import (
    Connection, config_option, context_option, kubeconfig_option, load_cfg, namespace_option,
    quiet_option, request_timeout_option, target_version_option,
)
from gpudra.cli.output import given, outcome_targets_option, write_plan
from gpudra.results.model import ExitCode
from gpudra.cli.root import app, guarded, report_errors
from gpudra.cli.terminal import ListProgress
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError
from gpudra.run_context import RunContext

if TYPE_CHECKING:
    from gpudra.plan.run import PlanRequest

EPILOG = (
    "Devices: --inventory files (ResourceSlices, or Node objects such as `kubectl get nodes "
    "-o yaml`, from which the NVIDIA DRA driver's devices are predicted), else ResourceSlices "
    "or Nodes in the tree, else the current cluster's (read-only).\n\n"
    "Exit codes: 0 every workload can be satisfied; 1 one cannot; 2 usage error; 3 an input "
    "or the cluster could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra plan ./manifests --inventory slices.yaml\n"
    "  kubectl get nodes -o yaml > nodes.yaml && gpudra plan ./manifests --inventory nodes.yaml\n"
    "  gpudra plan                      # workloads and devices of the current cluster\n"
    "  gpudra plan ./manifests -o json | jq '.workloads[] | select(.satisfiable | not)'")

_PATHS = typer.Argument(None, metavar="[PATH]...",
                        help="Manifests (converted or not); none: the cluster.")
_INVENTORY = typer.Option([], "--inventory", metavar="FILE",
                          help="ResourceSlice or Node YAML (repeatable).")
_CONSUMABLE_SHARES = typer.Option(
    None, "--consumable-shares", metavar="memory|unlimited|N",
    help="Predicted devices: the DRA driver's --consumable-shares setting.")
_FULL_MATCHES = typer.Option(
    False, "--full-matches",
    help="JSON: name every node with a matching device per request (default: the first "
         "20 when there are several workloads; matching_nodes counts them).")


@app.command(short_help="Will each claim find real devices? On which nodes?", epilog=EPILOG)
@guarded
def plan(
    paths: Optional[list[str]] = _PATHS,
    inventory: list[str] = _INVENTORY,
    target_version: str = target_version_option(
        "Release unconverted workloads are converted for."),
    consumable_shares: Optional[str] = _CONSUMABLE_SHARES,
    full_matches: bool = _FULL_MATCHES,
    output: list[str] = outcome_targets_option(),
    config: Optional[Path] = config_option(),
    quiet: bool = quiet_option(),
    kubeconfig: Optional[str] = kubeconfig_option(),
    context: Optional[str] = context_option(),
    namespace: Optional[str] = namespace_option(),
    request_timeout: Optional[str] = request_timeout_option(),
) -> ExitCode:
    """Prove each claim matches real devices before the switch.

    Simulates placement of every workload (replicas x claims x count) on the device
    inventory: which requests match how many devices on which nodes, which selector term
    rejects which devices, and devices nothing matches. Unconverted workloads are converted in
    memory first, as `gpudra convert` would.
    """
    from gpudra.plan.run import run_plan

    request = _request(
        paths=tuple(paths or ()), inventory=tuple(inventory), target_version=target_version,
        consumable_shares=consumable_shares, full_matches=full_matches, config=config,
        connection=Connection(kubeconfig, context, namespace, request_timeout))
    with ListProgress(quiet) as on_page:
        result = run_plan(request, on_page=on_page)
    write_plan(given(output), result)
    report_errors(result.errors)
    return result.exit_code()


def _request(*, paths: tuple[str, ...], inventory: tuple[str, ...], target_version: str,
             consumable_shares: Optional[str], full_matches: bool, config: Optional[Path],
             connection: Connection) -> PlanRequest:
    """The command line as a gpudra.plan.run.PlanRequest; usage errors in the order plan
    checks them (the config, --consumable-shares, --target-version)."""
    from gpudra.plan.run import PlanRequest
    from gpudra.plan.synthesis import Shares

    cfg = load_cfg(paths, config)
    # No connection flags: no gpudra.cluster import (a tree with --inventory needs none);
    # run_plan defaults to every namespace of the current context when it does connect.
    cluster = connection.cluster_options() if connection.given else None
    try:
        shares = Shares.parse(consumable_shares) if consumable_shares is not None else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    context = RunContext(TargetVersion.parse(target_version), cfg, cluster, today=date.today())
    return PlanRequest(context, paths=paths, inventory=inventory, consumable_shares=shares,
                       full_matches=full_matches)
