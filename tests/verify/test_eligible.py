"""verify's nodes a Pending pod may use: the same answer as matching every node, with the nodes
matched once per node selection however many pods share it (issue 32: verify's time)."""

from __future__ import annotations

from typing import Any

import pytest

import gpudra.verify.eligible as eligible
from gpudra.k8s.node_selection import selects_node
from gpudra.verify.collect import ClusterState, pod_state

NODES = [("a1", {"pool": "a", "gpu": "h100"}), ("a2", {"pool": "a", "gpu": "a100"}),
         ("b1", {"pool": "b", "gpu": "h100"}), ("c1", {})]


def _affinity(key: str, values: list[str]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": values}]}]}}}


# (pod spec's selection, the nodes it selects)
SELECTIONS = [
    ({}, ["a1", "a2", "b1", "c1"]),
    ({"nodeSelector": {"pool": "a"}}, ["a1", "a2"]),
    ({"nodeSelector": {"pool": "b"}}, ["b1"]),
    ({"affinity": _affinity("gpu", ["h100"])}, ["a1", "b1"]),
    ({"nodeSelector": {"pool": "a"}, "affinity": _affinity("gpu", ["h100"])}, ["a1"]),
    ({"nodeSelector": {"pool": "z"}}, []),
    # Fields that do not select nodes do not split what is shared.
    ({"nodeSelector": {"pool": "a"}, "tolerations": [{"operator": "Exists"}]}, ["a1", "a2"]),
]


def _state() -> ClusterState:
    state = ClusterState()
    state.nodes = [{"metadata": {"name": name, "labels": labels}} for name, labels in NODES]
    return state


def _pod(index: int, selection: dict[str, Any]) -> Any:
    return pod_state({"metadata": {"namespace": "ns", "name": f"p{index}"},
                      "spec": {"containers": [{"name": "c"}], **selection},
                      "status": {"phase": "Pending"}})


def test_each_selection_gets_its_nodes_whatever_was_asked_before() -> None:
    state = _state()
    pods = [(_pod(i, sel), want) for i, (sel, want) in enumerate(SELECTIONS * 3)]
    assert [eligible.eligible_nodes(pod, state) for pod, _ in pods] == [w for _, w in pods]


def test_a_caller_changing_the_list_does_not_change_the_next_answer() -> None:
    state = _state()
    first = eligible.eligible_nodes(_pod(0, {}), state)
    first.clear()
    assert eligible.eligible_nodes(_pod(1, {}), state) == ["a1", "a2", "b1", "c1"]


@pytest.mark.parametrize("pods", [1, 10, 100])
def test_the_nodes_are_matched_once_per_selection(pods: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counted(spec: Any, labels: Any, name: str) -> bool:
        calls.append(name)
        return selects_node(spec, labels, name)

    monkeypatch.setattr(eligible, "selects_node", counted)
    state = _state()
    for index in range(pods):
        for selection, _ in SELECTIONS:
            eligible.eligible_nodes(_pod(index, selection), state)
    distinct = len(SELECTIONS) - 1  # the last one selects as the second does
    assert len(calls) == distinct * len(NODES)
