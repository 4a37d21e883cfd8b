"""Report formats for commands whose results are verdicts: preflight checks, plan and verify
workloads.

Each verdict is an `Outcome` (pass, warn, fail, unavailable), with what was found, what to do
and where. An `OutcomeReport` holds them, the inputs that could not be read, and a summary;
every format here renders any OutcomeReport, so preflight, plan and verify share table, JSON,
JUnit, Markdown, GitHub and HTML output. What a command says beside its verdicts is a typed
field the one JSON renderer knows: verify's workload facts (`Outcome.workload`) and its gate
(`OutcomeReport.gate`, `.decommission`), plan's own report (`OutcomeReport.plan_report`,
whose JSON is plan's contract). Which outcomes fail the run is the command's --fail-on
(`OutcomeReport.fail_on`, the one mechanism audit uses too), so the exit code and the report
never disagree.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gpudra.results.json_value import JsonObject
from gpudra.results.diagnostic import Detail, Diagnostic, Level
from gpudra.results.model import ClusterRead, FailOn, InputError
from gpudra.results.outcome import GateVerdict, Outcome, SummaryValue, WorkloadFacts
from gpudra.k8s.objects import plural
from gpudra.printable import escape_text
from gpudra.report import json_text
from gpudra.report.formats import RenderOptions
from gpudra.report.json_report import error_data
from gpudra.report.verdicts import STATUSES, repeats
from gpudra import __version__
from gpudra.report.markdown import escape_cell
from gpudra.report.github import COMMAND, annotation, command, escape_data


class PlanDocument(Protocol):
    """A report whose JSON is a contract of its own: plan's (gpudra.plan.report.PlanReport,
    docs/plan.md), which sits on a floor above this one."""

    def to_json(self) -> JsonObject: ...


@dataclass(frozen=True)
class OutcomeReport:
    tool: str                     # "preflight", "plan", "verify"
    item_key: str                 # the JSON key of the outcomes: "checks", "workloads"
    outcomes: tuple[Outcome, ...]
    errors: tuple[InputError, ...]
    summary: Mapping[str, SummaryValue]  # `.summary` of the JSON
    fail_on: FailOn               # which outcomes fail the run: the command's --fail-on
    headline: str = ""
    # verify's decommission gate: listed after the outcomes by every format but JSON, whose
    # `.decommission` it is
    gate: GateVerdict | None = None
    # plan's report: -o json prints its own contract (docs/plan.md) instead of the outcomes.
    # Its field name is one gpudra.printable.escaped keeps as it is: only -o json prints it.
    plan_report: PlanDocument | None = None
    cluster: ClusterRead | None = None  # a live run: the cluster read and when

    @property
    def listed(self) -> tuple[Outcome, ...]:
        """Every verdict the human formats list: the outcomes, then the gate's."""
        return self.outcomes if self.gate is None else (*self.outcomes, self.gate.outcome)

    def failing(self, outcome: Outcome) -> bool:
        """Does this outcome fail the run? The same test the command's exit code makes, so
        the report and the exit code never disagree."""
        return not outcome.skipped and self.fail_on.triggered_by(outcome.level)

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for outcome in self.listed:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return counts


_COLOUR = {"fail": "bold red", "warn": "yellow", "unavailable": "magenta", "pass": "green"}


def shown(detail: Detail) -> str:
    """A detail as the text formats print it: `file:line text`. The text formats get their
    data escaped (gpudra.report.formats.render_with) but for `file` fields, so its file is
    escaped here, as in the rest of the line."""
    return escape_text(str(detail))


def _counts_text(report: OutcomeReport) -> str:
    counts = report.counts()
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing checked"


def render_table(report: OutcomeReport, options: RenderOptions) -> str:
    from rich.text import Text

    from gpudra.report.layout import Paragraph, Row, render_rows
    from gpudra.report.table import console_for

    buffer = io.StringIO()
    console = console_for(buffer, options.color, options.width)
    if report.cluster is not None:
        console.print(Text(report.cluster.describe(), style="dim"))
        console.print()
    rows = []
    for o in report.listed:
        status = o.status + (" (skipped)" if o.skipped else "")
        text = [Paragraph(_headline(o))]
        for line in map(shown, o.details):
            if repeats(line, o.message):
                continue  # said in the message already (the JSON keeps every detail)
            text.append(Paragraph(f"  {line}", "dim"))
        if o.remediation and o.status != "pass":
            text.append(Paragraph(f"  → {o.remediation}", "cyan"))
        rows.append(Row((Text(status, style=_COLOUR.get(o.status, "")), Text(o.id)),
                        tuple(text)))
    # Wrapped between words, never inside a name or an expression, never cut: users copy it.
    for row in render_rows(rows, options.width):
        console.print(row, no_wrap=True, overflow="ignore", crop=False)
    if report.errors:
        console.print()
        console.print(Text("Inputs that could not be read", style="bold red"))
        for e in report.errors:
            console.print(Text(f"  {e.where}: {e.message}"))
    console.print()
    console.print(Text(f"{report.headline}: {_counts_text(report)}".lstrip(": "),
                       style="bold"))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _headline(o: Outcome) -> str:
    """`title [subject]: message`, or the message alone where it says what the title says."""
    subject = f" [{o.subject}]" if o.subject else ""
    if not subject and o.message.lower().startswith(o.title.lower().rstrip(".")):
        return o.message
    return f"{o.title}{subject}: {o.message}"


def outcome_data(o: Outcome, key: str = "id",
                 detail_text: Callable[[Detail], str] = str) -> dict[str, Any]:
    data: dict[str, Any] = {key: o.id, "title": o.title, "outcome": o.status,
                            "message": o.message, "remediation": o.remediation,
                            "subject": o.subject,
                            "details": [detail_text(d) for d in o.details],
                            "skipped": o.skipped}
    if o.file is not None:
        data.update(file=o.file, line=o.line)
    if o.workload is not None:
        data.update(workload_data(o.workload))
    return data


def workload_data(w: WorkloadFacts) -> dict[str, Any]:
    """verify's facts of a workload, the fields of its `.workloads[]` entry after the verdict's."""
    return {"state": w.state, "pods": w.pods, "pods_ready": w.pods_ready, "claims": w.claims,
            "claims_allocated": w.claims_allocated, "kind": w.kind, "name": w.name,
            "namespace": w.namespace, "moved_by_wave": w.moved_by_wave}


def gate_data(gate: GateVerdict) -> dict[str, Any]:
    """verify's `.decommission`."""
    return {"safe": gate.safe, "judged": gate.judged, "blockers": list(gate.blockers),
            "warnings": list(gate.warnings), "outcome": gate.outcome.status,
            "message": gate.outcome.message, "remediation": gate.outcome.remediation}


def as_data(report: OutcomeReport, *, every_outcome: bool = False,
            detail_text: Callable[[Detail], str] = str) -> dict[str, Any]:
    """The JSON report; `every_outcome` lists the gate among the items too (for HTML, which
    shows it in the list, its details as the text formats print them: `shown`)."""
    listed = report.listed if every_outcome else report.outcomes
    return {report.item_key: [outcome_data(o, detail_text=detail_text) for o in listed],
            **({"decommission": gate_data(report.gate)} if report.gate is not None else {}),
            **({"cluster": report.cluster.as_data()} if report.cluster is not None else {}),
            "errors": [error_data(e) for e in report.errors],
            "summary": dict(report.summary)}


def render_json(report: OutcomeReport, options: RenderOptions) -> str:
    """The one JSON renderer of verdict reports; plan's is its report's own contract."""
    if report.plan_report is None:
        return json_text.dumps(as_data(report))
    data = {**report.plan_report.to_json(), "errors": [error_data(e) for e in report.errors]}
    if report.cluster is not None:
        data["cluster"] = report.cluster.as_data()
    return json_text.dumps(data)


def render_html(report: OutcomeReport, options: RenderOptions) -> str:
    from gpudra.report.html import render_outcomes

    return render_outcomes(as_data(report, every_outcome=True, detail_text=shown), report.tool,
                           report.item_key,
                           tool_version=__version__)


def render_junit(report: OutcomeReport, options: RenderOptions) -> str:
    """One test case per outcome: failing ones fail, warnings and unavailable checks that do
    not fail the run are skipped with their message (visible in CI test views), passes pass;
    an `inputs` case errors when something could not be read."""
    from gpudra.report.junit import Case, Mark, cluster_properties, suite_text, verdict_case

    properties = [(name, str(value)) for name, value in report.summary.items()
                  if isinstance(value, (str, int, float, bool))]
    if report.cluster is not None:
        properties += cluster_properties(report.cluster)
    classname = f"gpudra.{report.tool}"
    cases = [verdict_case(classname, o.title, o.diagnostic, report.failing(o), shown)
             for o in report.listed]
    inputs = None
    if report.errors:
        inputs = Mark("error", plural(len(report.errors), "unreadable input"), "InputError",
                      "\n".join(f"{e.where}: {e.message}" for e in report.errors))
    cases.append(Case(classname, "inputs", inputs))
    return suite_text(f"gpudra-{report.tool}", properties, cases)


def render_markdown(report: OutcomeReport, options: RenderOptions) -> str:

    lines = [f"## gpudra {report.tool}: {_counts_text(report)}", ""]
    if report.cluster is not None:
        lines += [escape_cell(report.cluster.describe()).replace("cluster:", "Cluster:", 1), ""]
    if report.headline:
        lines += [report.headline, ""]
    lines += ["| Outcome | Check | Subject | Message | Fix |", "| --- | --- | --- | --- | --- |"]
    for o in report.listed:
        cells = [o.status + (" (skipped)" if o.skipped else ""), f"{o.id} {o.title}",
                 o.subject or "", "\n".join([o.message, *map(shown, o.details)]),
                 o.remediation if o.status != "pass" and o.remediation else ""]
        lines.append("| " + " | ".join(escape_cell(c) for c in cells) + " |")
    if report.errors:
        lines += ["", f"### Inputs that could not be read ({len(report.errors)})", "",
                  "| Input | Error |", "| --- | --- |"]
        lines += [f"| {escape_cell(e.where)} | {escape_cell(e.message)} |" for e in report.errors]
    return "\n".join(lines) + "\n"


def render_github(report: OutcomeReport, options: RenderOptions) -> str:

    lines = []
    for o in report.listed:
        if o.level is Level.PASS:
            continue
        d = o.diagnostic
        name = "error" if report.failing(o) else COMMAND[d.level]
        fix = f" (fix: {d.remediation})" if d.remediation else ""
        title = f"{d.id} {o.title}"
        # Details located on a file's line (`apps/job.yaml:12 GPU101: ...`) are diagnostics of
        # their own there, annotations on that line of the pull request; the check's summary
        # is then said by them. Their files are escaped as the rest of the text formats' text.
        located = [Diagnostic(d.id, d.level, x.text, x.location) for x in d.details
                   if x.location is not None and x.location.file is not None
                   and x.location.line is not None] if d.location is None else []
        lines += [annotation(name, x, title, fix, escape_text) for x in located]
        if not located:
            lines.append(annotation(name, d, title, fix))
    lines += [command("error", {"title": f"gpudra {report.tool} input error"},
                      f"{e.where}: {e.message}") for e in report.errors]
    if report.cluster is not None:
        lines.append(escape_data(f"gpudra {report.tool}: {report.cluster.describe()}"))
    lines.append(f"gpudra {report.tool}: {_counts_text(report)}")
    return "\n".join(lines) + "\n"
