"""The nodes a pod may use, as verify judges them: its nodeSelector and required node
affinity (gpudra.k8s.node_selection, the one reading of them); taints and resources are the
scheduler's to say, in its event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.node_selection import describe_selection, selects_node
from gpudra.k8s.objects import as_mapping, dig
from gpudra.verify.collect import ClusterState, PodState


def eligible_nodes(pod: PodState, state: ClusterState) -> list[str]:
    """The nodes the pod's spec selects, in the order they were read. Worked out once per
    selection: the Pending pods of a workload share theirs, and matching every node again for
    each of them was a tenth of verify's time on a cluster of 500 nodes."""
    spec = _spec(pod)
    # Only these two fields decide (gpudra.k8s.node_selection); repr is exact for JSON values.
    key = repr((spec.get("nodeSelector"), dig(spec, *_REQUIRED)))
    found = state.eligible_by_selection.get(key)
    if found is None:
        found = [name for n in state.nodes
                 if selects_node(spec, as_mapping(dig(n, "metadata", "labels")),
                                 name := str(dig(n, "metadata", "name")))]
        state.eligible_by_selection[key] = found
    return list(found)


def where(pod: PodState) -> str:
    """` (nodeSelector a=b)`, ` (node affinity ...)`, said after "the nodes the pod may use";
    empty when the pod may use any node."""
    spec = _spec(pod)
    if not as_mapping(spec.get("nodeSelector")) and not dig(
            spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
        return ""
    return f" ({describe_selection(spec)})"


_REQUIRED = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")


def _spec(pod: PodState) -> Mapping[str, Any]:
    return as_mapping(dig(pod.data, "spec"))
