"""The nodes a pod may use, as verify judges them: its nodeSelector and required node
affinity (gpudra.node_selection, the one reading of them); taints and resources are the
scheduler's to say, in its event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.node_selection import describe_selection, selects_node
from gpudra.objects import as_mapping, dig
from gpudra.verify.collect import ClusterState, PodState


def eligible_nodes(pod: PodState, state: ClusterState) -> list[str]:
    """The nodes the pod's spec selects, in the order they were read."""
    spec = _spec(pod)
    return [name for n in state.nodes
            if selects_node(spec, as_mapping(dig(n, "metadata", "labels")),
                            name := str(dig(n, "metadata", "name")))]


def where(pod: PodState) -> str:
    """` (nodeSelector a=b)`, ` (node affinity ...)`, said after "the nodes the pod may use";
    empty when the pod may use any node."""
    spec = _spec(pod)
    if not as_mapping(spec.get("nodeSelector")) and not dig(
            spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
        return ""
    return f" ({describe_selection(spec)})"


def _spec(pod: PodState) -> Mapping[str, Any]:
    return as_mapping(dig(pod.data, "spec"))
