"""The one JUnit writer (gpudra.report.junit.suite_text): every command's -o junit is valid
XML whatever its inputs hold, and counts what its cases carry."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from gpudra.results.model import FailOn, InputError, Level
from gpudra.report import RenderOptions
from gpudra.report.junit import Case, Mark, suite_text
from gpudra.report.outcomes import OutcomeReport, render_junit
from gpudra.results.outcome import Outcome

# Control characters that XML 1.0 cannot carry even escaped; a manifest or a cluster can.
HOSTILE = ("\x1b[31m", "\x00", "\x08", "\ufffe")


@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t) for t in HOSTILE])
def test_a_verdict_report_with_control_characters_is_xml(text: str) -> None:
    outcome = Outcome("NODE001", "Title", Level.FAIL, f"message {text}", f"fix {text}",
                      f"node-{text}", (f"detail {text}",))
    report = OutcomeReport("preflight", "checks", (outcome,),
                           (InputError(f"file{text}.yaml", f"bad {text}"),), {"tier": "node"},
                           FailOn.ERROR)
    suite = ET.fromstring(render_junit(report, RenderOptions()).encode("utf-8"))
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "1")
    assert "\ufffd" in suite.find("testcase/failure").text


@pytest.mark.parametrize(("marks", "counts"), [
    ((None, None), ("2", "0", "0", "0")),
    ((Mark("failure", "m", "fail", "t"), Mark("skipped", "s")), ("2", "1", "0", "1")),
    ((Mark("error", "e", "InputError"), Mark("failure", "m")), ("2", "1", "1", "0")),
])
def test_the_suite_counts_its_cases(marks: tuple[Mark | None, ...],
                                    counts: tuple[str, ...]) -> None:
    text = suite_text("s", [("p", "v")], [Case("c", f"n{i}", m) for i, m in enumerate(marks)])
    suite = ET.fromstring(text.encode("utf-8"))
    assert tuple(suite.get(a) for a in ("tests", "failures", "errors", "skipped")) == counts
    assert [p.get("name") for p in suite.iter("property")] == ["p"]
