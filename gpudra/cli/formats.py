"""The one registry of output formats: for each kind of result, the `-o` words it takes and
the function that renders each.

Every command renders through `render(kind, name, data, options)`. A renderer is a function
`(data, options) -> str` that sits beside the data it renders: the audit's and the verdicts'
formats in gpudra.report, a convert summary in gpudra.convert.summary, the cutover runbook in
gpudra.cutover.runbook, the catalogues beside their catalogues. The registry sits here, beside
the CLI, above every one of them, and names them by typed references: each line's loader
imports its module inside a function, so `-o json` never pays for rich and a command never
imports the renderers of another, while import-linter and the type checker still see every
reference (tests/report/test_formats.py checks both).

A new output format is one renderer (a function beside its data) and one `Format` line below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.errors import UsageError
from gpudra.report.formats import Kind, Renderer, RenderOptions, render_with

Renderers = Mapping[str, Renderer]


@dataclass(frozen=True, slots=True)
class Format:
    name: str                              # the -o word
    kind: Kind                             # what it renders
    renderers: Callable[[], Renderers]     # its module's renderers by word, imported on first use

    def load(self) -> Renderer:
        return self.renderers()[self.name]


# One loader per renderer module: the import inside is the reason the CLI starts fast.
def _table() -> Renderers:
    from gpudra.report import table
    return {"table": table.render}


def _json_report() -> Renderers:
    from gpudra.report import json_report
    return {"json": json_report.render}


def _yaml_report() -> Renderers:
    from gpudra.report import yaml_report
    return {"yaml": yaml_report.render}


def _sarif() -> Renderers:
    from gpudra.report import sarif
    return {"sarif": sarif.render}


def _junit() -> Renderers:
    from gpudra.report import junit
    return {"junit": junit.render}


def _markdown() -> Renderers:
    from gpudra.report import markdown
    return {"markdown": markdown.render}


def _github() -> Renderers:
    from gpudra.report import github
    return {"github": github.render}


def _html() -> Renderers:
    from gpudra.report import html
    return {"html": html.render}


def _outcomes() -> Renderers:
    from gpudra.report import outcomes
    return {"table": outcomes.render_table, "json": outcomes.render_json,
            "junit": outcomes.render_junit, "markdown": outcomes.render_markdown,
            "github": outcomes.render_github, "html": outcomes.render_html}


def _fleet() -> Renderers:
    from gpudra.report import fleet_markdown, html, merge
    return {"json": merge.render_json, "markdown": fleet_markdown.render,
            "html": html.render_fleet}


def _convert() -> Renderers:
    from gpudra.convert.summary import RENDERERS
    return RENDERERS


def _runbook() -> Renderers:
    from gpudra.cutover.runbook import RENDERERS
    return RENDERERS


def _rules() -> Renderers:
    from gpudra.rules import docs
    return {"table": docs.render_table, "json": docs.render_json,
            "markdown": docs.render_markdown}


def _checks() -> Renderers:
    from gpudra.preflight import docs
    return {"table": docs.render_table, "json": docs.render_json,
            "markdown": docs.render_markdown}


def _controllers() -> Renderers:
    from gpudra.controllers import docs
    return {"table": docs.render_table, "json": docs.render_json,
            "markdown": docs.render_markdown}


# Per kind in the order the CLI lists them (usage errors and --help name them in this order).
FORMATS: tuple[Format, ...] = (
    Format("table", Kind.AUDIT, _table),
    Format("json", Kind.AUDIT, _json_report),
    Format("yaml", Kind.AUDIT, _yaml_report),
    Format("sarif", Kind.AUDIT, _sarif),
    Format("junit", Kind.AUDIT, _junit),
    Format("markdown", Kind.AUDIT, _markdown),
    Format("github", Kind.AUDIT, _github),
    Format("html", Kind.AUDIT, _html),
    Format("table", Kind.OUTCOMES, _outcomes),
    Format("json", Kind.OUTCOMES, _outcomes),
    Format("junit", Kind.OUTCOMES, _outcomes),
    Format("markdown", Kind.OUTCOMES, _outcomes),
    Format("github", Kind.OUTCOMES, _outcomes),
    Format("html", Kind.OUTCOMES, _outcomes),
    Format("json", Kind.FLEET, _fleet),
    Format("markdown", Kind.FLEET, _fleet),
    Format("html", Kind.FLEET, _fleet),
    Format("table", Kind.CONVERT, _convert),
    Format("json", Kind.CONVERT, _convert),
    Format("table", Kind.RUNBOOK, _runbook),
    Format("markdown", Kind.RUNBOOK, _runbook),
    Format("json", Kind.RUNBOOK, _runbook),
    Format("table", Kind.RULES, _rules),
    Format("json", Kind.RULES, _rules),
    Format("markdown", Kind.RULES, _rules),
    Format("table", Kind.CHECKS, _checks),
    Format("json", Kind.CHECKS, _checks),
    Format("markdown", Kind.CHECKS, _checks),
    Format("table", Kind.CONTROLLERS, _controllers),
    Format("json", Kind.CONTROLLERS, _controllers),
    Format("markdown", Kind.CONTROLLERS, _controllers),
)


def names(kind: Kind) -> tuple[str, ...]:
    """The -o words `kind` takes, in the CLI's order."""
    return tuple(f.name for f in FORMATS if f.kind is kind)


def choices(kind: Kind) -> str:
    """`table, json or markdown`: the words of `kind` for a message."""
    *rest, last = names(kind)
    return f"{', '.join(rest)} or {last}" if rest else last


# How a command refuses a word it does not take (most commands' -o is checked earlier, by
# the CLI's option parsing); `gpudra rules` words it its own way.
_REFUSALS = {Kind.RULES: "unknown format {name!r} ({choices})"}


def find(kind: Kind, name: str) -> Format:
    for fmt in FORMATS:
        if fmt.kind is kind and fmt.name == name:
            return fmt
    refusal = _REFUSALS.get(kind, "-o must be {choices}, not {name!r}")
    raise UsageError(refusal.format(name=name, choices=choices(kind)))


def render(kind: Kind, name: str, data: Any, options: RenderOptions | None = None) -> str:
    """`data` (see Kind) in the format `name`; a name `kind` does not take is a usage error.
    The text passes through gpudra.report.formats.render_with: escaped, redacted."""
    return render_with(find(kind, name).load(), kind, name, data, options)
