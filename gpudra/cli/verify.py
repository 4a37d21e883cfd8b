"""`gpudra verify`: after applying, is every GPU workload allocated and running?"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Optional

import typer

from gpudra.cli.options import (
    Connection, all_namespaces_option, config_option, context_option, exclusive_namespaces,
    kubeconfig_option, load_cfg, namespace_option, quiet_option, request_timeout_option,
)
from gpudra.cli.output import given, outcome_targets_option, write_outcomes
from gpudra.results.model import ExitCode
from gpudra.cli.root import app, guarded, report_errors
from gpudra.cli.terminal import ListProgress
from gpudra.run_context import RunContext

EPILOG = (
    "Read-only (get and list; `gpudra rbac` grants it, events included). One verdict per GPU "
    "workload at its top owner (device plugin, bridge or claims), reasons for every Pending "
    "pod or unallocated claim, and the decommission gate.\n\n"
    "Exit codes: 0 every workload on claims is allocated and Running; 1 one is not (or, with "
    "--wave-of, a workload the wave moves is still on the device plugin or missing; with "
    "--decommission, the device plugin cannot be removed yet); 2 usage error; 3 the cluster "
    "or a wave folder could not be read.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra verify                          # every namespace of the current context\n"
    "  gpudra verify -n ml --selector app=trainer -o json\n"
    "  gpudra verify --wave-of cutover/wave-1  # after the runbook's wave 1\n"
    "  gpudra verify --decommission -o github # CI: the last step of the migration")


@app.command(short_help="After applying: allocated and running? Why Pending? Safe to remove "
                        "the plugin?", epilog=EPILOG)
@guarded
def verify(
    output: list[str] = outcome_targets_option(),
    selector: Optional[str] = typer.Option(None, "-l", "--selector", metavar="LABELS",
                                           help="Only workloads whose labels match "
                                                "(app=x,tier!=y,key,!key)."),
    decommission: bool = typer.Option(False, "--decommission",
                                      help="Exit 1 while the device plugin cannot be removed."),
    wave_of: list[str] = typer.Option([], "--wave-of", metavar="WAVE_DIR",
                                      help="A wave folder of `gpudra cutover --output-dir` "
                                           "that was applied (repeatable): a workload it moves "
                                           "still on the device plugin, or missing, fails."),
    config: Optional[Path] = config_option(),
    quiet: bool = quiet_option(),
    kubeconfig: Optional[str] = kubeconfig_option(),
    context: Optional[str] = context_option(),
    namespace: Optional[str] = namespace_option("Only this namespace's workloads."),
    all_namespaces: bool = all_namespaces_option("Every namespace (the default)."),
    request_timeout: Optional[str] = request_timeout_option(),
) -> ExitCode:
    """Prove each step of the switch worked, on the live cluster.

    For every GPU workload: on the device plugin, the bridge or claims; for claims, whether
    every pod's claims are allocated (driver, pool, device) and reserved for it and the pods
    Running and Ready. A Pending pod gets the scheduler's last FailedScheduling message and
    the plan engine's view of the live devices: which selector term rejects which devices,
    which nodes have free matching devices, which claims hold them, tainted devices, a missing
    DeviceClass or driver. Last, the decommission gate: safe to remove the device plugin, or
    what stands in the way.
    """
    from gpudra.verify.run import VerifyRequest, as_report, run_verify

    exclusive_namespaces(namespace, all_namespaces)
    cfg = load_cfg([], config)
    connection = Connection(kubeconfig, context, namespace, request_timeout)
    request = VerifyRequest(RunContext(None, cfg, connection.cluster_options(), today=date.today()), selector,
                            decommission, tuple(wave_of))
    with ListProgress(quiet) as on_page:
        result = run_verify(request, on_page=on_page)
    write_outcomes(given(output), as_report(result))
    report_errors(result.errors)
    return result.exit_code()
