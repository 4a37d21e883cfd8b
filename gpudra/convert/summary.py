"""What convert did, as text for people and as data for scripts (`-o json`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from gpudra.convert.converter import ConvertReport
from gpudra.convert.writer import unified_diff
from gpudra.results.model import ClusterRead
from gpudra.k8s.objects import plural
from gpudra.report.formats import Renderer, RenderOptions
from gpudra.report import json_text
from gpudra.report.json_report import skipped_data
from gpudra.report.summary import files_read
from gpudra.printable import REDACTED, escape_text, quote_name, redact, redacted_lines

STRATEGIES = ("rewrite", "repair", "quota", "bridge", "manual", "ignored", "waived",
              "blocked")


@dataclass(frozen=True, slots=True)
class ConvertSummary:
    """What `convert -o` renders (gpudra.cli.formats, Kind.CONVERT)."""

    report: ConvertReport
    written: bool      # the changes were written (not --diff, --check or stdin)
    with_diffs: bool   # --diff: the JSON carries each file's diff
    cluster: ClusterRead | None = None  # --from-cluster: the cluster read, and when


def render_table(summary: ConvertSummary, options: RenderOptions) -> str:
    action = "changed" if summary.written else "would change"
    read = f"{summary.cluster.describe()}\n" if summary.cluster is not None else ""
    return read + as_text(summary.report, action=action, verbose=options.verbose)


def render_json(summary: ConvertSummary, options: RenderOptions) -> str:
    data = as_data(summary.report, with_diffs=summary.with_diffs, written=summary.written)
    if summary.cluster is not None:
        data = {"cluster": summary.cluster.as_data(), **data}
    # json_text, not json.dumps: its \\u escapes (`us\\u00e9r:pw@`) hid credentials from redaction
    return json_text.dumps(data)


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
             **(_diff_data(unified_diff(c.label, c.old, c.new, c.created))
                if with_diffs else {})}
            for c in report.changes
        ],
        "errors": [{"file": e.file, "line": e.line, "message": e.message} for e in report.errors],
        "skipped": [skipped_data(s) for s in report.skipped],
        "summary": summary_counts(report),
    }


def _diff_data(diff: str) -> dict[str, Any]:
    # Every output is redacted, the diffs in it too: the diff as printed, and which of its
    # lines show a credential as ***, since those do not apply as printed.
    return {"diff": redact(diff), "diff_redacted_lines": list(redacted_lines(diff))}


def redaction_note(label: str, diff: str) -> str | None:
    """The line convert says on stderr when a printed diff shows a credential as ***: which
    lines, and that the diff does not apply as printed. None when nothing was redacted."""
    lines = redacted_lines(diff)
    if not lines:
        return None
    where = ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, lines))
    return (f"{quote_name(label)}: the diff shows a credential as {REDACTED} on its {where} "
            "(credentials are never "
            "printed: docs/security.md), so it does not apply as printed; `gpudra convert` "
            "without --diff writes the file itself")


def summary_counts(report: ConvertReport) -> dict[str, int]:
    counts = Counter(r.strategy for r in report.results)
    changed = len(report.changes) - len(report.unwritten)
    return {"files_scanned": report.files_scanned, "documents_parsed": report.documents_parsed,
            "skipped": len(report.skipped), "files_changed": changed,
            "errors": len(report.errors), **{s: counts.get(s, 0) for s in STRATEGIES}}


def as_text(report: ConvertReport, *, action: str, verbose: bool = False) -> str:
    """A short account: one line per workload that needed attention, then the totals. Input
    errors are not in it: they go to stderr, as every command's do."""
    lines: list[str] = []
    for r in report.results:
        # Names, reasons and notes quote the manifest: escaped, each stays on its line.
        obj = escape_text("/".join(x for x in (r.namespace, r.kind, r.name) if x) or "-")
        detail = escape_text(r.reason or (", ".join(r.created) if r.created else ""))
        lines.append(f"{r.strategy:<8} {quote_name(r.file)}  {obj}"
                     + (f": {detail}" if detail else ""))
        lines += [f"         note: {escape_text(note)}" for note in r.notes]
    if verbose:
        lines += [f"skipped  {quote_name(s.file)}:{s.line}: {escape_text(s.reason)}"
                  for s in report.skipped]
    counts = summary_counts(report)
    parts = [f"{counts[s]} {s}" for s in STRATEGIES if counts[s]]
    read = files_read(report.files_scanned, report.documents_parsed, len(report.skipped))
    unwritten = f" ({len(report.unwritten)} not written)" if report.unwritten else ""
    changed = f"{plural(counts['files_changed'], 'file')} {action}{unwritten}"
    if report.inputs and all(e.path is None for e in report.inputs):  # `-`: stdout is the file
        read = f"stdin: {plural(report.documents_parsed, 'document')} parsed" + \
            (f", {len(report.skipped)} skipped" if report.skipped else "")
        changed = "converted on stdout" if report.changes else "unchanged, echoed on stdout"
    lines.append(f"{read}; {changed}"
                 + (f"; workloads: {', '.join(parts)}" if parts else "; nothing to convert"))
    return "\n".join(lines) + "\n"



# `convert -o`'s words and their renderers, in the CLI's order (gpudra.cli.formats lists
# them; convert checks its request's word against them before it reads anything).
RENDERERS: dict[str, Renderer] = {"table": render_table, "json": render_json}
