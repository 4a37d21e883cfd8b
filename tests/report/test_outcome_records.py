"""The verdict records as data: a detail's place is a typed Location on the record, which
the formats that point at lines read (GitHub annotations), and every format prints the detail
as `file:line text`, escaped where the format is text."""

from __future__ import annotations

import json

import pytest

from gpudra.report.formats import Kind, RenderOptions, render_with
from gpudra.report.outcomes import OutcomeReport, render_github, render_json, render_table
from gpudra.results.diagnostic import Detail, Location, as_details
from gpudra.results.model import FailOn, Level
from gpudra.results.outcome import GateVerdict, Outcome, WorkloadFacts


def _report(*details: Detail, file: str | None = None) -> OutcomeReport:
    outcome = Outcome("MANIFEST003", "No workload requests device-plugin GPUs", Level.WARN,
                      "2 device-plugin GPU requests remain", "gpudra convert <path>", None,
                      details, file=file)
    return OutcomeReport("preflight", "checks", (outcome,), (), {}, FailOn.ERROR, "gpudra")


AT = Location("apps/job.yaml", 12, "spec.template.spec.containers[0].resources.limits")
# (the details, the annotations GitHub gets: (file property, line property, message))
GITHUB_CASES = {
    "a located detail is an annotation on its line": (
        (Detail("GPU101: container 'c' requests 1 GPU", AT),),
        [("apps/job.yaml", "12", "GPU101: container 'c' requests 1 GPU (fix: gpudra convert <path>)")]),
    "each located detail is one, the unlocated ones are said by them": (
        (Detail("GPU101: a", AT), Detail("not read: x.yaml: bad"),
         Detail("GPU102: b", Location("apps/b.yaml", 3))),
        [("apps/job.yaml", "12", "GPU101: a (fix: gpudra convert <path>)"),
         ("apps/b.yaml", "3", "GPU102: b (fix: gpudra convert <path>)")]),
    # The place is data, not text parsed back: a file name with a blank or a colon is a place too
    # (the regex this replaced left both on the run summary).
    "a file name with a blank": (
        (Detail("GPU101: a", Location("my apps/job.yaml", 7)),),
        [("my apps/job.yaml", "7", "GPU101: a (fix: gpudra convert <path>)")]),
    "a file name with a colon": (
        (Detail("GPU101: a", Location("c:d/job.yaml", 7)),),
        [("c%3Ad/job.yaml", "7", "GPU101: a (fix: gpudra convert <path>)")]),
    "a file without a line is no line annotation: the check's own is": (
        (Detail("GPU701: a", Location("chart/values.yaml")),),
        [(None, None, "2 device-plugin GPU requests remain (fix: gpudra convert <path>)")]),
    "text that looks like a place is not one": (
        (Detail("apps/job.yaml:12 GPU101: a"),),
        [(None, None, "2 device-plugin GPU requests remain (fix: gpudra convert <path>)")]),
}


def _annotations(text: str) -> list[tuple[str | None, str | None, str]]:
    found = []
    for line in text.splitlines():
        if not line.startswith("::"):
            continue
        head, message = line[2:].split("::", 1)
        props = dict(p.split("=", 1) for p in head.split(" ", 1)[1].split(","))
        found.append((props.get("file"), props.get("line"), message))
    return found


@pytest.mark.parametrize("name", list(GITHUB_CASES))
def test_github_annotates_located_details(name: str) -> None:
    details, wanted = GITHUB_CASES[name]
    text = render_with(render_github, Kind.OUTCOMES, "github", _report(*details))
    assert _annotations(text) == wanted


def test_an_outcome_with_a_file_is_annotated_there_not_on_its_details() -> None:
    text = render_github(_report(Detail("GPU101: a", AT), file="plan/job.yaml"), RenderOptions())
    assert [(f, m.split(" (fix")[0]) for f, _, m in _annotations(text)] == \
        [("plan/job.yaml", "2 device-plugin GPU requests remain")]


# (a detail, how the JSON lists it, how the text formats print it)
SHOWN_CASES = [
    (Detail("GPU101: one GPU", AT), "apps/job.yaml:12 GPU101: one GPU", "apps/job.yaml:12 GPU101: one GPU"),
    (Detail("GPU701: two GPUs", Location("chart/values.yaml")), "chart/values.yaml GPU701: two GPUs",
     "chart/values.yaml GPU701: two GPUs"),
    (Detail("labels: x1, y2"), "labels: x1, y2", "labels: x1, y2"),
    # a hostile file name is escaped in the text formats (as the rest of the line), kept in JSON
    (Detail("GPU101: one GPU\x1b[2J", Location("x\x1b[2J.yaml", 1)), "x\x1b[2J.yaml:1 GPU101: one GPU\x1b[2J",
     "x\\x1b[2J.yaml:1 GPU101: one GPU\\x1b[2J"),
]


@pytest.mark.parametrize(("detail", "in_json", "in_text"), SHOWN_CASES)
def test_every_format_prints_a_detail_as_file_line_text(detail: Detail, in_json: str,
                                                        in_text: str) -> None:
    report = _report(detail)
    data = json.loads(render_with(render_json, Kind.OUTCOMES, "json", report))
    assert data["checks"][0]["details"] == [in_json]
    table = render_with(render_table, Kind.OUTCOMES, "table", report)
    assert f"  {in_text}" in table
    assert "\x1b" not in table


def test_as_details_keeps_details_and_wraps_text() -> None:
    kept = Detail("GPU101: a", AT)
    assert as_details(["text", kept]) == (Detail("text"), kept)
    assert str(kept) == "apps/job.yaml:12 GPU101: a" and str(AT) == "apps/job.yaml:12"


# -- what a command says beside its verdicts: typed records the one JSON renderer knows ---------

FACTS = WorkloadFacts("claims", 2, 1, 1, 1, "Job", "train", "ml", "wave-1/job.yaml")
WORKLOAD = Outcome("train", "Job", Level.WARN, "1/2 pods ready", "fix it", "ml/Job/train",
                   (Detail("pod train-0: Pending"),), workload=FACTS)
GATE = GateVerdict(Outcome("decommission", "Decommission gate", Level.FAIL, "not yet safe",
                           "clear each line", None, (Detail("node a holds GPUs"),)),
                   safe=False, judged=True, blockers=("node a holds GPUs",), warnings=())
VERIFY = OutcomeReport("verify", "workloads", (WORKLOAD,), (), {"workloads": 1},
                       FailOn.ERROR, "gpudra verify", gate=GATE)


def test_verify_json_has_each_workloads_facts_and_the_gate_apart() -> None:
    data = json.loads(render_json(VERIFY, RenderOptions()))
    assert list(data) == ["workloads", "decommission", "errors", "summary"]
    [entry] = data["workloads"]  # the gate is no workload
    assert list(entry) == ["id", "title", "outcome", "message", "remediation", "subject",
                           "details", "skipped", "state", "pods", "pods_ready", "claims",
                           "claims_allocated", "kind", "name", "namespace", "moved_by_wave"]
    assert (entry["state"], entry["pods_ready"], entry["moved_by_wave"]) == \
        ("claims", 1, "wave-1/job.yaml")
    assert data["decommission"] == {"safe": False, "judged": True,
                                    "blockers": ["node a holds GPUs"], "warnings": [],
                                    "outcome": "fail", "message": "not yet safe",
                                    "remediation": "clear each line"}


@pytest.mark.parametrize("fmt", ["table", "markdown", "junit", "github", "html"])
def test_every_other_format_lists_the_gate_after_the_workloads(fmt: str) -> None:
    from gpudra.cli.formats import render

    text = render(Kind.OUTCOMES, fmt, VERIFY)
    assert "not yet safe" in text and "1/2 pods ready" in text
    if fmt != "html":  # which lists the most severe first
        assert text.index("1/2 pods ready") < text.index("not yet safe")
    assert VERIFY.counts()["fail"] == 1 and VERIFY.listed == (WORKLOAD, GATE.outcome)


class _Plan:
    """A plan report: its JSON is its own contract, built only for -o json."""

    def __init__(self) -> None:
        self.built = 0

    def to_json(self) -> dict[str, object]:
        self.built += 1
        return {"workloads": [{"name": "x\u202e"}], "summary": {"workloads": 1}}


def test_plan_json_is_its_reports_own_and_built_only_for_json() -> None:
    from gpudra.cli.formats import render
    from gpudra.results.model import ClusterRead

    plan = _Plan()
    read = ClusterRead("prod", "https://api:6443", "2026-12-07T13:04:27Z")
    report = OutcomeReport("plan", "workloads", (WORKLOAD,), (), {"workloads": 1},
                           FailOn.ERROR, "gpudra plan", plan_report=plan, cluster=read)
    for fmt in ("table", "markdown", "junit", "github", "html"):
        render(Kind.OUTCOMES, fmt, report)
    assert plan.built == 0  # nor walked by the escaping of the text formats
    data = json.loads(render(Kind.OUTCOMES, "json", report))
    assert plan.built == 1
    assert data == {"workloads": [{"name": "x\u202e"}], "summary": {"workloads": 1},
                    "errors": [], "cluster": read.as_data()}


def test_no_verdict_record_has_an_untyped_mapping() -> None:
    """The escape hatches are gone: every field of the verdict records is a typed value."""
    import dataclasses
    import typing

    from gpudra.report import outcomes
    from gpudra.results import outcome

    for record in (outcome.Outcome, outcome.GateVerdict, outcome.WorkloadFacts,
                   outcomes.OutcomeReport):
        hints = typing.get_type_hints(record, vars(outcome) | vars(outcomes))
        for field in dataclasses.fields(record):
            assert "Any" not in str(hints[field.name]), (record.__name__, field.name)
