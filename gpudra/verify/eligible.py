"""The nodes a pod may use, as verify judges them: by its nodeSelector only (required
affinity, taints and resources are the scheduler's to say, in its event)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.objects import as_mapping, dig
from gpudra.verify.collect import ClusterState, PodState


def eligible_nodes(pod: PodState, state: ClusterState) -> list[str]:
    """The nodes whose labels satisfy the pod's nodeSelector, in the order they were read."""
    selector = node_selector(pod)
    return [str(dig(n, "metadata", "name")) for n in state.nodes
            if all(as_mapping(dig(n, "metadata", "labels")).get(str(k)) == str(v)
                   for k, v in selector.items())]


def node_selector(pod: PodState) -> Mapping[str, Any]:
    return as_mapping(dig(pod.data, "spec", "nodeSelector"))


def selector_text(selector: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
