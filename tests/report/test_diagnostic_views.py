"""One diagnostic record (gpudra.results.diagnostic.Diagnostic) that an audit finding, a
preflight check's result and a plan or verify verdict are views of, and the formats every
command shares (GitHub annotations, JUnit lines, SARIF results) rendered from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpudra.preflight.check_records import CheckOutcome, CheckResult
from gpudra.report import RenderOptions
from gpudra.report.github import annotation
from gpudra.results.diagnostic import Detail, Diagnostic, Level, Location
from gpudra.results.model import Finding, Severity
from gpudra.results.outcome import Outcome

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# (the finding's fields beyond rule, severity and message, the diagnostic's place and subject)
FINDING_CASES: dict[str, tuple[dict[str, Any], Location | None, str | None]] = {
    "a manifest's finding: its file, line and path, the object": (
        {"file": "apps/job.yaml", "line": 12, "kind": "Job", "name": "train", "namespace": "ml",
         "path": "spec.template.spec.containers[0].resources.limits"},
        Location("apps/job.yaml", 12, "spec.template.spec.containers[0].resources.limits"),
        "ml/Job/train"),
    "a live object's finding: no file, the path in the object": (
        {"file": None, "line": None, "kind": "Deployment", "name": "serve", "namespace": "prod",
         "path": "spec.template.spec", "source": "cluster"},
        Location(None, None, "spec.template.spec"), "prod/Deployment/serve"),
    "a finding of a multi-cluster audit names its cluster first": (
        {"file": None, "line": None, "kind": "Node", "name": "gpu-1", "context": "east",
         "source": "cluster"},
        None, "east/Node/gpu-1"),
    "a template's finding: a file, no object": (
        {"file": "chart/values.yaml", "line": 3, "template": "chart"},
        Location("chart/values.yaml", 3), None),
}


@pytest.mark.parametrize("name", list(FINDING_CASES))
def test_a_finding_is_a_view_of_the_diagnostic(name: str) -> None:
    fields, place, subject = FINDING_CASES[name]
    finding = Finding("GPU101", Severity.WARNING, "requests 1 GPU", hint="gpudra convert",
                      **fields)
    assert finding.diagnostic == Diagnostic("GPU101", Level.WARN, "requests 1 GPU", place,
                                            subject, "gpudra convert")


# A severity is a level of the one scale, whatever the record.
@pytest.mark.parametrize(("severity", "level"), [(Severity.ERROR, Level.FAIL),
                                                 (Severity.WARNING, Level.WARN),
                                                 (Severity.INFO, Level.INFO)])
def test_a_findings_level_is_its_severitys(severity: Severity, level: Level) -> None:
    assert Finding("R", severity, "m", None, None).diagnostic.level is level


DETAIL = Detail("GPU101: requests 1 GPU", Location("apps/job.yaml", 12))
# (the verdict, its diagnostic)
OUTCOME_CASES = {
    "a check's result, its details located": (
        CheckResult("MANIFEST003", "No workload requests device-plugin GPUs", CheckOutcome.WARN,
                    "1 request remains", "gpudra convert", None, (DETAIL,)).as_outcome(),
        Diagnostic("MANIFEST003", Level.WARN, "1 request remains", None, None, "gpudra convert",
                   (DETAIL,))),
    "a plan verdict: the workload's file and line": (
        Outcome("train", "Job", Level.FAIL, "0/2 pods placed", "add nodes", "ml/Job/train",
                file="apps/job.yaml", line=4),
        Diagnostic("train", Level.FAIL, "0/2 pods placed", Location("apps/job.yaml", 4),
                   "ml/Job/train", "add nodes")),
    "a verify verdict: a live workload, no file": (
        Outcome("serve", "Deployment", Level.PASS, "2/2 pods ready", None, "prod/Deployment/serve"),
        Diagnostic("serve", Level.PASS, "2/2 pods ready", None, "prod/Deployment/serve")),
}


@pytest.mark.parametrize("name", list(OUTCOME_CASES))
def test_a_verdict_is_a_view_of_the_diagnostic(name: str) -> None:
    outcome, diagnostic = OUTCOME_CASES[name]
    assert outcome.diagnostic == diagnostic


# (the diagnostic, the suffix, how its file is named, the annotation)
ANNOTATION_CASES = {
    "subject, message, suffix, on its line": (
        Diagnostic("GPU101", Level.WARN, "requests 1 GPU", Location("apps/job.yaml", 12),
                   "ml/Job/train"), " (template x)", str,
        "::warning file=apps/job.yaml,line=12,title=T::ml/Job/train: requests 1 GPU (template x)"),
    "no file: on the run summary, and no line": (
        Diagnostic("GPU501", Level.FAIL, "no driver", Location(None, 3), None), "", str,
        "::error title=T::no driver"),
    "the file as the runner's repository names it": (
        Diagnostic("GPU101", Level.INFO, "m", Location("./a.yaml", 1)), "",
        lambda f: f.removeprefix("./"), "::notice file=a.yaml,line=1,title=T::m"),
    "a line break in the message cannot start a command": (
        Diagnostic("GPU101", Level.WARN, "a\n::error::b", None), "", str,
        "::warning title=T::a%0A::error::b"),
}


@pytest.mark.parametrize("name", list(ANNOTATION_CASES))
def test_one_annotation_of_a_diagnostic(name: str) -> None:
    diagnostic, suffix, place, wanted = ANNOTATION_CASES[name]
    name_of = {Level.FAIL: "error", Level.WARN: "warning", Level.INFO: "notice"}
    assert annotation(name_of[diagnostic.level], diagnostic, "T", suffix, place) == wanted


@pytest.fixture(scope="module")
def examples_report() -> Any:
    from gpudra.audit.engine import AuditRequest, run_audit

    report = run_audit(AuditRequest([str(EXAMPLES)]))
    assert report.findings
    return report


def test_sarif_results_are_the_findings_diagnostics(examples_report: Any) -> None:
    from gpudra.report.sarif import sarif_log

    results = sarif_log(examples_report, RenderOptions())["runs"][0]["results"]
    level = {Level.FAIL: "error", Level.WARN: "warning", Level.INFO: "note"}
    for finding, result in zip(examples_report.findings, results, strict=True):
        d = finding.diagnostic
        assert (result["ruleId"], result["level"], result["message"]["text"]) == \
            (d.id, level[d.level], d.message)
        region = result["locations"][0]["physicalLocation"].get("region", {})
        assert region.get("startLine") == (d.location.line if d.location else None)


def test_github_and_junit_say_each_findings_diagnostic(examples_report: Any) -> None:
    from gpudra.report import github, junit

    annotations = github.render(examples_report, RenderOptions()).splitlines()
    xml = junit.render(examples_report, RenderOptions())
    for finding, line in zip(examples_report.findings, annotations):
        d = finding.diagnostic
        assert line.split("::", 2)[2].startswith(f"{d.subject}: {d.message}" if d.subject
                                                  else d.message)
        assert d.location is not None and f"line={d.location.line}," in line
        assert f"{d.location.file}:{d.location.line}: " in xml


# (the verdict's diagnostic, fails the run, the case's mark: tag, message, type)
CASE_CASES = {
    "a failing verdict fails, typed by its level": (
        Diagnostic("CLUSTER005", Level.FAIL, "no slices", None, "gpu-1", "restart it"), True,
        ("failure", "no slices", "fail")),
    "a warning below --fail-on is skipped with its message": (
        Diagnostic("MANIFEST003", Level.WARN, "1 remains"), False,
        ("skipped", "warn: 1 remains", None)),
    "a failure below --fail-on (never) is skipped too": (
        Diagnostic("CLUSTER005", Level.FAIL, "no slices"), False,
        ("skipped", "fail: no slices", None)),
    "a pass passes": (Diagnostic("CLUSTER001", Level.PASS, "served"), False, None),
}


@pytest.mark.parametrize("name", list(CASE_CASES))
def test_a_verdicts_junit_case_is_its_diagnostics(name: str) -> None:
    from gpudra.report.junit import verdict_case

    diagnostic, failing, mark = CASE_CASES[name]
    case = verdict_case("gpudra.preflight", "Title", diagnostic, failing)
    subject = f" [{diagnostic.subject}]" if diagnostic.subject else ""
    assert case.name == f"{diagnostic.id} Title{subject}"
    assert (None if case.mark is None else
            (case.mark.tag, case.mark.message, case.mark.type)) == mark
    if case.mark is not None:
        fix = [f"fix: {diagnostic.remediation}"] if diagnostic.remediation else []
        assert case.mark.text == "\n".join([diagnostic.message, *fix])
