"""How every result is rendered: the kinds of result, the options a renderer takes, and the
one way a renderer's text goes out (`render_with`: escaped, redacted, no runner commands).

The registry of the `-o` words and their renderers is gpudra.cli.formats, beside the CLI: it
imports the renderers, which sit beside the data they render, above this floor. A core module
that writes one format itself (cutover's runbook.md) passes its renderer to render_with.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


# What every renderer is: the data of its kind (see Kind) and the options, to text.
Renderer = Callable[[Any, RenderOptions], str]


def render_with(renderer: Renderer, kind: Kind, name: str, data: Any,
                options: RenderOptions | None = None) -> str:
    """`data` (see Kind) rendered by `renderer`, the format `name` of `kind`.

    The one place every result passes on its way out (the report ConfigMap included): text
    formats get `data` with every value escaped (gpudra.printable.escaped) and no line of
    theirs begins with `::` (but `-o github`'s own commands); every format's text loses
    credentials (gpudra.printable.redact)."""
    if name not in DATA_FORMATS and kind in _ESCAPED_KINDS:
        data = escaped(data)
    text = redact(renderer(data, options or RenderOptions()))
    if name == "github" or name in DATA_FORMATS:  # data formats quote what could (YAML)
        return text
    return _RUNNER_COMMAND.sub(r"\1\\x3a", text)
