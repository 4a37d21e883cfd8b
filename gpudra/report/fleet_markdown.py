"""`gpudra report merge -o markdown`: a fleet's report for a PR comment or a wiki page.

A headline with the fleet's counts, one row per cluster (its progress, its findings, what
stopped it), then the findings per severity with their cluster; rendered from the merged
report's data, escaped as `-o markdown` escapes (gpudra.report.markdown.escape_cell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpudra.k8s.objects import plural
from gpudra.report.formats import RenderOptions
from gpudra.report.markdown import COLLAPSE_OVER, escape_cell
from gpudra.report.summary import severity_counts

_TITLE = {"error": "Errors", "warning": "Warnings", "info": "Info"}


def render(data: Mapping[str, Any], options: RenderOptions) -> str:
    summary, clusters, findings = data["summary"], data["clusters"], data["findings"]
    counts = severity_counts(summary["findings"])
    blocks = [f"## gpudra fleet: {plural(len(clusters), 'cluster')}, "
              f"{plural(len(findings), 'finding')}"
              + (f" ({counts})" if counts else "") + "\n\n" + _progress(summary),
              _clusters(clusters)]
    collapse = len(findings) > COLLAPSE_OVER
    for severity in ("error", "warning", "info"):
        some = [f for f in findings if f["severity"] == severity]
        if some:
            blocks.append(_findings(severity, some, collapse))
    if data["errors"]:
        blocks.append(f"### Inputs that could not be read ({len(data['errors'])})\n\n" + _table(
            ("Cluster", "Input", "Error"),
            [(x.get("cluster_name") or "-", x.get("file") or x.get("object") or "-",
              x["message"]) for x in data["errors"]]))
    return "\n\n".join(blocks) + "\n"


def _progress(s: Mapping[str, Any]) -> str:
    if not s["gpu_workloads"]:
        return "no GPU workloads found"
    percent = s["percent_migrated"]
    return (f"**{percent:.0f}% migrated** to DRA ({s['on_dra']} on claims, {s['on_bridge']} "
            f"through the bridge, {s['on_device_plugin']} still on the device plugin, of "
            f"{s['gpu_workloads']} GPU workloads)")


def _clusters(clusters: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in clusters:
        s = c["summary"]
        percent = s["percent_migrated"]
        problem = c["error"] or (f"{s['errors']} unreadable inputs" if s["errors"] else "")
        rows.append((c["name"], str(s["gpu_workloads"]), str(s["on_device_plugin"]),
                     str(s["on_bridge"]), str(s["on_dra"]),
                     "-" if percent is None else f"{percent:.0f}%",
                     *(str(s["findings"][sev]) for sev in ("error", "warning", "info")),
                     problem))
    return "### Clusters\n\n" + _table(
        ("Cluster", "GPU workloads", "Device plugin", "Bridge", "Claims", "Migrated", "Errors",
         "Warnings", "Info", "Problem"), rows)


def _findings(severity: str, findings: Sequence[Mapping[str, Any]], collapse: bool) -> str:
    heading = f"{_TITLE[severity]} ({len(findings)})"
    table = _table(("Cluster", "Location", "Rule", "Object", "Message"), [
        (f.get("cluster_name") or "-",
         (f"{f['file']}:{f['line']}" if f.get("line") else f["file"]) if f.get("file") else "-",
         f["rule"], "/".join(x for x in (f.get("namespace"), f.get("kind"), f.get("name")) if x)
         or "-", f["message"]) for f in findings])
    if collapse:
        return f"<details>\n<summary>{heading}</summary>\n\n{table}\n\n</details>"
    return f"### {heading}\n\n{table}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(escape_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
