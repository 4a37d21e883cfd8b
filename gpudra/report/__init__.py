"""Renderers: one module per output format, each a pure `render(data, options) -> str`.

gpudra.report.formats is the registry of every command's formats; modules are imported on
demand so that `-o json` never pays for rich.
"""

from __future__ import annotations

import enum

from gpudra.report.formats import Kind, RenderOptions, names

# `convert -o`: its summary's formats (its output proper is the files it writes); an enum
# for the CLI's choices, made from the registry.
SummaryFormat = enum.Enum("SummaryFormat", [(n.upper(), n) for n in names(Kind.CONVERT)],
                          type=str)

__all__ = ["RenderOptions", "SummaryFormat"]
