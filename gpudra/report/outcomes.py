"""Report formats for commands whose results are verdicts: preflight checks, plan workloads.

Each verdict is an `Outcome` (pass, warn, fail, unavailable), with what was found, what to do
and where. An `OutcomeReport` holds them, the inputs that could not be read, and a summary;
every format here renders any OutcomeReport, so preflight and plan share table, JSON, JUnit,
Markdown, GitHub and HTML output. Which outcomes fail the run is the command's --fail-on
(`OutcomeReport.fail_on`, the one mechanism audit uses too), so the exit code and the report
never disagree.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.results.diagnostic import Detail
from gpudra.results.model import ClusterRead, FailOn, InputError
from gpudra.results.outcome import Outcome
from gpudra.k8s.objects import plural
from gpudra.printable import escape_text
from gpudra.report import json_text
from gpudra.report.formats import RenderOptions
from gpudra.report.json_report import error_data
from gpudra.report.verdicts import STATUSES, repeats


@dataclass(frozen=True)
class OutcomeReport:
    tool: str                     # "preflight", "plan"
    item_key: str                 # the JSON key of the outcomes: "checks", "workloads"
    outcomes: tuple[Outcome, ...]
    errors: tuple[InputError, ...]
    summary: Mapping[str, Any]
    fail_on: FailOn               # which outcomes fail the run: the command's --fail-on
    headline: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # more top-level JSON keys
    # A command whose JSON is a contract of its own (plan's, docs/plan.md) says it here;
    # -o json then prints it instead of the outcomes.
    own_json: Mapping[str, Any] | None = None
    # Outcomes every other format lists with the items, but whose JSON is a top-level key of
    # its own in `extra` (verify's gate is `.decommission`, not a workload): their ids.
    apart: frozenset[str] = frozenset()
    cluster: ClusterRead | None = None  # a live run: the cluster read and when

    def failing(self, outcome: Outcome) -> bool:
        """Does this outcome fail the run? The same test the command's exit code makes, so
        the report and the exit code never disagree."""
        return not outcome.skipped and self.fail_on.triggered_by(outcome.level)

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for outcome in self.outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return counts


_COLOUR = {"fail": "bold red", "warn": "yellow", "unavailable": "magenta", "pass": "green"}
_GITHUB = {"fail": "error", "warn": "warning", "unavailable": "notice"}


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
    for o in report.outcomes:
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
    for line in render_rows(rows, options.width):
        console.print(line, no_wrap=True, overflow="ignore", crop=False)
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
    data.update(o.extra)
    return data


def as_data(report: OutcomeReport, *, every_outcome: bool = False,
            detail_text: Callable[[Detail], str] = str) -> dict[str, Any]:
    """The JSON report; `every_outcome` keeps those `apart` among the items too (for HTML,
    which shows them in the list, its details as the text formats print them: `shown`)."""
    return {report.item_key: [outcome_data(o, detail_text=detail_text) for o in report.outcomes
                              if every_outcome or o.id not in report.apart],
            **report.extra,
            **({"cluster": report.cluster.as_data()} if report.cluster is not None else {}),
            "errors": [error_data(e) for e in report.errors],
            "summary": dict(report.summary)}


def render_json(report: OutcomeReport, options: RenderOptions) -> str:
    data = as_data(report) if report.own_json is None else report.own_json
    if report.own_json is not None and report.cluster is not None:
        data = {**data, "cluster": report.cluster.as_data()}
    return json_text.dumps(data)


def render_html(report: OutcomeReport, options: RenderOptions) -> str:
    from gpudra import __version__
    from gpudra.report.html import render_outcomes

    return render_outcomes(as_data(report, every_outcome=True, detail_text=shown), report.tool,
                           report.item_key,
                           tool_version=__version__)


def render_junit(report: OutcomeReport, options: RenderOptions) -> str:
    """One test case per outcome: failing ones fail, warnings and unavailable checks that do
    not fail the run are skipped with their message (visible in CI test views), passes pass;
    an `inputs` case errors when something could not be read."""
    from gpudra.report.junit import Case, Mark, cluster_properties, suite_text

    properties = [(name, str(value)) for name, value in report.summary.items()
                  if isinstance(value, (str, int, float, bool))]
    if report.cluster is not None:
        properties += cluster_properties(report.cluster)
    classname = f"gpudra.{report.tool}"
    cases = []
    for o in report.outcomes:
        name = f"{o.id} {o.title}" + (f" [{o.subject}]" if o.subject else "")
        text = "\n".join([o.message, *map(shown, o.details)] + ([f"fix: {o.remediation}"]
                                                     if o.remediation else []))
        mark = None
        if report.failing(o):
            mark = Mark("failure", o.message, o.status, text)
        elif o.status != "pass":
            mark = Mark("skipped", f"{o.status}: {o.message}", text=text)
        cases.append(Case(classname, name, mark))
    inputs = None
    if report.errors:
        inputs = Mark("error", plural(len(report.errors), "unreadable input"), "InputError",
                      "\n".join(f"{e.where}: {e.message}" for e in report.errors))
    cases.append(Case(classname, "inputs", inputs))
    return suite_text(f"gpudra-{report.tool}", properties, cases)


def render_markdown(report: OutcomeReport, options: RenderOptions) -> str:
    from gpudra.report.markdown import escape_cell

    lines = [f"## gpudra {report.tool}: {_counts_text(report)}", ""]
    if report.cluster is not None:
        lines += [escape_cell(report.cluster.describe()).replace("cluster:", "Cluster:", 1), ""]
    if report.headline:
        lines += [report.headline, ""]
    lines += ["| Outcome | Check | Subject | Message | Fix |", "| --- | --- | --- | --- | --- |"]
    for o in report.outcomes:
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
    from gpudra.report.github import command, escape_data

    lines = []
    for o in report.outcomes:
        if o.status == "pass":
            continue
        level = "error" if report.failing(o) else _GITHUB.get(o.status, "notice")
        fix = f" (fix: {o.remediation})" if o.remediation else ""
        title = f"{o.id} {o.title}"
        # Details located on a file's line (`apps/job.yaml:12 GPU101: ...`) become annotations
        # on that line of the pull request; the check's summary is then said by them.
        located = [(d.location, d.text) for d in o.details
                   if d.location is not None and d.location.line is not None] if not o.file else []
        for at, text in located:
            lines.append(command(level, {"file": escape_text(at.file), "line": at.line,
                                         "title": title}, text + fix))
        if located:
            continue
        message = o.message + fix
        if o.subject:
            message = f"{o.subject}: {message}"
        lines.append(command(level, {"file": o.file, "line": o.line if o.file else None,
                                     "title": title}, message))
    lines += [command("error", {"title": f"gpudra {report.tool} input error"},
                      f"{e.where}: {e.message}") for e in report.errors]
    if report.cluster is not None:
        lines.append(escape_data(f"gpudra {report.tool}: {report.cluster.describe()}"))
    lines.append(f"gpudra {report.tool}: {_counts_text(report)}")
    return "\n".join(lines) + "\n"
