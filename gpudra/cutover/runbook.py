"""The cutover plan as a runbook: per wave the exact steps (labels that stop the device plugin
and start the DRA kubelet plugin on the wave's nodes, the manifests to apply, the verify gate,
the rollback), as Markdown, JSON and a wave table.

The labels (docs/facts.md, "Switching a node's GPU stack"): the GPU Operator's device-plugin
DaemonSet selects `nvidia.com/gpu.deploy.device-plugin: "true"`, and the Operator keeps a value
a user set, so `false` stops the plugin on a node. The standalone device-plugin chart and the
DRA driver chart take `affinity` / `kubeletPlugin.nodeSelector` values: one label of gpudra's
(STACK_LABEL) tells them apart, set once before the first wave.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from gpudra.cutover.fleet import RISK_NAMES
from gpudra.cutover.waves import CutoverPlan, Side, Wave
from gpudra.report.formats import RenderOptions

OPERATOR_LABEL = "nvidia.com/gpu.deploy.device-plugin"
STACK_LABEL = "gpudra.io/gpu-stack"
MAX_LISTED = 20


def prerequisites() -> list[str]:
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
    ]


def wave_steps(wave: Wave, directory: str | None) -> dict[str, list[str]]:
    # Shell words: a node name from an exported file (--from) is anyone's text, and users
    # paste these lines into a shell.
    nodes = " ".join(shlex.quote(node) for node in wave.nodes)
    where = f"{shlex.quote(directory)}/wave-{wave.number}" if directory \
        else f"<output-dir>/wave-{wave.number}"
    steps = [
        f"kubectl cordon {nodes}",
        f"kubectl label node {nodes} {OPERATOR_LABEL}=false --overwrite   # GPU Operator",
        f"kubectl label node {nodes} {STACK_LABEL}=dra --overwrite   # standalone plugin "
        "leaves, the DRA kubelet plugin starts",
        f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data   # device-plugin "
        "pods restart on the nodes that keep the plugin (they fit: checked)",
        "kubectl get resourceslices -o wide   # wait until each node of the wave publishes "
        "its GPUs",
        f"kubectl uncordon {nodes}",
    ]
    if wave.moved:
        steps.append(f"kubectl apply -f {where}/converted/ --recursive   # "
                     f"{len(wave.moved)} workloads move to claims")
    steps.append("gpudra verify   # the gate: exit 0 before the next wave")
    rollback = [f"kubectl apply -f {where}/original/ --recursive" if wave.moved else None,
                f"kubectl label node {nodes} {STACK_LABEL}- {OPERATOR_LABEL}=true --overwrite",
                "gpudra verify   # the workloads are back on the device plugin"]
    return {"steps": steps, "rollback": [s for s in rollback if s]}


def _side(side: Side) -> dict[str, Any]:
    return {"stack": side.stack, "nodes": side.nodes, "gpus": side.gpus,
            "workloads": side.workloads, "gpus_requested": side.demand, "fits": side.ok,
            "failures": list(side.failures)}


def as_json(result: CutoverPlan, directory: str | None, pools: dict[str, int]) -> dict[str, Any]:
    return {
        "complete": result.complete,
        "blocked": result.blocked,
        "pools": pools,
        "prerequisites": prerequisites(),
        "start": [_side(s) for s in result.start] if result.start else [],
        "waves": [{"wave": w.number, "pools": list(w.units), "nodes": list(w.nodes),
                   "workloads": [{"kind": m.kind, "name": m.name, "namespace": m.namespace,
                                  "pods": m.pods, "gpus": m.gpus,
                                  "risk": RISK_NAMES[m.risk]} for m in w.moved],
                   "device_plugin_side": _side(w.plugin_side), "dra_side": _side(w.dra_side),
                   **wave_steps(w, directory)} for w in result.waves],
        "attempt": None if result.attempt is None else {
            "pools": list(result.attempt.units), "nodes": list(result.attempt.nodes),
            "device_plugin_side": _side(result.attempt.plugin_side),
            "dra_side": _side(result.attempt.dra_side)},
    }


def _fits(side: Side) -> str:
    return (f"{side.demand}/{side.gpus} GPUs on {side.nodes} nodes, "
            f"{side.workloads} workloads: " + ("fit" if side.ok else "DO NOT FIT"))


def markdown(result: CutoverPlan, directory: str | None, pools: dict[str, int]) -> str:
    lines = ["# GPU cutover runbook (gpudra cutover)", ""]
    # Pool, unit and workload names are Markdown-escaped: no link, image or emphasis of theirs.
    lines += [f"Pools: {', '.join(f'{_md(p)} ({n} nodes)' for p, n in pools.items())}.", ""]
    if result.blocked:
        lines += [f"**Blocked:** {_md(result.blocked)}", ""]
    lines += ["## Before the first wave", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(prerequisites(), 1)] + [""]
    for wave in result.waves:
        steps = wave_steps(wave, directory)
        lines += [f"## Wave {wave.number}: {_md(', '.join(wave.units))} ({len(wave.nodes)} nodes)",
                  ""]
        lines += [f"After it: device plugin {_fits(wave.plugin_side)}; DRA "
                  f"{_fits(wave.dra_side)}; no node serves both.", ""]
        if wave.moved:
            lines += ["Workloads that move to claims:", ""]
            lines += [f"- {_md(m.label)} ({m.pods} pods, {m.gpus} GPUs; {RISK_NAMES[m.risk]})"
                      for m in wave.moved[:MAX_LISTED]]
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


def _md(text: str) -> str:
    from gpudra.report.markdown import escape_cell

    return escape_cell(text)


def table(result: CutoverPlan) -> str:
    rows = [("wave", "pools", "nodes", "moves", "device plugin after", "DRA after")]
    for w in result.waves:
        rows.append((str(w.number), ", ".join(w.units), str(len(w.nodes)), str(len(w.moved)),
                     f"{w.plugin_side.demand}/{w.plugin_side.gpus} GPUs",
                     f"{w.dra_side.demand}/{w.dra_side.gpus} GPUs"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    if result.blocked:
        out += ["", f"blocked: {result.blocked}"]
    else:
        out += ["", f"{len(result.waves)} waves; after the last, run gpudra verify "
                "--decommission"]
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class Runbook:
    """What `gpudra cutover` renders (gpudra.report.formats, Kind.RUNBOOK)."""

    plan: CutoverPlan
    directory: str | None       # --output-dir, which the steps name
    pools: dict[str, int]       # nodes per pool


def render_table(runbook: Runbook, options: RenderOptions) -> str:
    return table(runbook.plan)


def render_markdown(runbook: Runbook, options: RenderOptions) -> str:
    return markdown(runbook.plan, runbook.directory, runbook.pools)


def render_json(runbook: Runbook, options: RenderOptions) -> str:
    return json.dumps(as_json(runbook.plan, runbook.directory, runbook.pools), indent=2) + "\n"
