"""The shell steps of one cutover wave and of its rollback (the rewrite strategy's), and the
helpers --strategy bridge's steps (gpudra.cutover.bridge_runbook) reuse.

The labels (docs/facts.md, "Switching a node's GPU stack"): the GPU Operator's device-plugin
DaemonSet selects `nvidia.com/gpu.deploy.device-plugin: "true"`, and the Operator keeps a value
a user set, so `false` stops the plugin on a node. The standalone device-plugin chart and the
DRA driver chart take `affinity` / `kubeletPlugin.nodeSelector` values: one label of gpudra's
(STACK_LABEL) tells them apart, set once before the first wave.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gpudra.cutover.bridge import BRIDGED, BridgePlan
from gpudra.cutover.manifests import RECREATE, REPLACE, mode, wave_modes
from gpudra.cutover.namespaces import label_step, unlabel_step
from gpudra.cutover.pools import WAVE_LABEL, Workload
from gpudra.cutover.waves import Wave
from gpudra.k8s.objects import as_mapping

OPERATOR_LABEL = "nvidia.com/gpu.deploy.device-plugin"


STACK_LABEL = "gpudra.io/gpu-stack"


@dataclass(frozen=True)
class WaveContext:
    """What the steps need besides the plan: the device plugin's pods (namespace, label
    selector: Fleet.plugin_pods) and, per wave number, how many quotas it replaces
    (manifests.quota_changes)."""

    plugin_pods: tuple[tuple[str, str], ...] = ()
    quotas: Mapping[int, int] = field(default_factory=dict)
    # --strategy bridge: what each wave leaves unchanged (gpudra.cutover.bridge); None: rewrite
    bridge: BridgePlan | None = None
    # per wave number, what the switch changes around its pods (cutover.bridge_context)
    notes: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    advice: str | None = None  # the strategy recommendation (dra.strategy_advice)
    # per wave number, the namespaces it finishes (namespaces.finished_namespaces): labelled as
    # migrated after the wave's verify, unlabelled first in its rollback
    finished: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


def rewrite_wave_steps(wave: Wave, directory: str | None,
                       context: WaveContext = WaveContext()) -> dict[str, list[str]]:
    """The commands of one wave and of its rollback, in the order that keeps the most running.

    Claim templates first; the moving workloads that can change in place are replaced while
    the nodes are cordoned (their new pods wait for this wave's DRA devices, the old ones
    serve until the drain); Jobs and bare Pods, whose pod template cannot change, are deleted
    and created again once the nodes publish; the drain empties the nodes before either stack
    changes, so no GPU is ever held through the device plugin while the DRA driver offers it;
    each switch is waited for (the device plugin's pods gone, each node's ResourceSlice
    there) before the nodes take pods again. Every value read from the cluster or a file is
    quoted for the shell. The rewrite strategy's; --strategy bridge's are
    gpudra.cutover.bridge_runbook's, which reuse the helpers below."""
    nodes, where = wave_place(wave, directory)
    modes = wave_modes(wave)
    replaced = sum(1 for w in wave.moved if mode(w) == REPLACE)
    recreated = len(wave.moved) - replaced
    quotas = context.quotas.get(wave.number, 0)
    steps: list[str] = []
    if quotas:
        steps.append(folder_step("replace", f"{where}/converted/quotas/", why=(
            f"{counted(quotas, 'quota')} of the namespaces moving count claims too "
            "(device-plugin keys go with a namespace's last workload)")))
    if wave.moved:
        steps.append(claims_step(where))
    if wave.nodes:
        steps.append(f"kubectl cordon {nodes}")
    if REPLACE in modes:
        steps.append(folder_step("replace", f"{where}/converted/replace/", why=(
            f"{counted(replaced, 'workload')} roll onto claims; their new pods wait "
            "for this wave's devices")))
    if RECREATE in modes:
        steps.append(folder_step("delete", f"{where}/original/recreate/",
                                 f" --wait{cascade_flag(wave)}", why=(
            f"{counted(recreated, 'Job or bare Pod', 'Jobs or bare Pods')}: the pod "
            "template cannot change; created again below (a Job starts over)")))
    if wave.nodes:
        steps += switch_steps(wave.number, wave.nodes, nodes, context.plugin_pods)
    if RECREATE in modes:
        steps.append(folder_step("create", f"{where}/converted/recreate/"))
    finished = context.finished.get(wave.number, ())
    if finished:  # after the wave's last change; its verify stays the last line
        steps.append(label_step(finished))
    steps += settle_steps(wave)
    steps.append(verify_step(where, "claims"))
    rollback = rollback_steps(wave, nodes, where, quotas)
    if finished:
        rollback.insert(0, unlabel_step(finished))
    return {"steps": steps, "rollback": rollback}


def wave_place(wave: Wave, directory: str | None) -> tuple[str, str]:
    """The wave's nodes as shell words, and its folder as the runbook names it."""
    nodes = " ".join(shlex.quote(n) for n in wave.nodes)
    where = (shlex.quote(f"{directory}/wave-{wave.number}") if directory
             else f"<output-dir>/wave-{wave.number}")
    return nodes, where


def folder_step(verb: str, folder: str, flags: str = "", why: str | None = None) -> str:
    """One runbook line that runs `kubectl VERB` over a folder of the wave's manifests
    (recursively), with its extra flags and the comment that says why."""
    line = f"kubectl {verb} -f {folder} --recursive{flags}"
    return line if why is None else f"{line}   # {why}"


def claims_step(where: str) -> str:
    """The line that applies the wave's claim templates, before any workload names them."""
    return folder_step("apply", f"{where}/converted/claims/",
                       why="the claim templates first: no workload may name a missing one")


def verify_step(where: str, runs_on: str) -> str:
    """The wave's last line: verify, which must exit 0 before the next wave."""
    return (f"gpudra verify --wave-of {where}   # exit 0 before the next wave: what the "
            f"wave moves runs on {runs_on}")


# Kinds whose children have fixed names: a JobSet's Jobs are `<jobset>-<job>-<index>`.
_NAMED_CHILDREN = frozenset({"JobSet"})


def cascade_flag(wave: Wave) -> str:
    """` --cascade=foreground` when the wave re-creates a kind whose children have fixed
    names: the delete then returns once they are gone, so the object created again does not
    meet them (its controller would wait for the garbage collector). Jobs and Pods are
    deleted in the background, as kubectl does by default: their pods and claims have
    generated names, and a pod in foreground deletion waits for its claims, which wait for it
    to stop (a 1.33 control plane never finished that delete)."""
    recreated = {w.kind for w in wave.moved if mode(w) == RECREATE}
    return " --cascade=foreground" if recreated & _NAMED_CHILDREN else ""


def switch_steps(number: int, names: tuple[str, ...], nodes: str,
                 plugin_pods: tuple[tuple[str, str], ...]) -> list[str]:
    """The nodes drained, moved from the device plugin to the DRA driver, each move waited
    for, and opened again. The device plugin's pods are waited for after both labels: the GPU
    Operator's leaves on the first, the standalone chart's on the second; the nodes hold no
    GPU pod by then (drained) and take none until the uncordon, so the moment both stacks run
    there serves nobody."""
    return [
        f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data   # what stays on "
        "the device plugin restarts on the nodes that keep it",
        f"kubectl label node {nodes} {OPERATOR_LABEL}=false --overwrite   # the device plugin "
        "leaves (GPU Operator)",
        f"kubectl label node {nodes} {STACK_LABEL}=dra {WAVE_LABEL}={number} --overwrite   "
        "# the DRA kubelet plugin starts (the standalone device-plugin chart leaves); the wave "
        "number keeps a re-run's numbers",
        *_wait_plugin_gone(names, plugin_pods),
        *(f"kubectl wait --for=create resourceslices --field-selector "
          f"spec.nodeName={shlex.quote(n)} --timeout=10m" for n in names),
        f"kubectl uncordon {nodes}",
    ]


def rollback_steps(wave: Wave, nodes: str, where: str, quotas: int, *,
                   rewritten: Wave | None = None, bridged: tuple[Workload, ...] = (),
                   drain_note: str = "", undo_last: str | None = None) -> list[str]:
    """The wave's steps undone, in the reverse order, under either strategy. `rewritten`: the
    part of the wave that moved to claims (default: all of it); `bridged`: the workloads the
    bridge serves unchanged, whose bare Pods and Jobs were deleted and created again around
    the switch; `drain_note`: what the drain is for; `undo_last`: the last change to undo,
    after the quotas (the bridge's mapping DeviceClass)."""
    rewritten = wave if rewritten is None else rewritten
    modes = wave_modes(rewritten)
    kept = frozenset(mode(w) for w in bridged)
    steps = [f"kubectl cordon {nodes}"] if wave.nodes else []
    if RECREATE in modes:
        steps.append(folder_step("delete", f"{where}/converted/recreate/",
                                 f" --wait{cascade_flag(rewritten)}"))
    if RECREATE in kept:
        steps.append(folder_step("delete", f"{where}/{BRIDGED}/recreate/",
                                 f" --wait{cascade_flag(replace(wave, moved=bridged))}"))
    if REPLACE in modes:
        steps.append(folder_step("replace", f"{where}/original/replace/"))
    if wave.nodes:
        steps += [
            f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data{drain_note}",
            f"kubectl label node {nodes} {STACK_LABEL}- {WAVE_LABEL}- --overwrite   # the DRA "
            "kubelet plugin leaves",
            *(f"kubectl wait --for=delete resourceslices --field-selector "
              f"spec.nodeName={shlex.quote(n)} --timeout=10m" for n in wave.nodes),
            f"kubectl label node {nodes} {OPERATOR_LABEL}=true --overwrite   # the device "
            "plugin comes back",
            f"kubectl uncordon {nodes}",
        ]
    if RECREATE in modes:
        steps.append(folder_step("create", f"{where}/original/recreate/"))
    if RECREATE in kept:
        steps.append(folder_step("create", f"{where}/{BRIDGED}/recreate/"))
    if quotas:
        steps.append(folder_step("replace", f"{where}/original/quotas/"))
    if undo_last is not None:
        steps.append(undo_last)
    steps += settle_steps(wave)
    steps.append("gpudra verify   # the workloads are back on the device plugin")
    return steps


def settle_steps(wave: Wave) -> list[str]:
    """What the wave changed, waited for before verify judges it (a verify run at once finds
    pods not yet scheduled and claims not yet created): the pods of OnDelete StatefulSets
    deleted in ordinal order, each Ready before the next (their controller puts a new
    template only on pods that are deleted; the drain deleted those on the wave's nodes,
    which are skipped); the rollout of the other Deployments and StatefulSets; the bare Pods
    and Jobs created again, Ready (their claims exist only once the pods do)."""
    lines: list[str] = []
    for workload in wave.moved:
        namespace, name = shlex.quote(workload.namespace), shlex.quote(workload.name)
        if workload.kind == "StatefulSet" and on_delete(workload):
            start = _ordinals_start(workload)
            for ordinal in range(start, start + workload.pods):
                pod = shlex.quote(f"{workload.name}-{ordinal}")
                revision = ("-o jsonpath='{.metadata.labels.controller-revision-hash}' "
                            "--ignore-not-found")
                lines.append(
                    f'test "$(kubectl get pod {pod} -n {namespace} {revision})" = '
                    f'"$(kubectl get statefulset {name} -n {namespace} -o '
                    "jsonpath='{.status.updateRevision}')\" || kubectl delete pod "
                    f"{pod} -n {namespace} --ignore-not-found --wait   # updateStrategy "
                    "OnDelete: a pod of the old template is replaced only when deleted")
                lines.append(_ready(f"pod/{pod}", namespace))
        elif workload.kind == "Deployment" or (workload.kind == "StatefulSet"
                                                and _strategy(workload) == "RollingUpdate"):
            lines.append(f"kubectl rollout status {workload.kind.lower()}/{name} -n "
                         f"{namespace} --timeout=10m")
        elif workload.kind == "StatefulSet":
            # kubectl rollout status refuses other strategies (Recreate, alpha in 1.37): every
            # pod of the update revision, then every pod Ready.
            lines.append(f"kubectl wait --for=jsonpath='{{.status.updatedReplicas}}'="
                         f"{workload.pods} statefulset/{name} -n {namespace} --timeout=10m && "
                         f"kubectl wait --for=jsonpath='{{.status.readyReplicas}}'="
                         f"{workload.pods} statefulset/{name} -n {namespace} --timeout=10m")
        elif workload.kind == "Pod":
            lines.append(_ready(f"pod/{name}", namespace))
        elif workload.kind == "Job" and workload.pods:
            # A Job whose pods all finished before the wait is no longer ready, but Complete.
            lines.append(f"kubectl wait --for=jsonpath='{{.status.ready}}'={workload.pods} "
                         f"job/{name} -n {namespace} --timeout=10m || kubectl wait "
                         f"--for=condition=Complete job/{name} -n {namespace} --timeout=1s")
    return lines


def _ready(pod: str, namespace: str) -> str:
    return (f"kubectl wait --for=create {pod} -n {namespace} --timeout=10m && "
            f"kubectl wait --for=condition=Ready {pod} -n {namespace} --timeout=10m")


def on_delete(workload: Workload) -> bool:
    return _strategy(workload) == "OnDelete"


def _strategy(workload: Workload) -> str:
    """A StatefulSet's update strategy type; RollingUpdate when unset (the API's default)."""
    strategy = as_mapping(as_mapping(workload.original.get("spec")).get("updateStrategy"))
    kind = strategy.get("type")
    return kind if isinstance(kind, str) and kind else "RollingUpdate"


def _ordinals_start(workload: Workload) -> int:
    start = as_mapping(as_mapping(workload.original.get("spec")).get("ordinals")).get("start")
    return start if isinstance(start, int) and not isinstance(start, bool) and \
        0 <= start <= 1_000_000 else 0


def _wait_plugin_gone(nodes: tuple[str, ...], plugin_pods: tuple[tuple[str, str], ...]
                      ) -> list[str]:
    return [f"kubectl wait --for=delete pod -n {shlex.quote(namespace)} -l "
            f"{shlex.quote(selector)} --field-selector spec.nodeName={shlex.quote(node)} "
            "--timeout=10m" for namespace, selector in plugin_pods for node in nodes]


def counted(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else (many or one + 's')}"
