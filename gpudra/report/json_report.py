"""`-o json`: the documented machine contract (docs/report-schema.json)."""

from __future__ import annotations

import json
from typing import Any

from gpudra.model import ClusterInfo, Finding, InputError, Report, Skipped
from gpudra.report import RenderOptions
from gpudra.summary import summarize


def as_data(report: Report) -> dict[str, Any]:
    """The report as plain data; also the source of the YAML format."""
    data = {
        "findings": [finding_data(f) for f in report.findings],
        "errors": [error_data(e) for e in report.errors],
        "skipped": [skipped_data(s) for s in report.skipped],
        "summary": summarize(report).as_dict(),
        "waived": [{"finding": finding_data(w.finding), "reason": w.reason, "owner": w.owner,
                    "expires": w.expires} for w in report.waived],
    }
    if report.baseline is not None:
        data["baseline"] = {"file": report.baseline.file, "known": report.baseline.known,
                            "fixed": report.baseline.fixed}
    if report.source == "cluster":
        data["not_read"] = [{"object": r.object, "message": r.message, "without": r.adds}
                            for r in report.not_read]
    return data


def skipped_data(s: Skipped) -> dict[str, Any]:
    return {"file": s.file, "line": s.line, "reason": s.reason}


def finding_data(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity.value,
        "message": f.message,
        "source": f.source,
        "file": f.file,
        "line": f.line,
        "kind": f.kind,
        "name": f.name,
        "namespace": f.namespace,
        "container": f.container,
        "resource": f.resource,
        "quantity": f.quantity,
        "path": f.path,
        "template": f.template,
        "hint": f.hint,
        "cluster": cluster_data(f.cluster),
    }


def cluster_data(info: ClusterInfo | None) -> dict[str, Any] | None:
    if info is None:
        return None
    return {"replicas": info.replicas, "running_pods": info.running_pods,
            "nodes": list(info.nodes), "managed_by": info.managed_by,
            "gpu_holders": list(info.gpu_holders), "bridge_pods": info.bridge_pods,
            "controller_gone": info.controller_gone}


def error_data(e: InputError) -> dict[str, Any]:
    data: dict[str, Any] = {"file": e.file, "line": e.line, "message": e.message}
    if e.object is not None:
        data["object"] = e.object
    return data


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(as_data(report), indent=2, ensure_ascii=False) + "\n"
