"""The one registry of output formats: for each kind of result, the `-o` words it takes and
the function that renders each.

Every command renders through `render(kind, name, data, options)`. A renderer is a function
`(data, options) -> str` named here by text ("module:function") and imported only when its
format is asked for, so that `-o json` never pays for rich and a command never imports the
renderers of another. A renderer sits beside the data it renders: the audit's and the
verdicts' formats in gpudra.report, a convert summary in gpudra.convert.summary, the cutover
runbook in gpudra.cutover.runbook, the catalogues beside their catalogues. That is why this
module names them and never imports them itself (tests/report/test_formats.py checks that
each kind's renderers stay in its package).

A new output format is one renderer module (or function) and one `Format` line below.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudra.errors import UsageError
from gpudra.results.model import FailOn
from gpudra.printable import escaped, redact


class Kind(str, enum.Enum):
    """What is rendered; the comment names the data `render` takes for it."""

    AUDIT = "audit"          # gpudra.results.model.Report
    OUTCOMES = "outcomes"    # gpudra.report.outcomes.OutcomeReport: preflight, plan, verify
    FLEET = "fleet"          # merged JSON reports (gpudra.report.merge.merge_reports)
    CONVERT = "convert"      # gpudra.convert.summary.ConvertSummary
    RUNBOOK = "runbook"      # gpudra.cutover.runbook.Runbook
    RULES = "rules"          # the rule catalogue: a list of gpudra.results.model.RuleInfo
    CHECKS = "checks"        # the preflight checks: a list of gpudra.preflight CheckInfo
    CONTROLLERS = "controllers"  # the controller registry: gpudra.controllers ControllerRows


@dataclass(frozen=True, slots=True)
class RenderOptions:
    color: bool = False
    width: int | None = None
    tool_version: str = ""
    # The run's --fail-on (default: the CLI's): formats that carry a pass/fail verdict of their
    # own (JUnit) must agree with the exit code.
    fail_on: FailOn = FailOn.WARNING
    verbose: bool = False  # -v: list what was skipped
    inputs: tuple[str, ...] = ()  # the paths audited (none: the cluster), for the next steps


@dataclass(frozen=True, slots=True)
class Format:
    name: str       # the -o word
    kind: Kind      # what it renders
    renderer: str   # "module:function", imported on first use

    def load(self) -> Callable[[Any, RenderOptions], str]:
        module, _, function = self.renderer.partition(":")
        return getattr(importlib.import_module(module), function)


_REPORT = "gpudra.report"

# Per kind in the order the CLI lists them (usage errors and --help name them in this order).
FORMATS: tuple[Format, ...] = (
    Format("table", Kind.AUDIT, f"{_REPORT}.table:render"),
    Format("json", Kind.AUDIT, f"{_REPORT}.json_report:render"),
    Format("yaml", Kind.AUDIT, f"{_REPORT}.yaml_report:render"),
    Format("sarif", Kind.AUDIT, f"{_REPORT}.sarif:render"),
    Format("junit", Kind.AUDIT, f"{_REPORT}.junit:render"),
    Format("markdown", Kind.AUDIT, f"{_REPORT}.markdown:render"),
    Format("github", Kind.AUDIT, f"{_REPORT}.github:render"),
    Format("html", Kind.AUDIT, f"{_REPORT}.html:render"),
    Format("table", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_table"),
    Format("json", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_json"),
    Format("junit", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_junit"),
    Format("markdown", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_markdown"),
    Format("github", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_github"),
    Format("html", Kind.OUTCOMES, f"{_REPORT}.outcomes:render_html"),
    Format("json", Kind.FLEET, f"{_REPORT}.merge:render_json"),
    Format("markdown", Kind.FLEET, f"{_REPORT}.fleet_markdown:render"),
    Format("html", Kind.FLEET, f"{_REPORT}.html:render_fleet"),
    Format("table", Kind.CONVERT, "gpudra.convert.summary:render_table"),
    Format("json", Kind.CONVERT, "gpudra.convert.summary:render_json"),
    Format("table", Kind.RUNBOOK, "gpudra.cutover.runbook:render_table"),
    Format("markdown", Kind.RUNBOOK, "gpudra.cutover.runbook:render_markdown"),
    Format("json", Kind.RUNBOOK, "gpudra.cutover.runbook:render_json"),
    Format("table", Kind.RULES, "gpudra.rules.docs:render_table"),
    Format("json", Kind.RULES, "gpudra.rules.docs:render_json"),
    Format("markdown", Kind.RULES, "gpudra.rules.docs:render_markdown"),
    Format("table", Kind.CHECKS, "gpudra.preflight.docs:render_table"),
    Format("json", Kind.CHECKS, "gpudra.preflight.docs:render_json"),
    Format("markdown", Kind.CHECKS, "gpudra.preflight.docs:render_markdown"),
    Format("table", Kind.CONTROLLERS, "gpudra.controllers.docs:render_table"),
    Format("json", Kind.CONTROLLERS, "gpudra.controllers.docs:render_json"),
    Format("markdown", Kind.CONTROLLERS, "gpudra.controllers.docs:render_markdown"),
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


# Formats whose encoder escapes what it must (gpudra.report.json_text, yaml_report): their
# values are written as they are, every other format prints escaped text.
DATA_FORMATS = frozenset({"json", "yaml", "sarif"})
# Results passed through gpudra.printable.escaped for a text format. The catalogues print
# gpudra's own text; a convert summary carries the files' contents, and its renderer escapes
# what it prints itself.
_ESCAPED_KINDS = frozenset({Kind.AUDIT, Kind.OUTCOMES, Kind.FLEET, Kind.RUNBOOK})
# A line that begins, after blanks, with `::` is a command to the GitHub Actions runner; only
# `-o github` writes those, each of its own making.
_RUNNER_COMMAND = re.compile(r"^(\s*):(?=:)", re.MULTILINE)


def render(kind: Kind, name: str, data: Any, options: RenderOptions | None = None) -> str:
    """`data` (see Kind) in the format `name`; a name `kind` does not take is a usage error.

    The one place every result passes on its way out (the report ConfigMap included): text
    formats get `data` with every value escaped (gpudra.printable.escaped) and no line of
    theirs begins with `::` (but `-o github`'s own commands); every format's text loses
    credentials (gpudra.printable.redact)."""
    fmt = find(kind, name)
    if name not in DATA_FORMATS and kind in _ESCAPED_KINDS:
        data = escaped(data)
    text = redact(fmt.load()(data, options or RenderOptions()))
    if name == "github" or name in DATA_FORMATS:  # data formats quote what could (YAML)
        return text
    return _RUNNER_COMMAND.sub(r"\1\\x3a", text)
