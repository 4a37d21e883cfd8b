"""Renderers: one module per output format, each a pure `render(report, options) -> str`.

Modules are imported on demand so that `-o json` never pays for rich.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from gpudra.model import FailOn, Report


class OutputFormat(str, enum.Enum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"
    SARIF = "sarif"
    JUNIT = "junit"
    MARKDOWN = "markdown"
    GITHUB = "github"
    HTML = "html"


class SummaryFormat(str, enum.Enum):
    """Formats of `convert`'s summary (its output proper is the files it writes)."""

    TABLE = "table"
    JSON = "json"


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


Renderer = Callable[[Report, RenderOptions], str]

_MODULES: dict[OutputFormat, str] = {
    OutputFormat.TABLE: "gpudra.report.table",
    OutputFormat.JSON: "gpudra.report.json_report",
    OutputFormat.YAML: "gpudra.report.yaml_report",
    OutputFormat.SARIF: "gpudra.report.sarif",
    OutputFormat.JUNIT: "gpudra.report.junit",
    OutputFormat.MARKDOWN: "gpudra.report.markdown",
    OutputFormat.GITHUB: "gpudra.report.github",
    OutputFormat.HTML: "gpudra.report.html",
}


def renderer_for(fmt: OutputFormat) -> Renderer:
    return importlib.import_module(_MODULES[fmt]).render
