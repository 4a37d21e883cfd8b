"""One verdict per GPU workload, at its top owner: on the device plugin, on the bridge, or on
claims; for claims, whether every pod's claims are allocated and reserved for it and the pods
Running and Ready, and for what is not, the reason (the scheduler's last FailedScheduling
event, then :mod:`gpudra.verify.explain`)."""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.dra.versions import TargetVersion
from gpudra.k8s.gpu_use import read_object
from gpudra.k8s.objects import ClusterObject, plural
from gpudra.plan.inventory import Inventory
from gpudra.verify.bridge_served import bridge_serves
from gpudra.verify.collect import ClusterState, PodState, event_message
from gpudra.verify.device_plugin_pending import pending_reasons
from gpudra.verify.explain import explain_pod
from gpudra.k8s.workloads import WorkloadTable

DEVICE_PLUGIN, BRIDGE, CLAIMS = "device plugin", "bridge", "claims"
MAX_PODS_SHOWN = 3


@dataclass(frozen=True)
class Verdict:
    workload: ClusterObject
    state: str            # DEVICE_PLUGIN | BRIDGE | CLAIMS
    ok: bool              # on claims (or the bridge): allocated, Running and Ready
    message: str
    reasons: tuple[str, ...]
    pods: int
    pods_fine: int
    claims_allocated: int
    claims: int
    must_move: str | None = None  # a wave (verify --wave-of) moves it: the file that does

    @property
    def failing(self) -> bool:
        """Fails the run: on claims (or the bridge) and not fine, or still on the device
        plugin though a wave that was applied moves it."""
        return not self.ok and (self.state != DEVICE_PLUGIN or self.must_move is not None)

    @property
    def subject(self) -> str:
        w = self.workload
        return "/".join(x for x in (w.namespace, w.kind, w.name) if x)


def judge_workload(workload: ClusterObject, state: ClusterState, inventory: Inventory,
                   table: WorkloadTable, target: TargetVersion) -> Verdict:
    pods = state.pods_of(workload)
    use = read_object(table, workload.group, workload.kind, workload.data, strays=False)
    held = sum(p.device_plugin_gpus for p in pods)
    if use.dra:
        kind = CLAIMS
    elif any(p.bridged for p in pods) and not held:
        kind = BRIDGE
    elif not pods and bridge_serves(workload, state, table):
        kind = BRIDGE  # no pod now; the next ones will be served through the bridge
    else:
        kind = DEVICE_PLUGIN
    if kind == DEVICE_PLUGIN:
        running = sum(1 for p in pods if p.fine)
        message = (f"still on the device plugin: {plural(len(pods), 'pod')} "
                   f"({running} Running and Ready) hold {held} nvidia.com/gpu" if pods else
                   "still on the device plugin (no pods now)")
        return Verdict(workload, kind, False, message, _device_plugin_reasons(pods, state),
                       len(pods), running, 0, 0)
    problems: list[str] = []
    allocated = total = fine = 0
    explained = False
    troubled: list[tuple[PodState, list[str]]] = []
    for pod in pods:
        pod_problems = _pod_problems(pod, state, kind)
        allocated += sum(1 for r in pod.claims if r.claim and (c := state.claims.get(
            (pod.namespace, r.claim))) is not None and c.allocated)
        total += len(pod.claims)
        if not pod_problems:
            fine += pod.fine
            continue
        troubled.append((pod, pod_problems))
    for pod, pod_problems in _most_telling(troubled):
        problems += [f"pod {pod.subject}: {p}" for p in pod_problems]
        event = event_message(state, pod)
        if event:
            problems.append(f"scheduler: {event}")
        if not explained and pod.phase == "Pending" and kind == CLAIMS:
            explained = True  # the pods of one template share their reasons: explain one
            problems += explain_pod(pod, state, inventory, table, target)
    if len(troubled) > MAX_PODS_SHOWN:
        problems.append(f"... and {len(troubled) - MAX_PODS_SHOWN} more pods with problems")
    replicas = _wanted_now(workload)
    if not pods and replicas:
        problems.append(f"no pods yet: {plural(replicas, 'replica')} wanted")
    ok = not problems
    noun = "claim" if kind == CLAIMS else "bridge claim"
    message = (f"on {kind}: {fine}/{plural(len(pods), 'pod')} Running and Ready"
               + (f", {allocated}/{plural(total, noun)} allocated" if total else ""))
    if not pods and not replicas:
        message = f"on {kind}: no pods now (scaled to 0, or no Job running)"
    return Verdict(workload, kind, ok, message, tuple(dict.fromkeys(problems)), len(pods), fine,
                   allocated, total)


def _rank(pod: PodState) -> int:
    """Pods whose reasons matter most first: Pending and unscheduled (nothing runs them),
    Pending on a node, failed or unknown, then Running but not Ready (old pods of a rollout
    that still run, or are going away, say the least)."""
    if pod.phase == "Pending":
        return 1 if pod.node else 0
    return 3 if pod.phase == "Running" else 2


def _most_telling(troubled: list[tuple[PodState, list[str]]]
                  ) -> list[tuple[PodState, list[str]]]:
    """The MAX_PODS_SHOWN pods to show: most telling first, so a crowd of old pods never hides
    the one Pending pod's reason."""
    return sorted(troubled, key=lambda t: _rank(t[0]))[:MAX_PODS_SHOWN]


def _device_plugin_reasons(pods: list[PodState], state: ClusterState) -> tuple[str, ...]:
    """For a workload on the device plugin, why its pods that are not Running and Ready wait."""
    troubled = [(p, [p.phase + (f" on {p.node}" if p.node else " (not scheduled)")
                     if p.phase != "Running" else f"Running on {p.node} but not Ready"])
                for p in pods if not p.fine]
    reasons: list[str] = []
    for pod, said in _most_telling(troubled):
        reasons += [f"pod {pod.subject}: {line}" for line in said]
        event = event_message(state, pod)
        if event:
            reasons.append(f"scheduler: {event}")
        reasons += pending_reasons(pod, state)
    if len(troubled) > MAX_PODS_SHOWN:
        reasons.append(f"... and {len(troubled) - MAX_PODS_SHOWN} more pods with problems")
    return tuple(dict.fromkeys(reasons))


def _wanted_now(workload: ClusterObject) -> int | None:
    """The pods the workload should be running now: its replicas, but none for a CronJob
    that has no Job running (its pods exist only during a scheduled run, status.active)."""
    replicas = workload.cluster.replicas if workload.cluster is not None else None
    if workload.kind == "CronJob" and workload.group == "batch":
        status = workload.data.get("status")
        if not (isinstance(status, dict) and status.get("active")):
            return 0
    return replicas


def _pod_problems(pod: PodState, state: ClusterState, kind: str) -> list[str]:
    out: list[str] = []
    if pod.phase == "Succeeded":
        return out  # finished: its claims were deallocated when it ended
    for ref in pod.claims:
        if ref.claim is None:
            out.append(f"claim {ref.entry} (from template {ref.template}) not created yet")
            continue
        claim = state.claims.get((pod.namespace, ref.claim))
        if claim is None:
            out.append(f"ResourceClaim {ref.claim} does not exist")
        elif not claim.allocated:
            out.append(f"ResourceClaim {ref.claim} is not allocated")
        elif pod.uid not in claim.reserved_for and pod.name not in claim.reserved_for:
            out.append(f"ResourceClaim {ref.claim} is allocated but not reserved for this pod "
                       "(held by " + (", ".join(sorted(claim.reserved_for)) or "no pod") + ")")
    if kind == CLAIMS and pod.device_plugin_gpus:
        # A pod bound to no node holds nothing yet: it asks, and waits for both stacks.
        verb = "still holds" if pod.node else "still asks for"
        # named as the pod asks (a MIG profile's nvidia.com/mig-1g.10gb is not nvidia.com/gpu)
        asked = " + ".join(pod.device_plugin_names) or "nvidia.com/gpu"
        out.append(f"{verb} {pod.device_plugin_gpus} device-plugin {asked}")
    if pod.phase != "Running":
        out.append(f"{pod.phase}" + (f" on {pod.node}" if pod.node else " (not scheduled)"))
    elif not pod.ready:
        out.append(f"Running on {pod.node} but not Ready")
    return out
