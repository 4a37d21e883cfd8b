"""`-o json`: the documented machine contract (docs/report-schema.json).

`SCHEMA_VERSION` changes only when a field changes meaning or goes away (`gpudra report merge`
refuses other versions); adding fields keeps it."""

from __future__ import annotations

from typing import Any

from gpudra.results.model import (
    ClusterInfo, Finding, InputError, Report, Severity, Skipped, WorkloadStatus,
)
from gpudra.report import RenderOptions, json_text
from gpudra.report.summary import summarize

SCHEMA_VERSION = 1


def as_data(report: Report) -> dict[str, Any]:
    """The report as plain data; also the source of the YAML format."""
    data = {
        "schema_version": SCHEMA_VERSION,
        "findings": [finding_data(f) for f in report.findings],
        "errors": [error_data(e) for e in report.errors],
        "skipped": [skipped_data(s) for s in report.skipped],
        "summary": summarize(report).as_dict(),
        "waived": [{"finding": finding_data(w.finding), "reason": w.reason, "owner": w.owner,
                    "expires": w.expires} for w in report.waived],
        "workloads": workloads_data(report),
        "rules": rules_data(report),
    }
    if report.baseline is not None:
        data["baseline"] = {"file": report.baseline.file, "known": report.baseline.known,
                            "fixed": report.baseline.fixed}
    if report.source == "cluster":
        data["not_read"] = [{"object": r.object, "message": r.message, "without": r.adds}
                            for r in report.not_read]
    if report.cluster_read is not None:
        data["cluster"] = report.cluster_read.as_data()
    if report.clusters:
        data["clusters"] = [{"name": c.name, "summary": summarize(c.report).as_dict(),
                             "error": c.error,
                             **({"cluster": c.report.cluster_read.as_data()}
                                if c.report.cluster_read is not None else {})}
                            for c in report.clusters]
    return data


# What a finding and a workload are about, so that the two can be matched: a template's chart
# or file, else (source, file, kind, namespace, name)
ObjectKey = tuple[str | None, ...]


def workloads_data(report: Report) -> list[dict[str, Any]]:
    """Each GPU workload with its migration state and the rules of the error findings on it."""
    blocking: dict[ObjectKey, list[str]] = {}
    for f in report.findings:
        if f.severity is Severity.ERROR:
            rules = blocking.setdefault(_finding_object(f), [])
            if f.rule not in rules:
                rules.append(f.rule)
    return [{"cluster": w.context, "kind": w.kind, "namespace": w.namespace, "name": w.name,
             "file": w.file, "state": w.state, "gpus": w.gpus,
             "blocked_by": blocking.get(_workload_object(w), [])} for w in report.workloads]


def _finding_object(f: Finding) -> ObjectKey:
    if f.kind is None:  # template text: its chart, or its file outside a chart
        return ("template", f.template or f.file)
    return (f.source, f.file if f.source == "file" else None, f.kind, f.namespace, f.name)


def _workload_object(w: WorkloadStatus) -> ObjectKey:
    if w.kind in ("HelmChart", "Template") and w.namespace is None:
        return ("template", w.file)
    return (w.source, w.file if w.source == "file" else None, w.kind, w.namespace, w.name)


def rules_data(report: Report) -> dict[str, dict[str, str]]:
    """Name and category of each rule the findings and waivers name (for grouping)."""
    named = {f.rule for f in report.findings} | {w.finding.rule for w in report.waived}
    return {r.id: {"name": r.name, "category": r.category}
            for r in report.rules if r.id in named}


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
        # the agreed name (gpudra report merge, html): `cluster` already holds the live facts
        **({"cluster_name": f.context} if f.context is not None else {}),
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
    if e.context is not None:
        data["cluster_name"] = e.context
    return data


def render(report: Report, options: RenderOptions) -> str:
    return json_text.dumps(as_data(report))
