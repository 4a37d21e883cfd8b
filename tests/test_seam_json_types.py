"""The seam records' JSON fields are typed (gpudra.results.json_value), so mypy checks what is
done with them: before, MergeResult.merged, GuardResult's and RbacResult's objects, the plan
report's to_json() and summary_json() were `dict[str, Any]`, and each misuse below passed
mypy (the summary_json one into OutcomeReport.summary, whose Mapping[str, SummaryValue] it
did not meet in any checked way). One mypy run over all the cases, with the project's
settings."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# case -> a body that misuses one record's JSON (each on its own line of the checked module)
MISUSES = {
    "merged is JSON, not Any": "(result: MergeResult) -> None:\n    result.merged['x'].upper()",
    "the guard's policy": "(result: GuardResult) -> None:\n    result.policy['kind'].upper()",
    "the guard's binding": "(result: GuardResult) -> None:\n    result.binding['kind'].upper()",
    "rbac's objects": "(result: RbacResult) -> None:\n    result.objects[0]['kind'].upper()",
    "the plan report's JSON": "(report: PlanReport) -> None:\n"
                              "    report.to_json()['workloads'].upper()",
    "the plan document's JSON": "(report: PlanDocument) -> None:\n"
                                "    report.to_json()['summary'].upper()",
    "the plan summary holds scalars": "(report: PlanReport) -> None:\n"
                                      "    lists: Mapping[str, list[int]] = "
                                      "report.summary_json()",
    "the plan stats are numbers": "(stats: PlanStats) -> None:\n"
                                  "    words: dict[str, str] = stats.to_json()",
}
HEADER = """\
from collections.abc import Mapping

from gpudra.guard.run import GuardResult
from gpudra.plan.report import PlanReport, PlanStats
from gpudra.rbac import RbacResult
from gpudra.report.merge_run import MergeResult
from gpudra.report.outcomes import PlanDocument
"""


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, int]]:
    """mypy's report on one module holding every case, and the line of each case's misuse."""
    from mypy import api

    folder = tmp_path_factory.mktemp("seam_types")
    lines = HEADER.splitlines()
    where: dict[str, int] = {}
    for number, (case, body) in enumerate(MISUSES.items()):
        lines += ["", "", f"def case_{number}{body.splitlines()[0]}"]
        lines += body.splitlines()[1:]
        where[case] = len(lines)
    (folder / "misuses.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stdout, stderr, _ = api.run([str(folder / "misuses.py"), "--config-file",
                                 str(ROOT / "pyproject.toml"), "--cache-dir",
                                 str(folder / "cache"), "--no-error-summary"])
    return stdout + stderr, where


@pytest.mark.parametrize("case", sorted(MISUSES))
def test_mypy_sees_the_misuse(case: str, reported: tuple[str, dict[str, int]]) -> None:
    report, where = reported
    assert f"misuses.py:{where[case]}: error:" in report, report
