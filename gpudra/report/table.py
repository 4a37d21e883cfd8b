"""`-o table` (default): findings grouped by file, then errors, then migration progress.

Every piece of user text (file names, messages, object and template names, error messages) goes
into a rich `Text`, never into a markup string: a path such as ``[/srv/chart]`` would otherwise
be read as a closing tag, and a tag-like name would silently vanish.
"""

from __future__ import annotations

import io
import re
import shlex
from collections import Counter
from itertools import groupby
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpudra.k8s.charts import helm_renders
from gpudra.results.model import MOST_SEVERE_FIRST, Finding, Report
from gpudra.k8s.objects import plural
from gpudra.printable import file_name, quote_name
from gpudra.report import RenderOptions
from gpudra.report.layout import Paragraph, Row, render_rows, wrap_text
from gpudra.report.summary import held_back, severity_counts, summarize, unchecked_words

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
# Without a width (stdout is no terminal and COLUMNS is unset) nothing wraps: a line is as long
# as its content, so files, pipes and `less` get every value whole. Rich needs some width; this
# one no line reaches, and tables do not expand to it.
UNWRAPPED = 1 << 20


class _WholeWords(Console):
    """Wraps at blanks and never inside a word: a word longer than the width runs past it
    (rich's default folds it, `NVIDIA_VISIBLE_DEVI` / `CES`), and nothing is cropped."""

    def print(self, *objects: Any, **options: Any) -> None:
        if len(objects) == 1 and isinstance(objects[0], (str, Text)) and not options \
                and self.width < UNWRAPPED:
            line = objects[0] if isinstance(objects[0], Text) else Text(objects[0])
            for piece in wrap_text(line, self.width):
                super().print(piece, no_wrap=True, overflow="ignore", crop=False)
            return
        options.setdefault("overflow", "ignore")
        options.setdefault("crop", False)
        super().print(*objects, **options)


def console_for(buffer: IO[str], color: bool, width: int | None) -> Console:
    """A console that writes to `buffer`: `width` columns, or no wrapping when None."""
    # markup/emoji off as well, so that a plain string added later cannot bring the bug back.
    return _WholeWords(file=buffer, force_terminal=color, no_color=not color,
                       width=width or UNWRAPPED, highlight=False, soft_wrap=False,
                       markup=False, emoji=False)


def render(report: Report, options: RenderOptions, context: str | None = None) -> str:
    """The audit as a table; `context`: the cluster's, when one of several (its hints name
    it)."""
    if report.clusters:
        return _render_clusters(report, options)
    buffer = io.StringIO()
    console = console_for(buffer, options.color, options.width)
    if report.cluster_read is not None:
        console.print(Text(report.cluster_read.describe(), style="dim"))
        console.print()
    findings = sorted(report.findings, key=_group) if report.source == "cluster" \
        else report.findings
    for heading, group in groupby(findings, key=_group):
        console.print(Text(heading, style="bold underline"))
        rows = []
        for f in group:
            obj = "/".join(x for x in (f.kind, f.name) if x) or "-"
            # The template in brackets is the documented form (docs/quickstart.md).
            message = f.message + (f"  [{f.template}]" if f.template else "") + _live(f)
            rows.append(Row((Text(str(f.line or ""), style="dim"),
                             Text(f.severity.value, style=_STYLE[f.severity.value]),
                             Text(f.rule), Text(obj)), (Paragraph(message),)))
        # Wrapped between words, never inside a name or an expression, never cut: users
        # copy them (gpudra.report.layout).
        for line in render_rows(rows, options.width, justify=("right",)):
            console.print(line, no_wrap=True, overflow="ignore", crop=False)
        console.print()
    if report.errors:
        console.print(Text("Inputs that could not be read", style="bold red"))
        for e in report.errors:
            console.print(Text(f"  {e.where}: {e.message}"))
        console.print()
    if report.skipped and options.verbose:
        console.print(Text("Skipped: not Kubernetes objects", style="bold"))
        for s in report.skipped:
            console.print(Text(f"  {quote_name(s.file)}:{s.line}: {s.reason}"))
        console.print()
    _summary(console, report, options.inputs, context)
    # Rich pads cells to the full width; trailing blanks only get in the way of copy and diff.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _render_clusters(report: Report, options: RenderOptions) -> str:
    """A multi-cluster audit: each cluster's report under its name, then one line per cluster
    and the totals."""
    buffer = io.StringIO()
    console = console_for(buffer, options.color, options.width)
    for audit in report.clusters:
        console.print(Text(f"Cluster {audit.name}", style="bold reverse"))
        # already styled: not through rich again; its hints name its context
        buffer.write(render(audit.report, options, audit.name))
        console.print()
    console.print(Text(f"Clusters ({len(report.clusters)})", style="bold"))
    table = Table(box=None, padding=(0, 2), pad_edge=False)
    for column in ("  context", "findings", "GPU workloads", "migrated", "read"):
        table.add_column(column, justify="left" if column in ("  context", "read") else "right")
    for audit in report.clusters:
        s = summarize(audit.report)
        migrated = "-" if s.percent_migrated is None else f"{s.percent_migrated:.0f}%"
        read = Text("not read", style="bold red") if audit.error else \
            Text(f"partly ({s.errors} unreadable)", style="yellow") if s.errors else Text("yes")
        table.add_row(Text(f"  {audit.name}"), str(sum(s.findings.values())),
                      str(s.gpu_workloads), migrated, read)
    # Names whole at any width: past it rather than cut with an ellipsis or folded.
    console_for(buffer, options.color, None).print(table)
    console.print()
    totals = summarize(report)
    counts = severity_counts(totals.findings) or "no findings"
    migrated = "" if totals.percent_migrated is None else \
        f"; migrated: {totals.percent_migrated:.0f}%"
    unread = sum(1 for audit in report.clusters if audit.error)
    console.print(Text("Total", style="bold"))
    console.print(Text(f"  {len(report.clusters) - unread} of "
                       f"{plural(len(report.clusters), 'cluster')} read, {totals.read}: "
                       f"{counts}; GPU workloads: {totals.gpu_workloads}; on DRA: "
                       f"{totals.on_dra}; through the bridge: {totals.on_bridge}; still on the "
                       f"device plugin: {totals.on_device_plugin}{migrated}"))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _group(f: Finding) -> str:
    """Manifest findings by file; live ones by namespace (cluster-scoped objects apart)."""
    if f.source == "cluster":
        return f"namespace {f.namespace}" if f.namespace else "cluster-scoped objects"
    return file_name(f.file) if f.file else "-"


def _live(f: Finding) -> str:
    """What the cluster says of a workload: its pods, and where its manifest must change."""
    info = f.cluster
    if info is None or f.kind == "Node":
        return ""
    parts = []
    if info.replicas is not None or info.running_pods != 0:
        replicas = f"{plural(info.replicas, 'replica')}, " if info.replicas is not None else ""
        nodes = f" on {', '.join(info.nodes)}" if info.nodes else ""
        running = "running pods unknown" if info.running_pods is None \
            else f"{info.running_pods} running"
        parts.append(f"{replicas}{running}{nodes}")
    if info.bridge_pods:
        parts.append(f"{info.bridge_pods} served by DRA through the bridge")
    if info.controller_gone:
        parts.append(f"its controller {info.controller_gone} no longer exists")
    if info.managed_by:
        parts.append(f"change it in: {info.managed_by}")
    return f"  ({'; '.join(parts)})" if parts else ""


def _summary(console: Console, report: Report, inputs: tuple[str, ...] = (),
             context: str | None = None) -> None:
    s = summarize(report)
    counts = severity_counts(s.findings) or "no findings"
    console.print(Text("Summary", style="bold"))
    console.print(f"  {s.read}: "
                  f"{counts}" + (f", {s.suppressed} suppressed" if s.suppressed else "")
                  + (f", {s.errors} unreadable" if s.errors else "")
                  + "".join(f", {fact}" for fact in held_back(report)))
    for refused in report.not_read:
        console.print(f"  not read (a namespaced role may not): {refused.object}; without it: "
                      f"{refused.adds}")
    if s.findings.get("info"):
        console.print("  (info findings are not problems: they say what the move to DRA changes "
                      "or keeps)")
    if any("CDI" in f.message for f in report.findings):
        console.print("  (CDI: the Container Device Interface, through which DRA drivers hand "
                      "devices to containers)")
    if not s.gpu_workloads:
        console.print("  No GPU workloads found" + (" in what could be read." if s.incomplete
                                                    else "."))
        return
    bridge = f"; through the bridge: {s.on_bridge}" if s.on_bridge else ""
    console.print(f"  GPU workloads: {s.gpu_workloads}; on DRA (Dynamic Resource Allocation): "
                  f"{s.on_dra}{bridge}; still on the device plugin: {s.on_device_plugin}; "
                  f"migrated: {s.percent_migrated:.0f}%")
    if s.advice:
        console.print(Text(f"  {s.advice}"))
    if s.unchecked or s.vouched:
        console.print(Text(f"  {unchecked_words(s)}"))
    table = Table(box=None, padding=(0, 2), pad_edge=False)
    table.add_column("  namespace")
    table.add_column("GPU workloads", justify="right")
    table.add_column("on DRA", justify="right")
    if s.on_bridge:
        table.add_column("bridge", justify="right")
    table.add_column("migrated", justify="right")
    for ns in s.namespaces:
        bridged = (str(ns.on_bridge),) if s.on_bridge else ()
        table.add_row(Text(f"  {ns.namespace}"), str(ns.gpu_workloads), str(ns.on_dra),
                      *bridged, f"{ns.percent_migrated:.0f}%")
    # Names whole at any width: past it rather than cut with an ellipsis or folded.
    console_for(console.file, not console.no_color, None).print(table)
    steps = next_steps(report, inputs, context)
    if steps:
        console.print()
        console.print(Text("Next", style="bold"))
        width = max(len(command) for command, _ in steps)
        for command, why in steps:
            console.print(Text(f"  {command:<{width}}  # {why}"))


_SLUG = re.compile(r"[^A-Za-z0-9_.-]")


def next_steps(report: Report, inputs: tuple[str, ...], context: str | None = None
               ) -> list[tuple[str, str]]:
    """What to run after this audit: the most frequent of the most severe rules explained,
    the conversion previewed, the cluster checked."""
    steps = []
    if report.findings:
        top = next(sev for sev in MOST_SEVERE_FIRST
                   if any(f.severity is sev for f in report.findings))
        rule = Counter(f.rule for f in report.findings if f.severity is top).most_common(1)[0][0]
        steps.append((f"gpudra explain {rule}", "why it matters and how to fix it"))
    # In a multi-cluster audit each cluster's hints name its context: they must run as shown.
    where = f" --context {shlex.quote(context)}" if context else ""
    # and write apart: --from-cluster wants a new or empty directory for each
    into = f"converted/{_SLUG.sub('-', context).lstrip('.') or 'cluster'}/" if context \
        else "converted/"
    if any(w.device_plugin for w in report.workloads):
        if report.source == "cluster":
            steps.append((f"gpudra convert --from-cluster{where} --output-dir {into}",
                          "the live GPU workloads as converted manifests"))
        elif inputs != ("-",) and _convert_can_rewrite(report):  # a pipe cannot be read again
            paths = " ".join(shlex.quote(p) for p in inputs) or "PATH"
            steps.append((f"gpudra convert --diff {paths}",
                          "preview the rewrite to ResourceClaims; without --diff it writes"))
        steps.append((f"gpudra preflight{where}", "is the cluster ready for DRA?"))
    return steps


def _convert_can_rewrite(report: Report) -> bool:
    """A workload on the device plugin that convert rewrites: one a Helm chart renders is
    blocked (the chart's values or templates must change), so a tree of charts has none."""
    return any(w.device_plugin and not (w.file and w.file != "-" and helm_renders(w.file))
               for w in report.workloads)

