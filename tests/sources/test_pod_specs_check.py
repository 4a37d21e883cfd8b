"""The typed check of a workload's pod specs (gpudra.sources.shapes): the same problem, naming
the same field, as reading pod_specs in order; and a workload whose pod specs all pass is
checked without building pod_specs' ordered references (issue 32: verify's typed reading was
its largest cost beyond the audit's on 100,000 pods)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpudra.sources import shapes
from gpudra.workloads import WorkloadTable


def _deployment(**pod: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            **pod}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ml"},
            "spec": {"replicas": 1, "template": {"spec": spec}}}


def _nested_elsewhere(value: Any) -> dict[str, Any]:
    """A pod-like mapping outside the kind's table path: found by the generic search."""
    obj = _deployment()
    obj["spec"]["sidecar"] = {"template": {"spec": {"containers": [{"name": "x"}],
                                                    "nodeName": value}}}
    return obj


def _pytorchjob(master: Any, worker: Any) -> dict[str, Any]:
    def replica(node_selector: Any) -> dict[str, Any]:
        return {"template": {"spec": {"containers": [{"name": "c"}],
                                      "nodeSelector": node_selector}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Worker": replica(worker),
                                             "Master": replica(master)}}}


# (object, the problem object_problem names: None when it passes)
CASES: list[tuple[dict[str, Any], str | None]] = [
    (_deployment(), None),
    (_deployment(nodeSelector={"pool": "a"}, tolerations=[{"operator": "Exists"}]), None),
    (_deployment(nodeName=5), "spec.template.spec.nodeName: expected `str`, got `int`"),
    (_deployment(tolerations="all"), "spec.template.spec.tolerations: expected `array`, "
                                     "got `str`"),
    (_nested_elsewhere("n1"), None),
    (_nested_elsewhere(["n1"]), "spec.sidecar.template.spec.nodeName: expected `str`, "
                                "got `array`"),
    (_pytorchjob({"a": "b"}, {"a": "b"}), None),
    # Two bad pod specs: the first in pod_specs' order is named, as before.
    (_pytorchjob({"a": 1}, {"a": 2}),
     "spec.pytorchReplicaSpecs.Master.template.spec.nodeSelector[a]: expected `str`, got `int`"),
]


def _exact(obj: dict[str, Any], table: WorkloadTable) -> str | None:
    """The problem as pod_specs' ordered reading finds it (the reference)."""
    group, kind = obj["apiVersion"].rpartition("/")[0], obj["kind"]
    for ref in table.pod_specs(group, kind, obj):
        problem = shapes._decoded(ref.data, shapes.PodSpec, ref.path)
        if problem is not None:
            return problem
    return None


@pytest.mark.parametrize(("obj", "problem"), CASES)
def test_the_problem_named_is_the_ordered_readings(obj: dict[str, Any],
                                                   problem: str | None) -> None:
    table = WorkloadTable()
    said = shapes.object_problem(copy.deepcopy(obj), table)
    assert said == _exact(obj, table) == problem


@pytest.mark.parametrize(("obj", "problem"), CASES)
def test_pod_specs_are_ordered_only_for_a_problem(obj: dict[str, Any], problem: str | None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    table = WorkloadTable()
    wanted = problem is not None
    ordered: list[str] = []
    original = WorkloadTable.pod_specs

    def counting(self: WorkloadTable, group: str, kind: str, data: Any) -> Any:
        ordered.append(kind)
        return original(self, group, kind, data)

    monkeypatch.setattr(WorkloadTable, "pod_specs", counting)
    shapes.object_problem(obj, table)
    assert bool(ordered) is wanted
