"""The steps of a wave under `gpudra cutover --strategy bridge`, and of its rollback.

The rewrite strategy's steps (gpudra.cutover.runbook) for what the wave converts, plus, for
what it leaves unchanged: the mapping DeviceClass written first when the cluster has none
(never a second one: with two classes for one name the newest wins, and deleting the loser
can unmap the name: docs/facts.md), a wait after the switch until each node's
`nvidia.com/gpu` capacity is 0 or gone (the scheduler serves a mapped name through DRA only
on a node without device-plugin capacity for it), and the unchanged pods started again once
the nodes take pods. The drain restarts them: their controllers make new pods, which wait
(the nodes are cordoned) until the switch is done and then go through the bridge; Jobs and
bare Pods are deleted before the drain (it refuses bare Pods) and created again, unchanged,
after it. No `kubectl rollout restart`: with the template unchanged, the old ReplicaSet's pods
and the new one's would compete for the same GPUs, and on a full pool the rollout (at most 0
unavailable) never finishes (tried on the journey's sharing cluster).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from gpudra.cutover.bridge import BRIDGED, BRIDGED_NAME, MAPPING, BridgePlan, split
from gpudra.cutover.manifests import RECREATE, REPLACE, mode, wave_modes
from gpudra.cutover.namespaces import label_step, unlabel_step
from gpudra.cutover.steps import (
    WaveContext, cascade_flag, claims_step, counted, folder_step, rollback_steps,
    settle_steps, switch_steps, verify_step, wave_place,
)
from gpudra.cutover.waves import Wave

def bridge_wave_steps(wave: Wave, directory: str | None, context: WaveContext,
                      bridge: BridgePlan) -> dict[str, list[str]]:
    """`bridge`: the context's plan (runbook.wave_steps calls this only when it has one)."""
    converted, bridged = split(wave.moved, bridge.of(wave.number))
    rewritten = replace(wave, moved=converted)
    nodes, where = wave_place(wave, directory)
    modes = wave_modes(rewritten)
    kept = frozenset(mode(w) for w in bridged)
    quotas = context.quotas.get(wave.number, 0)
    writes_mapping = bridge.write_mapping and bridge.mapping_wave == wave.number
    steps: list[str] = []
    if writes_mapping:
        steps.append(write_mapping(where))
    if quotas:
        steps.append(folder_step("replace", f"{where}/converted/quotas/", why=(
            f"{counted(quotas, 'quota')} of the namespaces whose workloads move to "
            "claims count claims too")))
    if converted:
        steps.append(claims_step(where))
    if wave.nodes:
        steps.append(f"kubectl cordon {nodes}")
    if REPLACE in modes:
        steps.append(folder_step("replace", f"{where}/converted/replace/", why=(
            f"{counted(sum(mode(w) == REPLACE for w in converted), 'workload')} the "
            "bridge cannot serve roll onto claims")))
    if RECREATE in modes:
        steps.append(folder_step("delete", f"{where}/original/recreate/",
                                 f" --wait{cascade_flag(rewritten)}",
                                 why="created again below on claims (a Job starts over)"))
    if RECREATE in kept:
        steps.append(folder_step("delete", f"{where}/{BRIDGED}/recreate/",
                                 f" --wait{cascade_flag(replace(wave, moved=bridged))}", why=(
            "the drain refuses bare Pods: created again below, unchanged, through the bridge "
            "(a Job starts over)")))
    if wave.nodes:
        switch = switch_steps(wave.number, wave.nodes, nodes, context.plugin_pods)
        steps += switch[:-1] + [capacity_gone(n) for n in wave.nodes] + switch[-1:]
    if RECREATE in modes:
        steps.append(folder_step("create", f"{where}/converted/recreate/"))
    if RECREATE in kept:
        steps.append(folder_step("create", f"{where}/{BRIDGED}/recreate/"))
    finished = context.finished.get(wave.number, ())
    # gpudra guard's label, as the rewrite strategy writes it (steps.rewrite_wave_steps)
    if finished:
        steps.append(label_step(finished))
    steps += settle_steps(wave)
    steps.append(verify_step(where, "DRA (the bridge or claims)"))
    rollback = rollback_steps(
        wave, nodes, where, quotas, rewritten=rewritten, bridged=bridged,
        drain_note="   # the unchanged pods start again on the nodes' device plugin once it is "
                   "back",
        undo_last=folder_step("delete", f"{where}/{MAPPING}/", " --ignore-not-found",
                              why="the mapping class this wave wrote") if writes_mapping else None)
    return {"steps": steps,
            "rollback": [unlabel_step(finished), *rollback] if finished else rollback}


def write_mapping(where: str) -> str:
    """The line that writes the mapping class unless a class maps the name by then (the plan
    read none, but a --from export may lack the DeviceClasses, or the driver chart came
    since): a second class would win as the newer, and the rollback deleting it could unmap
    the name in the scheduler."""
    return (f"kubectl get deviceclasses -o jsonpath='{{.items[*].spec.extendedResourceName}}' "
            f"| tr ' ' '\\n' | grep -qxF {BRIDGED_NAME} || kubectl apply -f {where}/{MAPPING}/ "
            f"--recursive   # the DeviceClass that maps {BRIDGED_NAME}, unless one does: DRA "
            "serves pods asking for it on nodes without device-plugin capacity")


def capacity_gone(node: str) -> str:
    """A line that waits until the node advertises no nvidia.com/gpu (0 or absent, in capacity
    and allocatable): the kubelet keeps a stopped plugin's resource at 0 for a while, and the
    scheduler serves the mapped name through DRA only where it is not above 0."""
    inner = (f'until [[ "$(kubectl get node {shlex.quote(node)} -o '
             "'jsonpath={.status.capacity.nvidia\\.com/gpu}{.status.allocatable.nvidia\\.com/gpu}'"
             ')" =~ ^0*$ ]]; do sleep 2; done')
    return (f"timeout 10m bash -c {shlex.quote(inner)}   # no {BRIDGED_NAME} capacity left "
            "on the node: only then does the bridge serve it")


