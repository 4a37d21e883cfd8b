"""`-o html`: one self-contained page a manager reads without a terminal.

Rendered from the JSON report's data (gpudra.report.json_report.as_data, or a merged report of
several clusters), never from the audit itself, so `gpudra report merge` renders the same page.
Everything is inline (CSS, SVG, a few lines of script that open folded sections for printing)
and nothing is loaded: the page works offline and from a CI artefact.

Every chart is an SVG with `role="img"` whose caption says in words what it shows, and a
table beside it holds the numbers. Counts are always exact; lists are cut: findings are grouped
by rule with the first `FINDINGS_PER_RULE` of each, workloads are listed blocked first up to
`WORKLOAD_ROWS`, so 10,000 findings stay well under 1 MB. Every string from a manifest or a
cluster goes through `html.escape`.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

from gpudra.results.model import Report
from gpudra.k8s.objects import noun_for, plural
from gpudra.printable import escape_text
from gpudra.report import RenderOptions
from gpudra.report.verdicts import STATUSES, repeats

FINDINGS_PER_RULE = 20
WORKLOAD_ROWS = 500
SEVERITIES = ("error", "warning", "info")
STATES = (("device_plugin", "device plugin"), ("bridge", "bridge"), ("claims", "claims"))
# Opens folded sections before printing, so that paper shows what the screen can unfold.
_PRINT_SCRIPT = ('addEventListener("beforeprint",function(){document.querySelectorAll('
                 '"details").forEach(function(d){d.open=true})})')


def render(report: Report, options: RenderOptions) -> str:
    from gpudra.report.json_report import as_data

    return render_data(as_data(report), tool_version=options.tool_version)


def e(value: Any) -> str:
    """Text for HTML (and SVG) content and attribute values; control and bidirectional
    characters (file names included) escaped as everywhere (gpudra.printable)."""
    return html.escape(escape_text("" if value is None else str(value)), quote=True)


def percent_text(value: float | None) -> str:
    """A whole percent, as the table, Markdown and GitHub formats print it (issue 36, item 5:
    the page said 16.7% where the table said 17%)."""
    if value is None:
        return "unknown"
    return f"{value:.0f}%"


def render_fleet(data: Mapping[str, Any], options: RenderOptions) -> str:
    """The page for merged reports (`report merge -o html`)."""
    return render_data(data, tool_version=options.tool_version)


def render_data(data: Mapping[str, Any], *, tool_version: str = "") -> str:
    """The page for a JSON report (one cluster, a tree, or a merge of several)."""
    summary = data["summary"]
    clusters = data.get("clusters") or []
    findings = data.get("findings", [])
    rules = data.get("rules", {})
    body = [
        _header(data, summary, clusters, tool_version),
        _states_section(summary),
        _clusters_section(clusters) if clusters else "",
        _namespaces_section(summary, clusters),
        _findings_section(findings, rules, bool(clusters)),
        _workloads_section(data.get("workloads", []), bool(clusters)),
        _errors_section(data.get("errors", []), bool(clusters)),
        _waived_section(data.get("waived", [])),
    ]
    title = "gpudra migration report" + (f": {plural(len(clusters), 'cluster')}" if clusters
                                         else "")
    return _page(title, "".join(body))


# What a verdict's id and title are, per command (issue 36, item 5: verify's page labelled a
# workload's name and kind "Id" and "Title").
_VERDICT_NAMES = {"preflight": ("Check", "Title"), "plan": ("Workload", "Kind"),
                  "verify": ("Workload", "Kind")}


def render_outcomes(data: Mapping[str, Any], tool: str, item_key: str,
                    *, tool_version: str = "") -> str:
    """The page for preflight, plan or verify: verdicts by outcome, each with its fix."""

    items = data.get(item_key, [])
    counts = Counter(item.get("outcome") for item in items)
    parts = [(f"<header><h1>gpudra {e(tool)}</h1>{_generated(tool_version)}"
              f"{_cluster_read(data.get('cluster'))}"),
             _figures([(s, counts.get(s, 0), f"outcome-{s}") for s in STATUSES]),
             "</header>"]
    caption = ", ".join(f"{counts.get(s, 0):,} {s}" for s in STATUSES)
    parts.append(_section("Verdicts", _bar_figure(
        "outcomes", [(s, counts.get(s, 0)) for s in STATUSES], f"Verdicts: {caption}.")))
    rows = [(f'<td class="nowrap o-{e(i.get("outcome"))}">{e(i.get("outcome"))}'
             + (" (skipped)" if i.get("skipped") else "") + "</td>",
             f'<td class="nowrap">{e(i.get("id"))}</td>',
             f"<td>{e(i.get('title'))}</td><td>{e(i.get('subject') or '')}</td>",
             "<td>" + _lines([i.get("message"), *(d for d in i.get("details", [])
                                                   if not repeats(d, i.get("message", "")))])
             + "</td>",
             f"<td>{e(i.get('remediation') or '') if i.get('outcome') != 'pass' else ''}</td>")
            for i in sorted(items, key=lambda i: STATUSES.index(i.get("outcome"))
                            if i.get("outcome") in STATUSES else len(STATUSES))]
    parts.append(_section(f"Every verdict ({len(items):,})", _table(
        ("Outcome", *_VERDICT_NAMES.get(tool, ("Check", "Title")), "Subject", "What was found",
         "Fix"),
        ["".join(r) for r in rows], "verdicts")))
    parts.append(_errors_section(data.get("errors", []), False))
    return _page(f"gpudra {tool}", "".join(parts))


# --- page frame -------------------------------------------------------------------------------

def _page(title: str, body: str) -> str:
    style = resources.files("gpudra.report").joinpath("html.css").read_text(encoding="utf-8")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{style}</style></head>"
            f"<body><main>{body}</main><script>{_PRINT_SCRIPT}</script></body></html>\n")


def _generated(tool_version: str) -> str:
    return f'<p class="meta">Written by gpudra {e(tool_version)}.</p>' if tool_version else ""


def _cluster_read(read: Any) -> str:
    """The cluster a live report read and when (the JSON's `cluster`); nothing for files."""
    if not isinstance(read, Mapping):
        return ""
    context = read.get("context")
    who = f'context "{context}"' if context is not None else "the in-cluster service account"
    return (f'<p class="meta">Cluster: {e(who)} ({e(read.get("server"))}), read '
            f'<time>{e(read.get("read_at"))}</time>.</p>')


def _section(heading: str, content: str, id: str = "") -> str:
    anchor = f' id="{e(id)}"' if id else ""
    return f"<section{anchor}><h2>{e(heading)}</h2>{content}</section>"


def _table(header: Sequence[str], rows: Iterable[str], id: str = "",
           caption: str = "") -> str:
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in header)
    anchor = f' id="{e(id)}"' if id else ""
    cap = f"<caption>{e(caption)}</caption>" if caption else ""
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    return f"<table{anchor}>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figures(items: Sequence[tuple[str, Any, str]]) -> str:
    cells = "".join(f'<div><dt>{e(label)}</dt><dd id="{e(id)}">{e(value)}</dd></div>'
                    for label, value, id in items)
    return f'<dl class="figures">{cells}</dl>'


def _lines(texts: Iterable[Any]) -> str:
    return "<br>".join(e(t) for t in texts if t)


# --- charts -----------------------------------------------------------------------------------

def _bar_figure(id: str, parts: Sequence[tuple[str, int]], caption: str) -> str:
    """A stacked bar (SVG) of `parts` with its legend, captioned in words."""
    total = sum(n for _, n in parts)
    x = 0.0
    rects = []
    for key, n in parts:
        if n:
            width = 1000.0 * n / total
            rects.append(f'<rect class="c-{e(key)}" x="{x:.1f}" y="0" width="{width:.1f}" '
                         f'height="40"><title>{e(key.replace("_", " "))}: {n:,}</title></rect>')
            x += width
    if not rects:
        rects.append('<rect class="c-none" x="0" y="0" width="1000" height="40"/>')
    legend = "".join(f'<li><span class="key c-{e(k)}"></span>{e(k.replace("_", " "))}: '
                     f'<span id="{e(id)}-{e(k)}">{n:,}</span></li>' for k, n in parts)
    return (f'<figure id="{e(id)}"><svg viewBox="0 0 1000 40" preserveAspectRatio="none" '
            f'role="img" aria-labelledby="{e(id)}-caption">{"".join(rects)}</svg>'
            f'<ul class="legend">{legend}</ul>'
            f'<figcaption id="{e(id)}-caption">{e(caption)}</figcaption></figure>')


def _progress(percent: float | None) -> str:
    """A progress bar cell: the number in text, the bar for the eye."""
    width = 0.0 if percent is None else max(0.0, min(100.0, percent))
    text = percent_text(percent)
    return (f'<td class="progress"><span class="bar" role="img" aria-label="{e(text)} '
            f'migrated"><span style="width:{width:.1f}%"></span></span> '
            f'<span class="pct">{e(text)}</span></td>')


# --- sections ---------------------------------------------------------------------------------

def _header(data: Mapping[str, Any], summary: Mapping[str, Any],
            clusters: Sequence[Mapping[str, Any]], tool_version: str) -> str:
    counts = summary["findings"]
    objects, files, documents = (summary[key] for key in ("objects_read", "files_scanned",
                                                          "documents_parsed"))
    read = (f"{objects:,} {noun_for(objects, 'object')} read from the cluster"
            if summary["source"] == "cluster" else
            f"{files:,} {noun_for(files, 'file')} scanned, "
            f"{documents:,} {noun_for(documents, 'document')} parsed")
    if clusters:
        failed = sum(1 for c in clusters if c.get("error"))
        read = f"{plural(len(clusters), 'cluster')}" + (f" ({failed} could not be read)" if failed
                                               else "") + f"; {read}"
    held = []
    if data.get("waived"):
        held.append(f"{len(data['waived']):,} waived")
    if summary.get("suppressed"):
        held.append(f"{summary['suppressed']:,} suppressed")
    baseline = data.get("baseline")
    if baseline:
        held.append(f"{baseline['known']:,} known in the baseline, "
                    f"{baseline['fixed']:,} baseline "
                    f"{noun_for(baseline['fixed'], 'entry', 'entries')} fixed")
    figures = _figures([
        ("GPU workloads", f"{summary['gpu_workloads']:,}", "gpu-workloads"),
        ("Migrated to DRA", percent_text(summary["percent_migrated"]), "percent-migrated"),
        *((f"{s.capitalize()}s" if s != "info" else "Info", f"{counts.get(s, 0):,}",
           f"findings-{s}") for s in SEVERITIES),
        ("Unreadable inputs", f"{summary['errors']:,}", "input-errors"),
    ])
    title = "gpudra migration report" + (" (fleet)" if clusters else "")
    return (f"<header><h1>{title}</h1><p class=\"meta\">{e(read)}"
            + (f"; {e(', '.join(held))}" if held else "") + f".</p>{_generated(tool_version)}"
            f"{_cluster_read(data.get('cluster'))}{figures}</header>")


def _state_parts(summary: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [("device_plugin", summary["on_device_plugin"]), ("bridge", summary["on_bridge"]),
            ("claims", summary["on_dra"])]


def _states_section(summary: Mapping[str, Any]) -> str:
    parts = _state_parts(summary)
    caption = (f"{summary['gpu_workloads']:,} GPU workloads: "
               f"{parts[0][1]:,} on the device plugin, {parts[1][1]:,} served by DRA through "
               f"the bridge, {parts[2][1]:,} on claims "
               f"({percent_text(summary['percent_migrated'])} migrated).")
    return _section("Where the GPU workloads are", _bar_figure("states", parts, caption),
                    "migration")


def _clusters_section(clusters: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in clusters:
        s = c["summary"]
        counts = s["findings"]
        problem = f'<td class="o-fail">{e(c["error"])}</td>' if c.get("error") else \
            f"<td>{s['errors']:,} unreadable inputs</td>" if s["errors"] else "<td></td>"
        read = c.get("cluster")
        where = (f'<td>{e(read.get("server"))}, <time>{e(read.get("read_at"))}</time></td>'
                 if isinstance(read, Mapping) else "<td></td>")
        rows.append(f'<th scope="row">{e(c["name"])}</th><td>{s["gpu_workloads"]:,}</td>'
                    f"<td>{s['on_device_plugin']:,}</td><td>{s['on_bridge']:,}</td>"
                    f"<td>{s['on_dra']:,}</td>{_progress(s['percent_migrated'])}"
                    + "".join(f"<td>{counts.get(sev, 0):,}</td>" for sev in SEVERITIES)
                    + problem + where)
    return _section(f"Clusters ({len(clusters)})", _table(
        ("Cluster", "GPU workloads", "Device plugin", "Bridge", "Claims", "Migrated",
         "Errors", "Warnings", "Info", "Problem", "Read from"), rows, "clusters"), "by-cluster")


def _namespaces_section(summary: Mapping[str, Any],
                        clusters: Sequence[Mapping[str, Any]]) -> str:
    groups = ([(c["name"], c["summary"]["namespaces"]) for c in clusters] if clusters
              else [(None, summary["namespaces"])])
    rows = []
    for cluster, namespaces in groups:
        for ns in namespaces:
            on_dp = ns["gpu_workloads"] - ns["on_dra"] - ns["on_bridge"]
            rows.append((f"<td>{e(cluster)}</td>" if clusters else "")
                        + f'<th scope="row">{e(ns["namespace"])}</th>'
                        f"<td>{ns['gpu_workloads']:,}</td><td>{on_dp:,}</td>"
                        f"<td>{ns['on_bridge']:,}</td><td>{ns['on_dra']:,}</td>"
                        + _progress(ns["percent_migrated"]))
    if not rows:
        return _section("Migration progress by namespace", "<p>No GPU workloads found.</p>")
    header = (("Cluster",) if clusters else ()) + (
        "Namespace", "GPU workloads", "Device plugin", "Bridge", "Claims", "Migrated")
    return _section("Migration progress by namespace",
                    _table(header, rows, "namespaces"), "by-namespace")


def _findings_section(findings: Sequence[Mapping[str, Any]], rules: Mapping[str, Any],
                      by_cluster: bool) -> str:
    if not findings:
        return _section("Findings", "<p>No findings.</p>", "findings")
    by_category: dict[str, Counter[str]] = {}  # severity counts
    by_rule: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for f in findings:
        category = rules.get(f["rule"], {}).get("category", "other")
        by_category.setdefault(category, Counter())[f["severity"]] += 1
        by_rule.setdefault((f["rule"], f["severity"]), []).append(f)
    ordered = sorted(by_rule.items(), key=lambda kv: (SEVERITIES.index(kv[0][1]), kv[0][0]))
    parts = [_category_chart(by_category)]
    rule_rows = [f'<th scope="row"><a href="#rule-{e(rule)}-{e(sev)}">{e(rule)}</a></th>'
                 f"<td>{e(rules.get(rule, {}).get('name', ''))}</td>"
                 f'<td class="s-{e(sev)}">{e(sev)}</td><td>{len(items):,}</td>'
                 for (rule, sev), items in ordered]
    parts.append(_table(("Rule", "Name", "Severity", "Findings"), rule_rows, "rules",
                        "Findings by rule and severity"))
    for (rule, sev), items in ordered:
        parts.append(_rule_details(rule, sev, rules.get(rule, {}).get("name", ""), items,
                                   by_cluster))
    return _section(f"Findings ({len(findings):,})", "".join(parts), "findings")


def _category_chart(by_category: Mapping[str, Counter[str]]) -> str:
    ordered = sorted(by_category.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    widest = max(sum(c.values()) for _, c in ordered)
    height = 28 * len(ordered)
    bars = []
    for i, (category, counts) in enumerate(ordered):
        x, y = 0.0, i * 28
        for sev in SEVERITIES:
            if counts[sev]:
                width = 600.0 * counts[sev] / widest
                bars.append(f'<rect class="c-{sev}" x="{200 + x:.1f}" y="{y + 4}" '
                            f'width="{width:.1f}" height="20"><title>{e(category)}, {sev}: '
                            f'{counts[sev]:,}</title></rect>')
                x += width
        bars.append(f'<text x="192" y="{y + 19}" text-anchor="end">{e(category)}</text>'
                    f'<text x="{206 + x:.1f}" y="{y + 19}">{sum(counts.values()):,}</text>')
    caption = "Findings by category: " + "; ".join(
        f"{category} {sum(c.values()):,} ("
        + ", ".join(f"{c[s]:,} {s}" for s in SEVERITIES if c[s]) + ")"
        for category, c in ordered) + "."
    rows = [f'<th scope="row">{e(category)}</th>'
            + "".join(f"<td>{c[s]:,}</td>" for s in SEVERITIES)
            + f"<td>{sum(c.values()):,}</td>" for category, c in ordered]
    chart = (f'<figure id="categories"><svg viewBox="0 0 900 {height}" role="img" '
             f'aria-labelledby="categories-caption">{"".join(bars)}</svg>'
             f'<figcaption id="categories-caption">{e(caption)}</figcaption></figure>')
    return ('<div class="beside">' + chart + _table(
        ("Category", "Errors", "Warnings", "Info", "Total"), rows, "by-category",
        "Findings by category and severity") + "</div>")


def _rule_details(rule: str, severity: str, name: str, items: Sequence[Mapping[str, Any]],
                  by_cluster: bool) -> str:
    shown = items[:FINDINGS_PER_RULE]
    rows = [(f"<td>{e(f.get('cluster_name'))}</td>" if by_cluster else "")
            + f"<td>{e(_location(f))}</td><td>{e(_object(f))}</td><td>{e(f['message'])}</td>"
            for f in shown]
    header = (("Cluster",) if by_cluster else ()) + ("Where", "Object", "Message")
    more = len(items) - len(shown)
    note = (f'<p class="more">{more:,} more {e(rule)} findings not listed here; the JSON '
            "report lists every one.</p>" if more else "")
    hint = items[0].get("hint")
    fix = f'<p class="fix">Fix: {e(hint)}</p>' if hint else ""
    return (f'<details id="rule-{e(rule)}-{e(severity)}"><summary><span class="s-{e(severity)}">'
            f"{e(severity)}</span> {e(rule)} {e(name)}: {len(items):,}</summary>{fix}"
            f"{_table(header, rows)}{note}</details>")


def _location(f: Mapping[str, Any]) -> str:
    if f.get("file"):
        return f"{f['file']}:{f['line']}" if f.get("line") else f["file"]
    return "cluster"


def _object(f: Mapping[str, Any]) -> str:
    return "/".join(str(x) for x in (f.get("namespace"), f.get("kind"), f.get("name")) if x) \
        or (f.get("template") or "-")


def _workload_order(w: Mapping[str, Any]) -> tuple[bool, int, str, str, str, str]:
    state = [k for k, _ in STATES].index(w["state"])
    return (not w["blocked_by"], state, w.get("cluster") or "", w.get("namespace") or "",
            w["kind"], w.get("name") or "")


def _workloads_section(workloads: Sequence[Mapping[str, Any]], by_cluster: bool) -> str:
    if not workloads:
        return _section("GPU workloads", "<p>No GPU workloads found.</p>", "workloads")
    blocked = sum(1 for w in workloads if w["blocked_by"])
    shown = sorted(workloads, key=_workload_order)[:WORKLOAD_ROWS]
    labels = dict(STATES)
    rows = []
    for w in shown:
        gpus = ("in its claims" if w["state"] == "claims" and not w["gpus"]
                else "unknown" if w["gpus"] is None else w["gpus"])
        where = w.get("file") or "cluster"
        rows.append((f"<td>{e(w.get('cluster'))}</td>" if by_cluster else "")
                    + f"<td>{e(w.get('namespace') or '')}</td><td>{e(w['kind'])}</td>"
                    f"<td>{e(w.get('name') or '')}</td>"
                    f'<td class="c-{e(w["state"])}-text">{e(labels[w["state"]])}</td>'
                    f"<td>{e(gpus)}</td><td>{e(', '.join(w['blocked_by']))}</td>"
                    f"<td>{e(where)}</td>")
    header = (("Cluster",) if by_cluster else ()) + (
        "Namespace", "Kind", "Name", "State", "GPUs per pod", "Blocked by", "Where")
    intro = (f'<p><span id="workloads-blocked">{blocked:,}</span> of '
             f'<span id="workloads-total">{len(workloads):,}</span> GPU workloads are blocked '
             "by an error finding (fix those before converting).</p>")
    if len(shown) < len(workloads):
        intro += (f'<p class="more">The first {len(shown):,} are listed, blocked ones first; '
                  "the JSON report lists every one.</p>")
    return _section(f"GPU workloads ({len(workloads):,})",
                    intro + _table(header, rows, "workload-list"), "workloads")


def _errors_section(errors: Sequence[Mapping[str, Any]], by_cluster: bool) -> str:
    if not errors:
        return ""
    rows = [(f"<td>{e(x.get('cluster_name'))}</td>" if by_cluster else "")
            + f"<td>{e(_error_where(x))}</td><td>{e(x['message'])}</td>" for x in errors]
    header = (("Cluster",) if by_cluster else ()) + ("Input", "Error")
    return _section(f"Inputs that could not be read ({len(errors):,})",
                    "<p>The counts above leave these out: the result is incomplete.</p>"
                    + _table(header, rows, "input-error-list"), "errors")


def _error_where(x: Mapping[str, Any]) -> str:
    if x.get("file"):
        return f"{x['file']}:{x['line']}" if x.get("line") else x["file"]
    return x.get("object") or "-"


def _waived_section(waived: Sequence[Mapping[str, Any]]) -> str:
    if not waived:
        return ""
    rows = [f"<td>{e(w['finding']['rule'])}</td><td>{e(_object(w['finding']))}</td>"
            f"<td>{e(w['reason'])}</td><td>{e(w.get('owner') or '')}</td>"
            f"<td>{e(w.get('expires') or 'never')}</td>" for w in waived[:WORKLOAD_ROWS]]
    more = len(waived) - len(rows)
    note = f'<p class="more">{more:,} more; the JSON report lists every one.</p>' if more else ""
    return _section(f"Waived findings ({len(waived):,})", "<details><summary>Waivers in "
                    ".gpudra.yaml cover these; they count nowhere above.</summary>"
                    + _table(("Rule", "Object", "Reason", "Owner", "Expires"), rows)
                    + note + "</details>", "waived")
