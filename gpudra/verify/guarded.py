"""The gate's one warning about `gpudra guard`: namespaces the runbook labelled as migrated
(gpudra.io/migrated=true) that no binding of the guard's policy covers, so nothing stops a new
workload there from asking the device plugin again. A warning, not a blocker: the device plugin
can go either way, but without the guard such a workload waits Pending forever.

Read only for the whole cluster (the gate is judged only then). A list the cluster refuses (a
role from before the guard, without namespaces or admission policies) does not fail verify:
the warning says what was not read instead."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudra.guard.policy import MIGRATED_LABEL, MIGRATED_VALUE
from gpudra.guard.reading import (
    Binding, Namespace, Policy, read_binding, read_namespace, read_policy, unguarded,
)
from gpudra.k8s.objects import plural
from gpudra.sources.live import problem_message
from gpudra.sources.live_reads import GUARD_READS
from gpudra.sources.shapes import object_label

if TYPE_CHECKING:
    from gpudra.cluster import Cluster
    from gpudra.cluster.listing import ProgressHook

MAX_NAMED = 10
_READERS: dict[str, Callable[[Any], Any]] = {
    "namespaces": read_namespace, "validatingadmissionpolicies": read_policy,
    "validatingadmissionpolicybindings": read_binding}


@dataclass(frozen=True)
class GuardState:
    namespaces: tuple[Namespace, ...] = ()
    policies: tuple[Policy, ...] = ()
    bindings: tuple[Binding, ...] = ()
    unread: tuple[str, ...] = ()  # what could not be read or decoded, one line each


def read_guard(cluster: Cluster, on_page: ProgressHook | None = None) -> GuardState:
    """Namespaces, admission policies and bindings, each through its reader. A type the server
    does not serve (admission policies before 1.30) is simply empty."""
    found: dict[str, list[Any]] = {name: [] for name in _READERS}
    unread: list[str] = []
    for read in GUARD_READS:
        resource = cluster.resource(read.group, read.resource)
        if resource is None:
            continue
        before = len(cluster.errors)
        for page in cluster.list(resource, namespace=None, on_page=on_page):
            for obj in page:
                try:
                    found[read.resource].append(_READERS[read.resource](obj))
                except ValueError as error:
                    label = object_label(obj) if isinstance(obj, dict) else "object"
                    unread.append(f"{label}: {error}")
        unread += [f"{read.resource}: {problem_message(p)}" for p in cluster.errors[before:]]
    return GuardState(tuple(found["namespaces"]), tuple(found["validatingadmissionpolicies"]),
                      tuple(found["validatingadmissionpolicybindings"]), tuple(unread))


def guard_warnings(state: GuardState) -> tuple[str, ...]:
    lines = [f"whether migrated namespaces are guarded is not judged: {problem}"
             for problem in state.unread[:MAX_NAMED]]
    bare = unguarded(state.namespaces, state.policies, state.bindings)
    lines += [f"namespace {name} is labelled {MIGRATED_LABEL}={MIGRATED_VALUE} but no binding "
              "of gpudra guard's policy covers it (new workloads there may ask the device "
              "plugin again): gpudra guard | kubectl apply -f -" for name in bare[:MAX_NAMED]]
    if len(bare) > MAX_NAMED:
        lines.append(f"... and {plural(len(bare) - MAX_NAMED, 'more migrated namespace')} "
                     "without the guard")
    return tuple(lines)
