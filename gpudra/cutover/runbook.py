"""The cutover plan as a runbook: per wave the exact steps (labels that stop the device plugin
and start the DRA kubelet plugin on the wave's nodes, the manifests to apply, the verify gate,
the rollback: gpudra.cutover.steps, or gpudra.cutover.bridge_runbook under --strategy bridge),
as Markdown, JSON and a wave table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpudra.cutover.bridge import MAPPING_CLASS, BridgePlan
from gpudra.cutover.bridge_runbook import bridge_wave_steps
from gpudra.cutover.namespaces import guard_prerequisite
from gpudra.cutover.pools import RISK_NAMES, Workload
from gpudra.cutover.rides import GUARD_NOTE, NO_RIDER, ride_note
from gpudra.cutover.steps import STACK_LABEL, WaveContext, rewrite_wave_steps
from gpudra.cutover.waves import CutoverPlan, Side, Wave
from gpudra.results.model import ClusterRead
from gpudra.k8s.objects import as_mapping, plural
from gpudra.report import json_text
from gpudra.report.formats import Renderer, RenderOptions
from gpudra.k8s.managed import managed_by
from gpudra.report.markdown import escape_cell

MAX_LISTED = 20


def prerequisites(bridge: bool = False) -> list[str]:
    return [
        "Standalone device-plugin chart: keep it off nodes labelled for DRA: "
        "`helm upgrade nvdp nvdp/nvidia-device-plugin --reuse-values -f plugin-affinity.yaml` "
        f"where the values add to `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
        f"Execution.nodeSelectorTerms[*].matchExpressions` the expression "
        f"`{{key: {STACK_LABEL}, operator: NotIn, values: [dra]}}` (in every term). "
        "GPU Operator: nothing to do, its label below switches the plugin per node.",
        "DRA driver chart: run the kubelet plugin only on nodes labelled for DRA: "
        "`helm upgrade --install nvidia-dra-driver-gpu "
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu "
        "-n nvidia-dra-driver-gpu --create-namespace --set gpuResourcesEnabledOverride=true "
        f"--set-string kubeletPlugin.nodeSelector.{STACK_LABEL.replace('.', chr(92) + '.')}=dra`",
        guard_prerequisite(bridge),
    ]


def _side(side: Side) -> dict[str, Any]:
    return {"stack": side.stack, "nodes": side.nodes, "gpus": side.gpus,
            "workloads": side.workloads, "gpus_requested": side.demand, "fits": side.ok,
            "failures": list(side.failures)}


def wave_steps(wave: Wave, directory: str | None,
               context: WaveContext = WaveContext()) -> dict[str, list[str]]:
    """The commands of one wave and of its rollback: --strategy bridge's when the context has
    a bridge plan, else the rewrite strategy's."""
    if context.bridge is not None:
        return bridge_wave_steps(wave, directory, context, context.bridge)
    return rewrite_wave_steps(wave, directory, context)


def as_json(result: CutoverPlan, directory: str | None, pools: dict[str, int],
            context: WaveContext = WaveContext()) -> dict[str, Any]:
    return {
        "complete": result.complete,
        "blocked": result.blocked,
        "pools": pools,
        "prerequisites": prerequisites(bridge_strategy(context)),
        **_bridge_json(context),
        "recommendation": context.advice,
        "start": [_side(s) for s in result.start] if result.start else [],
        "waves": [{"wave": w.number, "pools": list(w.units), "nodes": list(w.nodes),
                   "workloads": [{"kind": m.kind, "name": m.name, "namespace": m.namespace,
                                  "pods": m.pods, "gpus": m.gpus,
                                  "risk": RISK_NAMES[m.risk],
                                  "managed_by": manager(m),
                                  **_bridged_field(m, w, context)} for m in w.moved],
                   "device_plugin_side": _side(w.plugin_side), "dra_side": _side(w.dra_side),
                   "notes": list(context.notes.get(w.number, ())),
                   **wave_steps(w, directory, context)} for w in result.waves],
        "unconverted": [{"kind": u.kind, "namespace": u.namespace, "name": u.name,
                         "reason": u.reason} for u in result.unconverted],
        "attempt": None if result.attempt is None else {
            "pools": list(result.attempt.units), "nodes": list(result.attempt.nodes),
            "device_plugin_side": _side(result.attempt.plugin_side),
            "dra_side": _side(result.attempt.dra_side)},
    }


def bridge_strategy(context: WaveContext) -> bool:
    """Whether the runbook is --strategy bridge's (not the claims strategy's, even where some
    workloads ride the bridge: gpudra.cutover.rides)."""
    return context.bridge is not None and context.bridge.strategy == "bridge"


def _bridged_field(workload: Workload, wave: Wave, context: WaveContext) -> dict[str, Any]:
    """`bridged` under --strategy bridge (left unchanged for the bridge, or converted); nothing
    under rewrite, whose JSON stays as it was."""
    if context.bridge is None:
        return {}
    return {"bridged": workload.key in context.bridge.of(wave.number)}


def _fits(side: Side) -> str:
    return (f"{side.demand}/{plural(side.gpus, 'GPU')} on {plural(side.nodes, 'node')}, "
            f"{plural(side.workloads, 'workload')}: " + ("fit" if side.ok else "DO NOT FIT"))


def markdown(result: CutoverPlan, directory: str | None, pools: dict[str, int],
             context: WaveContext = WaveContext()) -> str:
    lines = ["# GPU cutover runbook (gpudra cutover)", ""]
    # Pool, unit and workload names are Markdown-escaped: no link, image or emphasis of theirs.
    pool_sizes = ", ".join(f"{_md(p)} ({plural(n, 'node')})" for p, n in pools.items())
    lines += [f"Pools: {pool_sizes}.", ""]
    if result.blocked:
        lines += [f"**Blocked:** {_md(result.blocked)}", ""]
    if context.advice:
        lines += [f"**Strategy:** {_md(context.advice)}", ""]
    lines += ["## Before the first wave", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(
        prerequisites(bridge_strategy(context)) + _bridge_prerequisite(context), 1)] + [""]
    for wave in result.waves:
        steps = wave_steps(wave, directory, context)
        what = (f"{_md(', '.join(wave.units))} ({plural(len(wave.nodes), 'node')})"
                if wave.nodes else "workloads only (their nodes publish already)")
        lines += [f"## Wave {wave.number}: {what}", ""]
        lines += [f"After it: device plugin {_fits(wave.plugin_side)}; DRA "
                  f"{_fits(wave.dra_side)}; no node serves both.", ""]
        if context.notes.get(wave.number):
            lines += ["Around the pods:", ""]
            lines += [f"- {_md(note)}" for note in context.notes[wave.number]] + [""]
        if wave.moved and context.bridge is not None:
            lines += _bridge_lists(wave, context.bridge)
        elif wave.moved:
            lines += ["Workloads that move to claims:", ""]
            lines += [f"- {_md(m.label)} ({plural(m.pods, 'pod')}, {plural(m.gpus, 'GPU')}; "
                      f"{RISK_NAMES[m.risk]})"
                      + _managed_note(m) for m in wave.moved[:MAX_LISTED]]
            if len(wave.moved) > MAX_LISTED:
                lines.append(f"- ... and {len(wave.moved) - MAX_LISTED} more (JSON: -o json)")
            lines.append("")
        lines += ["Steps:", "", "```sh", *steps["steps"], "```", "",
                  "Rollback:", "", "```sh", *steps["rollback"], "```", ""]
    if result.complete:
        lines += ["## After the last wave", "",
                  "Run `gpudra verify --decommission`: when it says \"safe to remove the device "
                  "plugin\", uninstall it (or set the GPU Operator's `devicePlugin.enabled: "
                  "false`).", ""]
    return "\n".join(lines)


def _bridge_json(context: WaveContext) -> dict[str, Any]:
    """Under --strategy bridge, which classes map nvidia.com/gpu and which one the runbook
    writes (None: the cluster has one); nothing under rewrite."""
    bridge = context.bridge
    if bridge is None:
        return {}
    found: dict[str, Any] = {
        "mapped_by": list(bridge.mapped_by),
        "writes_mapping_class": MAPPING_CLASS if bridge.write_mapping else None}
    if bridge.strategy != "bridge":  # the claims strategy: who rides the bridge, and why
        found = {**found, "mapping_wave": bridge.mapping_wave if bridge.write_mapping else None,
                 "rides": [{"namespace": n, "kind": k, "name": name, "controller": controller,
                            "note": ride_note(controller)}
                           for (n, k, name), controller in sorted(bridge.rides.items())]}
    return {"strategy": bridge.strategy, "bridge": found}


def _bridge_prerequisite(context: WaveContext) -> list[str]:
    bridge = context.bridge
    if bridge is None:
        return []
    if bridge.strategy != "bridge":
        riders = bridge.count
        if bridge.mapping_wave is None:
            return [f"The bridge: {NO_RIDER}; the runbook writes no mapping class."]
        said = (f"{riders} workload{'' if riders == 1 else 's'} whose controller reads "
                "nvidia.com/gpu ride{} the bridge unchanged (KEP-5004, GA in 1.37) instead of "
                "staying on the device plugin".format("s" if riders == 1 else ""))
        if bridge.mapped_by:
            return [f"The bridge: {said}; DeviceClass {_md(', '.join(bridge.mapped_by))} maps "
                    "nvidia.com/gpu already, the runbook writes no other. Their namespaces are "
                    + GUARD_NOTE + "."]
        return [f"The bridge: {said}; no DeviceClass maps nvidia.com/gpu, so wave "
                f"{bridge.mapping_wave}'s first step writes {MAPPING_CLASS} (the driver chart's "
                "whole-GPU selector). Their namespaces are " + GUARD_NOTE + "."]
    if bridge.mapped_by:
        return [f"The bridge: DeviceClass {_md(', '.join(bridge.mapped_by))} maps "
                "nvidia.com/gpu already; the runbook writes no other (with two, the newest "
                "wins, and deleting the other can unmap the name)."]
    return ["The bridge: no DeviceClass maps nvidia.com/gpu; the first wave's first step "
            f"writes {MAPPING_CLASS} (the driver chart's whole-GPU selector)."]


def _bridge_lists(wave: Wave, bridge: BridgePlan) -> list[str]:
    """Under --strategy bridge: the moving workloads left unchanged, then those converted."""
    lines: list[str] = []
    bridged = bridge.of(wave.number)
    claims = bridge.strategy != "bridge"  # the claims strategy, some riding the bridge
    for title, members in (
            ("Workloads the bridge serves unchanged (their pods are restarted onto DRA):",
             [m for m in wave.moved if m.key in bridged]),
            ("Workloads that move to claims:" if claims else
             "Workloads that move to claims (the bridge cannot serve them):",
             [m for m in wave.moved if m.key not in bridged])):
        if not members:
            continue
        lines += [title, ""]
        # an unchanged workload needs no change in its chart or Git tree
        lines += [f"- {_md(m.label)} ({plural(m.pods, 'pod')}, {plural(m.gpus, 'GPU')}; "
                  f"{RISK_NAMES[m.risk]})" + (_ride(m, bridge) if m.key in bridged
                                              else _managed_note(m))
                  for m in members[:MAX_LISTED]]
        if len(members) > MAX_LISTED:
            lines.append(f"- ... and {len(members) - MAX_LISTED} more (JSON: -o json)")
        lines.append("")
    return lines


def _ride(workload: Workload, bridge: BridgePlan) -> str:
    """Under the claims strategy, why a workload rides the bridge (gpudra.cutover.rides)."""
    controller = bridge.rides.get(workload.key)
    return "" if controller is None else f": {_md(ride_note(controller))}"


def manager(workload: Workload) -> str | None:
    """Who keeps the workload's manifest, when it is a tool that would put the device-plugin
    template back after the runbook replaces it (Helm, Argo CD, Flux); None otherwise."""

    found = managed_by(as_mapping(workload.original.get("metadata")))
    return None if found in (None, "kubectl apply") else found


def _managed_note(workload: Workload) -> str:
    found = manager(workload)
    if found is None:
        return ""
    return (f": **managed by {_md(found)}**: convert its source too (`gpudra convert` on the "
            "chart values or the Git tree), or it puts the device-plugin template back")


def _md(text: str) -> str:

    return escape_cell(text)


def table(result: CutoverPlan, directory: str | None = None,
          context: WaveContext = WaveContext()) -> str:
    rows = [("wave", "pools", "nodes", "moves", "device plugin after", "DRA after")]
    for w in result.waves:
        rows.append((str(w.number), ", ".join(w.units) or "-", str(len(w.nodes)), str(len(w.moved)),
                     f"{w.plugin_side.demand}/{plural(w.plugin_side.gpus, 'GPU')}",
                     f"{w.dra_side.demand}/{plural(w.dra_side.gpus, 'GPU')}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    # The table lists no workload, but one a tool manages needs its source changed too.
    managed = [(w.number, m, found) for w in result.waves for m in w.moved
               if (found := manager(m)) is not None]
    if managed:
        out.append("")
        out += [f"wave {number}: {m.label} is managed by {found}: convert its chart values or "
                "Git tree too, or it puts the device-plugin template back"
                for number, m, found in managed[:MAX_LISTED]]
        if len(managed) > MAX_LISTED:
            out.append(f"... and {len(managed) - MAX_LISTED} more managed workloads "
                       "(-o markdown or -o json)")
    out += _moves(result)
    notes = [(w.number, note) for w in result.waves for note in context.notes.get(w.number, ())]
    if notes:
        out.append("")
        out += [f"wave {number}: {note}" for number, note in notes]
    if result.blocked:
        out += ["", f"blocked: {result.blocked}"]
    else:
        out += ["", f"{plural(len(result.waves), 'wave')}; after the last, run gpudra verify "
                "--decommission"]
    out.append(_where_the_steps_are(directory))
    if context.advice:
        out.append(context.advice)
    return "\n".join(out) + "\n"


def _moves(result: CutoverPlan) -> list[str]:
    """Each wave's moving workloads (issue 36: the table named none), then what stays."""
    out = [""] if result.waves or result.unconverted else []
    for w in result.waves:
        labels = [m.label for m in w.moved]
        more = f" (and {len(labels) - MAX_LISTED} more)" if len(labels) > MAX_LISTED else ""
        out.append(f"wave {w.number} moves: {', '.join(labels[:MAX_LISTED]) or 'nothing'}{more}")
    if result.unconverted:
        labels = [f"{u.namespace}/{u.kind}/{u.name}" for u in result.unconverted]
        more = f" (and {len(labels) - MAX_LISTED} more)" if len(labels) > MAX_LISTED else ""
        out.append(f"stays on the device plugin: {', '.join(labels[:MAX_LISTED])}{more} "
                   "(why: -o json, .unconverted)")
    return out


def _where_the_steps_are(directory: str | None) -> str:
    if directory is not None:
        return f"steps per wave: {directory}/runbook.md; the manifests: {directory}/wave-N/"
    return ("steps per wave: -o markdown (the runbook), or --output-dir DIR (the runbook "
            "and the manifests)")


@dataclass(frozen=True, slots=True)
class Runbook:
    """What `gpudra cutover` renders (gpudra.cli.formats, Kind.RUNBOOK)."""

    plan: CutoverPlan
    directory: str | None       # --output-dir, which the steps name
    pools: dict[str, int]       # nodes per pool
    context: WaveContext = WaveContext()
    cluster: ClusterRead | None = None  # live: the cluster read, and when


def _read_line(runbook: Runbook) -> list[str]:
    return [runbook.cluster.describe()] if runbook.cluster is not None else []


def render_table(runbook: Runbook, options: RenderOptions) -> str:
    return ("".join(f"{line}\n\n" for line in _read_line(runbook))
            + table(runbook.plan, runbook.directory, runbook.context)
            + _bridge_table_note(runbook))


def _bridge_table_note(runbook: Runbook) -> str:
    """Under --strategy bridge, what stays unchanged and what the first step writes."""
    bridge = runbook.context.bridge
    if bridge is None:
        return ""
    kept = bridge.count
    if bridge.strategy != "bridge" and bridge.mapping_wave is None:
        return f"strategy rewrite, the bridge: {NO_RIDER}\n"
    if bridge.strategy != "bridge":
        where = (f"wave {bridge.mapping_wave} writes {MAPPING_CLASS}" if bridge.write_mapping
                 else f"DeviceClass {', '.join(bridge.mapped_by)} maps nvidia.com/gpu")
        return (f"strategy rewrite: {plural(kept, 'workload')} whose controller reads "
                f"nvidia.com/gpu {'rides' if kept == 1 else 'ride'} the bridge unchanged; "
                f"{where}\n"
                + "".join(f"  {'/'.join(key)}: {ride_note(controller)}\n"
                          for key, controller in sorted(bridge.rides.items())))
    converted = sum(len(w.moved) for w in runbook.plan.waves) - kept
    mapping = (f"DeviceClass {', '.join(bridge.mapped_by)} maps nvidia.com/gpu" if
               bridge.mapped_by else f"the first wave writes {MAPPING_CLASS}")
    return (f"strategy bridge: {kept} workloads stay unchanged (the bridge serves them), "
            f"{converted} move to claims; {mapping}\n")


def render_markdown(runbook: Runbook, options: RenderOptions) -> str:
    text = markdown(runbook.plan, runbook.directory, runbook.pools, runbook.context)
    title, _, rest = text.partition("\n\n")
    read = "".join(f"{_md(line)}\n\n" for line in _read_line(runbook))
    return f"{title}\n\n{read}{rest}"


def render_json(runbook: Runbook, options: RenderOptions) -> str:
    data = as_json(runbook.plan, runbook.directory, runbook.pools, runbook.context)
    if runbook.cluster is not None:
        data = {"cluster": runbook.cluster.as_data(), **data}
    return json_text.dumps(data)  # no \\u escapes: redaction sees every character


# `cutover -o`'s words and their renderers, in the CLI's order (gpudra.cli.formats lists them;
# cutover writes runbook.md with the Markdown one).
RENDERERS: dict[str, Renderer] = {"table": render_table, "markdown": render_markdown,
                                  "json": render_json}
