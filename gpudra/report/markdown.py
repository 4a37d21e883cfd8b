"""`-o markdown`: a GitHub-flavoured report for PR comments and ``$GITHUB_STEP_SUMMARY``.

A headline with counts and the migration percentage, one table per severity (errors first),
the inputs that could not be read, and progress by namespace. Above `COLLAPSE_OVER` findings
the per-severity tables are folded into ``<details>`` so a comment stays scannable.

Cell text comes from manifests (names, messages), so it is escaped: ``|`` would end a cell,
a newline would end the row, and outside code spans ``<``/``>``/``&`` would be read as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpudra.results.model import MOST_SEVERE_FIRST, Finding, InputError, Report, Severity
from gpudra.k8s.objects import plural
from gpudra.printable import escape_text, file_name
from gpudra.report import RenderOptions
from gpudra.report.summary import (
    Summary,
    held_back,
    severity_counts,
    summarize,
    unchecked_words,
)

COLLAPSE_OVER = 50
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
_TITLE = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Info"}


def render(report: Report, options: RenderOptions) -> str:
    if report.clusters:
        return _render_clusters(report, options)
    s = summarize(report)
    collapse = len(report.findings) > COLLAPSE_OVER
    blocks = [_headline(s, report)]
    for severity in MOST_SEVERE_FIRST:
        findings = [f for f in report.findings if f.severity is severity]
        if findings:
            blocks.append(_severity_section(severity, findings, collapse))
    if report.errors:
        blocks.append(_errors_section(report.errors))
    blocks.append(_progress_section(s))
    return "\n\n".join(blocks) + "\n"


def _render_clusters(report: Report, options: RenderOptions) -> str:
    """A multi-cluster audit: the totals and one row per cluster, then each cluster's own
    report one heading level down."""
    s = summarize(report)
    unread = [c for c in report.clusters if c.error]
    headline = _headline(s, report).replace(
        "## gpudra: ", f"## gpudra: {plural(len(report.clusters), 'cluster')}, ", 1)
    rows = []
    for audit in report.clusters:
        one = summarize(audit.report)
        migrated = "-" if one.percent_migrated is None else f"{one.percent_migrated:.0f}%"
        read = f"not read: {audit.error}" if audit.error else \
            f"partly ({plural(one.errors, 'unreadable input')})" if one.errors else "yes"
        rows.append((audit.name, str(sum(one.findings.values())), str(one.gpu_workloads),
                     migrated, read))
    blocks = [headline + (f" · **{len(unread)} not read**" if unread else ""),
              "### Clusters\n\n" + _table(("Context", "Findings", "GPU workloads", "Migrated",
                                             "Read"), rows)]
    for audit in report.clusters:
        body = render(audit.report, options).rstrip("\n")
        # One level down, its headline named after the cluster: `### Cluster `a`: 3 findings`
        body = body.replace("## gpudra: ", f"## Cluster `{_code(audit.name)}`: ", 1)
        blocks.append("\n".join("#" + line if line.startswith("#") else line
                                 for line in body.splitlines()))
    return "\n\n".join(blocks) + "\n"


def _code(text: str) -> str:
    return text.replace("`", "'")


def escape_cell(text: str) -> str:
    """Make arbitrary text safe inside one GFM table cell."""
    # Entities would show literally inside `code spans`, and GitHub reads no HTML there.
    parts = _CODE_SPAN.split(text)
    text = "".join(p if i % 2 else _escape_html(p) for i, p in enumerate(parts))
    # A pipe ends the cell even inside a code span; GFM strips the backslash again.
    text = text.replace("|", "\\|")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # What else could drive a terminal or reorder the text (file names too) is escaped.
    return "<br>".join(escape_text(line) for line in lines)


def _escape_html(text: str) -> str:
    # And the `](` or `][` that would make a value a link or an image (`[docs](https://evil)`):
    # an escaped bracket reads the same.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("](", "\\](").replace("][", "\\][")


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = [_row(*header), _row(*("---" for _ in header))]
    lines += [_row(*(escape_cell(c) for c in row)) for row in rows]
    return "\n".join(lines)


def _headline(s: Summary, report: Report) -> str:
    total = len(report.findings)
    counts = severity_counts(s.findings)
    title = f"## gpudra: {plural(total, 'finding')}"
    title += f" ({counts})" if counts else ""
    if s.errors:
        title += f", {plural(s.errors, 'unreadable input')}"
    facts = s.read.split(", ")
    if s.suppressed:
        facts.append(f"{s.suppressed} suppressed")
    facts += held_back(report)
    if s.gpu_workloads:
        bridge = f", {s.on_bridge} through the bridge" if s.on_bridge else ""
        facts.append(f"**{s.percent_migrated:.0f}% migrated** to DRA ({s.on_dra}{bridge} of "
                     f"{plural(s.gpu_workloads, 'GPU workload')}; {s.on_device_plugin} still on "
                     "the device plugin)")
        if s.unchecked or s.vouched:
            facts.append(unchecked_words(s))
    else:
        facts.append("no GPU workloads found" + (" in what could be read" if s.incomplete
                                                 else ""))
    facts += [f"not read (namespaced role): {r.object}, without {r.adds}"
              for r in report.not_read]
    if report.nothing_read and not s.errors:
        facts.append(f"**{report.nothing_read_message}**")
    read = f"\n\n{escape_cell(report.cluster_read.describe())}" \
        if report.cluster_read is not None else ""
    advice = f"\n\n**Strategy:** {escape_cell(s.advice)}" if s.advice else ""
    return f"{title}\n\n" + " · ".join(facts) + read + advice


def _severity_section(severity: Severity, findings: list[Finding], collapse: bool) -> str:
    heading = f"{_TITLE[severity]} ({len(findings)})"
    table = _table(("Location", "Rule", "Object", "Message"),
                   [(_location(f), f.rule, _object(f), _message(f)) for f in findings])
    if collapse:
        # The blank line after </summary> is what makes GitHub render the table inside.
        return f"<details>\n<summary>{heading}</summary>\n\n{table}\n\n</details>"
    return f"### {heading}\n\n{table}"


def _errors_section(errors: tuple[InputError, ...]) -> str:
    table = _table(("Input", "Error"), [(e.where, e.message) for e in errors])
    return f"### Inputs that could not be read ({len(errors)})\n\n{table}"


def _progress_section(s: Summary) -> str:
    if not s.namespaces:
        return "### Migration progress\n\nNo GPU workloads found."
    rows = [(ns.namespace, str(ns.gpu_workloads), str(ns.on_dra), f"{ns.percent_migrated:.0f}%")
            for ns in s.namespaces]
    table = _table(("Namespace", "GPU workloads", "On DRA", "Migrated"), rows)
    return f"### Migration progress by namespace\n\n{table}"


def _location(f: Finding) -> str:
    file = file_name(f.file) if f.file else "-"
    return f"{file}:{f.line}" if f.line is not None else file


def _object(f: Finding) -> str:
    return "/".join(x for x in (f.namespace, f.kind, f.name) if x) or "-"


def _message(f: Finding) -> str:
    return f"{f.message} (template {f.template})" if f.template else f.message


