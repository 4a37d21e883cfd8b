"""`-o yaml`: the JSON report's data, as YAML."""

from __future__ import annotations

import yaml

from gpudra.model import Report
from gpudra.report import RenderOptions
from gpudra.report.json_report import as_data


def render(report: Report, options: RenderOptions) -> str:
    return yaml.safe_dump(as_data(report), sort_keys=False, allow_unicode=True, width=4096)
