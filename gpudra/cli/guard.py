"""`gpudra guard`: the namespace ratchet, written as a ValidatingAdmissionPolicy and binding."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpudra.cli.options import parse_word
from gpudra.cli.output import GuardFormat, write_guard
from gpudra.cli.root import app, guarded
from gpudra.results.model import ExitCode


EPILOG = (
    "Writes the objects and applies nothing: pipe them to `kubectl apply -f -`. The binding "
    "selects namespaces labelled gpudra.io/migrated=true, which the cutover runbook writes "
    "after a namespace's last wave (`kubectl label namespace NS gpudra.io/migrated=true`).\n\n"
    "Stages: --action warn first (kubectl prints a warning, the audit log records it, nothing "
    "is refused), then --action deny (refused). Both bindings are named gpudra-guard, so "
    "applying one replaces the other.\n\n"
    "Exit codes: 0 written; 2 usage error; 3 a file could not be written.\n\n"
    "Examples:\n\n\b\n"
    "  gpudra guard | kubectl apply -f -                     # claims strategy, warn\n"
    "  gpudra guard --action deny | kubectl apply -f -       # then refuse\n"
    "  gpudra guard --strategy bridge --action deny          # nvidia.com/gpu stays allowed\n"
    "  gpudra guard --output-dir guard/ -o json              # policy.json and binding.json\n"
    "  kubectl label namespace ml gpudra.io/migrated=true    # what the runbook does")

_STRATEGY = typer.Option("claims", "--strategy", metavar="claims|bridge",
                         help="What serves GPUs in migrated namespaces: claims (also spelled "
                              "rewrite, as convert and cutover call it) refuses every "
                              "NVIDIA device-plugin resource; bridge (KEP-5004 DeviceClass with "
                              "extendedResourceName) lets nvidia.com/gpu through and refuses "
                              "MIG and shared ones.")
_ACTION = typer.Option("warn", "--action", metavar="warn|deny",
                       help="warn: validationActions [Warn, Audit]; deny: [Deny, Audit].")
_OUTPUT = typer.Option("yaml", "-o", "--output", metavar="yaml|json",
                       help="A YAML stream, or a JSON List.")
_OUTPUT_DIR = typer.Option(None, "--output-dir", metavar="DIR",
                           help="Write policy.yaml and binding.yaml (or .json) there instead "
                                "of stdout.")


@app.command(short_help="Keep migrated namespaces migrated: an admission policy and binding.",
             epilog=EPILOG)
@guarded
def guard(
    strategy: str = _STRATEGY,
    action: str = _ACTION,
    output: str = _OUTPUT,
    output_dir: Optional[Path] = _OUTPUT_DIR,
) -> ExitCode:
    """Write the namespace ratchet: a ValidatingAdmissionPolicy and its binding.

    In namespaces labelled gpudra.io/migrated=true, new Pods and pod templates (Deployment,
    StatefulSet, DaemonSet, ReplicaSet, ReplicationController, PodTemplate, Job, CronJob) that
    ask for device-plugin GPUs the cluster no longer serves are warned about, then refused,
    with a message that names the container, the resource and `gpudra convert`. An object that
    already asked when the namespace was labelled may still be updated as it is.
    admissionregistration.k8s.io/v1: Kubernetes 1.30 and later, no webhook to run.
    """
    from gpudra.guard.policy import Action, Strategy
    from gpudra.guard.run import GuardRequest, run_guard

    request = GuardRequest(parse_word(Strategy, strategy, "--strategy"),
                           parse_word(Action, action, "--action"))
    fmt = GuardFormat.parse(output, "-o")
    result = run_guard(request)
    write_guard(result, fmt, output_dir)
    return result.exit_code()
