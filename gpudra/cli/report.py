"""`gpudra report merge`: the JSON reports of many clusters as one."""

from __future__ import annotations

import typer

from gpudra.cli.options import SeverityWord
from gpudra.cli.output import given, merge_targets_option, write_merged
from gpudra.cli.root import app, guarded
from gpudra.results.model import ExitCode, FailOn

report_app = typer.Typer(name="report", no_args_is_help=True,
                         help="Work with JSON reports: merge the reports of many clusters.")
app.add_typer(report_app)

EPILOG = (
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
    "  gpudra report merge a/report.json b/report.json --name a/report.json=eu-west")


@report_app.command("merge", short_help="Merge JSON reports of many clusters into one.",
                    epilog=EPILOG)
@guarded
def report_merge(
    reports: list[str] = typer.Argument(..., metavar="REPORT.json...",
                                        help="JSON reports to merge."),
    output: list[str] = merge_targets_option(),
    names: list[str] = typer.Option([], "--name", metavar="FILE=NAME",
                                    help="Name the cluster of a single-cluster report "
                                         "(repeatable)."),
    fail_on: SeverityWord = typer.Option(SeverityWord.WARNING, "--fail-on",
                                         case_sensitive=False,
                                         help="Lowest severity that makes the exit code 1."),
) -> ExitCode:
    """Merge the JSON reports of many clusters: one summary (their sum), one row per cluster,
    every finding and workload named by its cluster."""
    from gpudra.report.merge import parse_names
    from gpudra.report.merge_run import MergeRequest, run_merge

    request = MergeRequest(tuple(reports), parse_names(names), FailOn.parse(fail_on.value))
    result = run_merge(request)
    write_merged(given(output), result.merged)
    return result.exit_code()
