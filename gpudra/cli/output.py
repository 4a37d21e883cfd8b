"""Every format choice of the CLI and the code that writes a command's output: the -o
FORMAT[=PATH] targets, the formats each command offers, and how each renders to stdout or a
file. One module, so that a new format or a new way to render lands in one place."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Optional

import typer

from gpudra import __version__
from gpudra.cli.options import Choice
from gpudra.cli.terminal import color, terminal, width
from gpudra.errors import UsageError
from gpudra.model import FailOn
from gpudra.report import OutputFormat, RenderOptions


class OutcomeFormat(Choice):
    """preflight's, plan's and verify's -o formats (gpudra.report.outcomes)."""

    TABLE = "table"
    JSON = "json"
    JUNIT = "junit"
    MARKDOWN = "markdown"
    GITHUB = "github"
    HTML = "html"


class MergeFormat(Choice):
    """`gpudra report merge -o`."""

    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


class RunbookFormat(Choice):
    """cutover's -o: the wave table, the Markdown runbook, or JSON."""

    TABLE = "table"
    MARKDOWN = "markdown"
    JSON = "json"


class CatalogueFormat(Choice):
    """`gpudra checks -o` and `gpudra rules -o`."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


def _values(formats: Any) -> tuple[str, ...]:
    return tuple(member.value for member in formats)


AUDIT_FORMATS = _values(OutputFormat)
OUTCOME_FORMATS = _values(OutcomeFormat)
MERGE_FORMATS = _values(MergeFormat)


def _targets(values: Optional[list[str]], formats: tuple[str, ...], default: str = "table",
             configmaps: bool = False) -> Any:
    """-o FORMAT[=PATH], repeatable, as gpudra.report.targets.OutputTarget records; a bad one
    is click's usage error, like any bad option value."""
    from gpudra.report.targets import parse_targets

    try:
        return parse_targets(values or [], formats, default, configmaps=configmaps)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


def audit_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, AUDIT_FORMATS, configmaps=True),
                        help="Report format: table, json, yaml, sarif, junit, markdown, github "
                             "or html; FORMAT=PATH writes a file (repeatable: one scan, many "
                             "reports); json=configmap:[NS/]NAME creates or replaces a "
                             "ConfigMap in the cluster audited.")


def outcome_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, OUTCOME_FORMATS),
                        help="table, json, junit, markdown, github or html; FORMAT=PATH "
                             "writes a file (repeatable).")


def merge_targets_option() -> Any:
    return typer.Option([], "-o", "--output", metavar="FORMAT[=PATH]",
                        callback=lambda v: _targets(v, MERGE_FORMATS, "markdown"),
                        help="json, markdown (the default) or html; FORMAT=PATH writes a file "
                             "(repeatable).")


def catalogue_format_option() -> Any:
    return typer.Option("table", "-o", "--output", help="table, json or markdown.")


def write_audit(targets: Any, report: Any, level: FailOn, verbose: bool,
                inputs: tuple[str, ...], publish: Optional[Callable[[Any, str], None]]) -> None:
    """Every -o target of an audit; `publish` writes json=configmap:NAME to the cluster."""
    from gpudra.report import renderer_for
    from gpudra.report.targets import write_targets

    def render(fmt: str, to_stdout: bool) -> str:
        return renderer_for(OutputFormat(fmt))(report, RenderOptions(
            color=to_stdout and color(sys.stdout), width=width() if to_stdout else None,
            tool_version=__version__, fail_on=level, verbose=verbose, inputs=inputs))

    write_targets(targets, render, sys.stdout, publish)


def write_outcomes(targets: Any, report: Any,
                   own: Optional[dict[str, Callable[[], str]]] = None) -> None:
    """Every -o target of preflight, plan or verify; `own` renders a format a command shapes
    itself (plan's JSON)."""
    from gpudra.report.outcomes import render
    from gpudra.report.targets import write_targets

    def text(fmt: str, to_stdout: bool) -> str:
        if own and fmt in own:
            return own[fmt]()
        return render(report, fmt, color=to_stdout and color(sys.stdout),
                      width=width() if to_stdout else None)

    write_targets(targets, text, sys.stdout)


def write_plan(targets: Any, result: Any) -> None:
    """plan's -o targets; its JSON is the plan's own contract (docs/plan.md), not the outcome
    shape."""
    from gpudra.plan.run import as_report
    from gpudra.report.json_report import error_data

    def plan_json() -> str:
        data = result.report.to_json()
        data["errors"] = [error_data(e) for e in result.errors]
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    write_outcomes(targets, as_report(result), {"json": plan_json})


def write_runbook(fmt: RunbookFormat, result: Any, where: Optional[str]) -> None:
    from gpudra.cutover.runbook import as_json, markdown, table

    if fmt is RunbookFormat.JSON:
        text = json.dumps(as_json(result.plan, where, result.pools), indent=2) + "\n"
    elif fmt is RunbookFormat.MARKDOWN:
        text = markdown(result.plan, where, result.pools)
    else:
        text = table(result.plan)
    sys.stdout.write(text)


def write_checks(fmt: CatalogueFormat) -> None:
    """The preflight check catalogue."""
    from gpudra.preflight import catalogue, checks_markdown

    entries = list(catalogue().values())
    if fmt is CatalogueFormat.MARKDOWN:
        sys.stdout.write(checks_markdown())
    elif fmt is CatalogueFormat.JSON:
        sys.stdout.write(json.dumps(
            [{"id": c.id, "tier": c.tier.value, "title": c.title, "summary": c.summary,
              "outcomes": [o.value for o in c.outcomes], "docs": c.docs_url} for c in entries],
            indent=2) + "\n")
    else:
        for c in entries:
            sys.stdout.write(f"{c.id:<12} {c.tier.value:<10} {c.title}\n")


def write_rules(fmt: CatalogueFormat) -> None:
    """The rule catalogue."""
    from gpudra.catalogue_docs import render_rules

    sys.stdout.write(render_rules(fmt.value))


def write_explanation(text: str) -> None:
    """A rule's or check's Markdown: the source for pipes, files and docs, rendered for a
    person at a terminal (NO_COLOR keeps the layout and bold but drops the colours)."""
    if not terminal(sys.stdout):
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console(force_terminal=True, no_color=not color(sys.stdout)).print(Markdown(text))


def write_merged(targets: Any, merged: Any) -> None:
    """Every -o target of `gpudra report merge`."""
    from gpudra.report.targets import write_targets

    def render(fmt: str, to_stdout: bool) -> str:
        if fmt == MergeFormat.JSON:
            return json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
        if fmt == MergeFormat.HTML:
            from gpudra.report.html import render_data

            return render_data(merged, tool_version=__version__)
        from gpudra.report.fleet_markdown import render as markdown

        return markdown(merged)

    write_targets(targets, render, sys.stdout)
