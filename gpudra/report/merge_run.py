"""`gpudra report merge`'s use case: the reports' paths, the names given to them and the
--fail-on threshold in; the merged report and its exit code out. Nothing here prints: the CLI
renders the merged report to its -o targets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudra.results.json_value import JsonObject
from gpudra.errors import UsageError
from gpudra.report.merge import exit_code, load_reports, merge_reports
from gpudra.results.model import ExitCode, FailOn


@dataclass(frozen=True)
class MergeRequest:
    reports: tuple[str, ...]  # the JSON reports' paths, in the order given
    # --name FILE=NAME, parsed (gpudra.report.merge.parse_names): each FILE one of `reports`
    names: Mapping[str, str] = field(default_factory=dict)
    fail_on: FailOn = FailOn.WARNING


@dataclass(frozen=True)
class MergeResult:
    merged: JsonObject  # the merged report's data (schema: report-schema.json)
    fail_on: FailOn

    def exit_code(self) -> ExitCode:
        return exit_code(self.merged, self.fail_on)


def run_merge(request: MergeRequest) -> MergeResult:
    """Read, validate and merge every report. A UsageError for a --name of no REPORT given or
    two clusters of one name; an UnreadableInputError naming every report refused."""
    unknown = sorted(set(request.names) - set(request.reports))
    if unknown:
        raise UsageError(f"--name {unknown[0]}=...: no such REPORT among the arguments")
    merged = merge_reports(load_reports(request.reports, request.names))
    return MergeResult(merged, request.fail_on)
