"""One ResourceClaim shared by the pods of a workload: when it can hold, and what to tell.

A shared claim is allocated once, on one node, in one namespace, and reserved for at most
256 pods; convert blocks a workload whose pods could not all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.convert.requests import DeviceNeed
from gpudra.dra.sharing import NO_REPLICAS
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.k8s.workloads import PodSpecRef

MAX_RESERVED_FOR = 256  # resourceapi.ResourceClaimReservedForMaxSize: pods sharing one claim
_HOSTNAME = "kubernetes.io/hostname"
# Pod templates that are cluster-scoped: their pods run in the namespaces of the objects that
# use them, and a ResourceClaimTemplate is namespaced.
CLUSTER_SCOPED_TEMPLATES = frozenset({"ClusterServingRuntime", "ClusterWorkflowTemplate",
                                      "ClusterTrainingRuntime"})


def shared_notes(need: DeviceNeed, notes: list[str]) -> None:
    if need.asked > 1:
        notes.append(f"{need.resource}: {plural(need.asked, 'replica')} became one shared "
                     "device (DRA has no replica count)")
    notes.append(f"{need.resource} was a time-slicing/MPS replica: the pods now share one "
                 "ResourceClaim (one GPU, same node); for time-slicing or MPS add a GpuConfig, "
                 f"which needs the driver gates TimeSlicingSettings/MPSSupport ({NO_REPLICAS})")


def check_sharing(kind: str, data: Mapping[str, Any], spec: PodSpecRef) -> None:
    """A shared ResourceClaim is allocated once, on one node, and lives in one namespace."""
    if kind in CLUSTER_SCOPED_TEMPLATES:
        raise Blocked(f"{kind} is cluster-scoped: its pods run in the namespaces of the objects "
                      "that use it, and pods can only reference a ResourceClaim in their own "
                      "namespace; share a claim per namespace by hand")
    if kind == "DaemonSet":
        raise Blocked("a DaemonSet runs a pod on every node, but one shared ResourceClaim is "
                      "allocated on one node: the pods on every other node would stay Pending; "
                      "give each pod its own claim (--claim-mode template) or migrate by hand")
    reason = _spread_across_nodes(spec.data)
    replicas = _replicas(data)
    if replicas is not None and replicas > MAX_RESERVED_FOR:
        raise Blocked(f"{plural(replicas, 'pod')} at once would share one ResourceClaim, and "
                      f"a claim can be reserved for at most {MAX_RESERVED_FOR} pods (the rest "
                      "would stay Pending): give each pod its own claim (--claim-mode template) "
                      "or migrate by hand")
    if reason and replicas != 1:
        raise Blocked(f"{reason} puts the pods on different nodes, but one shared ResourceClaim "
                      "is allocated on one node: every pod but the first would stay Pending; "
                      "give each pod its own claim or migrate by hand")


def _spread_across_nodes(spec: Mapping[str, Any]) -> str | None:
    terms = dig(spec, "affinity", "podAntiAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(terms, list) and any(isinstance(t, Mapping) and t.get("topologyKey") == _HOSTNAME
                                       for t in terms):
        return f"required pod anti-affinity on {_HOSTNAME}"
    constraints = spec.get("topologySpreadConstraints")
    for c in constraints if isinstance(constraints, list) else ():
        if isinstance(c, Mapping) and c.get("topologyKey") == _HOSTNAME and \
                c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            return f"a DoNotSchedule topology spread constraint on {_HOSTNAME}"
    return None


def _replicas(data: Mapping[str, Any]) -> int | None:
    """How many pods the workload runs at once, where the object says; None: unknown."""
    spec = as_mapping(data.get("spec"))
    if data.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"):
        value = spec.get("replicas", 1)
    elif data.get("kind") == "Job":
        value = spec.get("parallelism", 1)
    elif data.get("kind") == "Pod":
        value = 1
    else:
        return None
    return value if isinstance(value, int) else None


def sharing_note(with_exclusive: bool) -> str:
    """What sharing one ResourceClaim means for the pods of a workload."""
    if with_exclusive:
        return ("the pods of this workload share one ResourceClaim for their shared devices "
                "(they land on one node); each pod keeps its own claim for its exclusive "
                "devices")
    return ("all pods of this workload share one ResourceClaim: they land on one node and see "
            "the same devices")
