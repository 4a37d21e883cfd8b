"""`gpudra preflight`: the cluster, a node, or a manifest tree, ready for DRA?"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from gpudra.cli.options import (
    Connection, OutcomeWord, baseline_option, config_option, context_option, kubeconfig_option,
    load_baseline, load_cfg, quiet_option, request_timeout_option, strict_option,
    target_version_option,
)
from gpudra.cli.output import given, outcome_targets_option, write_outcomes
from gpudra.results.model import ExitCode
from gpudra.cli.root import app, guarded, report_errors
from gpudra.cli.terminal import ListProgress
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError
from gpudra.run_context import RunContext

if TYPE_CHECKING:
    from gpudra.preflight.run import PreflightRequest

EPILOG = (
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
    "  gpudra preflight --manifests apps/ platform/ web/     # several paths\n"
    "  gpudra preflight --skip CLUSTER013,CLUSTER014 --fail-on warn")

_HOST_ROOT = typer.Option("/", "--host-root", metavar="DIR",
                          help="--node: where the host's filesystem is mounted.")
_MANIFESTS = typer.Option([], "--manifests", metavar="PATH",
                          help="Check a manifest tree (repeatable); no cluster.")
_REQUIRE_MIGRATED = typer.Option(False, "--require-migrated",
                                 help="--manifests: fail while a workload still requests "
                                      "device-plugin GPUs.")
_SKIP = typer.Option([], "--skip", metavar="CHECK_ID",
                     help="Run but do not count a check (repeatable, comma-separated, 'all').")
_FAIL_ON = typer.Option(OutcomeWord.FAIL, "--fail-on", case_sensitive=False,
                        help="Lowest outcome that makes the exit code 1 (error and warning, as "
                             "audit says: fail and warn).")


@app.command(short_help="Is the cluster, a node or a manifest tree ready for DRA?",
             epilog=EPILOG)
@guarded
def preflight(
    paths: Optional[list[str]] = typer.Argument(
        None, metavar="[PATH]...",
        help="More paths for --manifests, as audit, convert and plan take them: "
             "`--manifests a b c`."),
    node: bool = typer.Option(False, "--node", help="Check this node instead of the cluster."),
    host_root: str = _HOST_ROOT,
    manifests: list[str] = _MANIFESTS,
    target_version: Optional[str] = target_version_option(
        "Judge against this Kubernetes release (plan an upgrade).", default=None),
    require_migrated: bool = _REQUIRE_MIGRATED,
    skip: list[str] = _SKIP,
    fail_on: OutcomeWord = _FAIL_ON,
    output: list[str] = outcome_targets_option(),
    config: Optional[Path] = config_option(),
    strict: bool = strict_option("--manifests: inline gpudra.io/ignore annotations "
                                 "suppress nothing (waivers still apply)."),
    baseline: Optional[Path] = baseline_option("--manifests: findings FILE holds (`gpudra "
                                               "audit --write-baseline`) do not count."),
    quiet: bool = quiet_option(),
    kubeconfig: Optional[str] = kubeconfig_option(),
    context: Optional[str] = context_option(),
    request_timeout: Optional[str] = request_timeout_option(),
) -> ExitCode:
    """Is the cluster (or this node, or a manifest tree) ready for DRA?

    One line per check: pass, warn, fail or unavailable (a check that cannot run says why,
    never pass), with the reason and the remediation; `gpudra checks` lists every check.
    """
    from gpudra.preflight.check_records import Tier
    from gpudra.preflight.run import as_report, run_preflight

    if paths and not manifests:
        raise UsageError(f"unexpected argument {paths[0]!r}: paths go with --manifests "
                         f"(gpudra preflight --manifests {' '.join(paths)})")
    request = _request(
        node=node, host_root=host_root, manifests=(*manifests, *(paths or ())),
        target_version=target_version, require_migrated=require_migrated, skip=tuple(skip),
        fail_on=fail_on, config=config, strict=strict, baseline=baseline,
        connection=Connection(kubeconfig=kubeconfig, context=context,
                              request_timeout=request_timeout))
    with ListProgress(quiet or request.tier is not Tier.CLUSTER) as on_page:
        result = run_preflight(request, on_page=on_page)
    write_outcomes(given(output), as_report(result, request.fail_on))
    report_errors(result.errors)
    return result.exit_code(request.fail_on)


def _request(*, node: bool, host_root: str, manifests: tuple[str, ...],
             target_version: Optional[str], require_migrated: bool, skip: tuple[str, ...],
             fail_on: OutcomeWord, config: Optional[Path], strict: bool,
             baseline: Optional[Path], connection: Connection) -> PreflightRequest:
    """The command line as a gpudra.preflight.run.PreflightRequest; usage errors first."""
    from gpudra.preflight.check_records import Tier
    from gpudra.preflight.run import PreflightRequest, fail_on_level

    if node and manifests:
        raise UsageError("choose one of --node and --manifests")
    if (node or manifests) and connection.given:
        raise UsageError("--kubeconfig, --context and --request-timeout are for the "
                         "cluster tier")
    if (strict or baseline) and not manifests:
        raise UsageError("--strict and --baseline go with --manifests")
    tier = Tier.NODE if node else Tier.MANIFESTS if manifests else Tier.CLUSTER
    level = fail_on_level(fail_on.value)
    cfg = load_cfg(manifests, config, strict)
    cluster = connection.cluster_options() if tier is Tier.CLUSTER else None
    known = load_baseline(baseline)
    target = TargetVersion.parse(target_version) if target_version is not None else None
    return PreflightRequest(RunContext(target, cfg, cluster, today=date.today()), tier=tier, skip=skip,
                            fail_on=level, manifests=manifests,
                            require_migrated=require_migrated, host_root=host_root,
                            baseline=known)
