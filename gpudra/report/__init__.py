"""Renderers: one module per output format, each a pure `render(data, options) -> str`.

gpudra.report.formats is how every result is rendered (the kinds, the options, the escaping and
redaction on the way out); the registry of every command's `-o` words is gpudra.cli.formats,
which imports a renderer's module only when its format is asked for, so that `-o json` never
pays for rich.
"""

from __future__ import annotations

import enum

from gpudra.report.formats import RenderOptions


class SummaryFormat(str, enum.Enum):
    """`convert -o`: its summary's formats (its output proper is the files it writes), in the
    registry's order (gpudra.cli.formats, Kind.CONVERT; tests/report/test_formats.py)."""

    TABLE = "table"
    JSON = "json"


__all__ = ["RenderOptions", "SummaryFormat"]
