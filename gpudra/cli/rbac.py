"""`gpudra rbac`: the read-only RBAC gpudra's cluster commands need."""

from __future__ import annotations

from typing import Optional

import typer

from gpudra.cli.options import namespace_option
from gpudra.cli.output import write_rbac
from gpudra.cli.root import app, guarded
from gpudra.results.model import ExitCode

EPILOG = (
    "Examples:\n\n\b\n"
    "  gpudra rbac | kubectl apply -f -                 # ServiceAccount gpudra/gpudra-reader\n"
    "  gpudra rbac --user alice@example.com | kubectl apply -f -\n"
    "  gpudra rbac --group platform-team > gpudra-rbac.yaml")


@app.command(short_help="Print the read-only RBAC that gpudra's cluster commands need.",
             epilog=EPILOG)
@guarded
def rbac(
    name: str = typer.Option("gpudra-reader", "--name", help="ClusterRole (and binding) name."),
    namespace: Optional[str] = namespace_option("An existing namespace for the ServiceAccount "
                                                "(default: a Namespace gpudra, printed too)."),
    service_account: Optional[str] = typer.Option(None, "--service-account", metavar="NAME",
                                                  help="Bind to this ServiceAccount "
                                                       "(default: --name)."),
    user: Optional[str] = typer.Option(None, "--user", help="Bind to a user instead."),
    group: Optional[str] = typer.Option(None, "--group", help="Bind to a group instead."),
    report_configmap: Optional[str] = typer.Option(
        None, "--report-configmap", metavar="NAME",
        help="Also let it create and update the ConfigMap NAME in its namespace, for audit "
             "-o json=configmap:NAME (deploy/'s CronJob)."),
) -> ExitCode:
    """Print the read-only ClusterRole and binding that audit, plan, preflight, verify and
    cutover need.

    get and list on the resource types gpudra reads, nothing else (docs/rbac.md). Pipe it to
    `kubectl apply -f -`, or use deploy/ to run the audit as an in-cluster CronJob.
    """
    from gpudra.rbac import RbacRequest, run_rbac

    result = run_rbac(RbacRequest(name, namespace, service_account, user, group,
                                  report_configmap))
    write_rbac(result)
    return result.exit_code()
