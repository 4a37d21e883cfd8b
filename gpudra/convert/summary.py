"""What convert did, as text for people and as data for scripts (`-o json`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpudra.convert.converter import ConvertReport
from gpudra.convert.writer import unified_diff
from gpudra.objects import plural
from gpudra.printable import quote_name

STRATEGIES = ("rewrite", "quota", "bridge", "manual", "blocked")


def as_data(report: ConvertReport, *, with_diffs: bool, written: bool) -> dict[str, Any]:
    return {
        "workloads": [
            {"file": r.file, "kind": r.kind or None, "name": r.name, "namespace": r.namespace,
             "strategy": r.strategy, "reason": r.reason, "notes": list(r.notes),
             "created": list(r.created)}
            for r in report.results
        ],
        "files": [
            {"file": c.label, "created": c.created,
             "written": written and c.label not in report.unwritten,
             **({"diff": unified_diff(c.label, c.old, c.new, c.created)} if with_diffs else {})}
            for c in report.changes
        ],
        "errors": [{"file": e.file, "line": e.line, "message": e.message} for e in report.errors],
        "summary": summary_counts(report),
    }


def summary_counts(report: ConvertReport) -> dict[str, int]:
    counts = Counter(r.strategy for r in report.results)
    changed = len(report.changes) - len(report.unwritten)
    return {"files_scanned": report.files_scanned, "files_changed": changed,
            "errors": len(report.errors), **{s: counts.get(s, 0) for s in STRATEGIES}}


def as_text(report: ConvertReport, *, action: str) -> str:
    """A short account: one line per workload that needed attention, then the totals."""
    lines: list[str] = []
    for r in report.results:
        obj = "/".join(x for x in (r.namespace, r.kind, r.name) if x) or "-"
        detail = r.reason or (", ".join(r.created) if r.created else "")
        lines.append(f"{r.strategy:<8} {quote_name(r.file)}  {obj}"
                     + (f": {detail}" if detail else ""))
        lines += [f"         note: {note}" for note in r.notes]
    for e in report.errors:
        lines.append(f"error    {e.where}: {e.message}")
    counts = summary_counts(report)
    parts = [f"{counts[s]} {s}" for s in STRATEGIES if counts[s]]
    unwritten = f" ({len(report.unwritten)} not written)" if report.unwritten else ""
    lines.append(f"{plural(counts['files_scanned'], 'file')} scanned, "
                 f"{plural(counts['files_changed'], 'file')} {action}{unwritten}"
                 + (f"; workloads: {', '.join(parts)}" if parts else "; nothing to convert"))
    return "\n".join(lines) + "\n"

