"""The typed check of a workload's pod specs (gpudra.sources.shapes): the same problem, naming
the same field, as reading pod_specs in order; and a workload whose pod specs all pass is
checked without building pod_specs' ordered references (issue 32: verify's typed reading was
its largest cost beyond the audit's on 100,000 pods)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpudra.sources import shapes
from gpudra.k8s.workloads import WorkloadTable


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


def _with(obj: dict[str, Any], *path: Any, value: Any) -> dict[str, Any]:
    """`obj` with the value at `path` replaced (a copy)."""
    obj = copy.deepcopy(obj)
    where = obj
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return obj


def _statefulset() -> dict[str, Any]:
    return {**_deployment(), "apiVersion": "apps/v1", "kind": "StatefulSet"}


# Workloads whose one pod spec is spec.template.spec, passing and failing in every place the
# one-decode check (issue 32) could see differently from the Workload decode plus the pod specs
# the table and the generic search find.
TEMPLATED: list[dict[str, Any]] = [
    _deployment(),
    _statefulset(),
    _with(_deployment(), "spec", "replicas", value="3"),
    _with(_deployment(), "spec", "replicas", value=2**40),
    _with(_deployment(), "metadata", "labels", value={"a": 1}),
    _with(_deployment(), "status", value={"desiredNumberScheduled": "x"}),
    _with(_deployment(), "spec", "template", value="not a template"),
    _with(_deployment(), "spec", "template", value={"spec": None}),
    _with(_deployment(), "spec", "template", value={"spec": ["a list"]}),
    _with(_deployment(), "spec", "template", "spec", "containers", value="c"),
    _with(_deployment(), "spec", "template", "spec", "containers", value=[]),
    _with(_deployment(), "spec", "template", "spec", "nodeName", value=7),
    _nested_elsewhere("n1"),
    _nested_elsewhere(["n1"]),
    # "containers" named where the generic search does not look, or as a value
    _with(_deployment(), "metadata", "annotations", value={"containers": "2"}),
    _with(_deployment(), "spec", "template", "metadata", value={"labels": {"x": "containers"}}),
    _with(_deployment(), "spec", "extra", value={"containers": [{"name": "y", "image": 5}]}),
    _with(_deployment(), "spec", "extra", value={"containers": "none"}),
    _with(_with(_deployment(), "spec", "template", "spec", value={"nodeName": "n"}),
          "spec", "other", value={"containers": [{"name": 3}]}),
    _with(_deployment(), "spec", "template", "spec", "initContainers",
          value=[{"name": "i", "resources": {"limits": {"nvidia.com/gpu": [1]}}}]),
    # not JSON data: decided by the checks themselves
    _with(_deployment(), "spec", "template", "spec", "nodeSelector", value={1: "a"}),
]


def _reference(obj: dict[str, Any], table: WorkloadTable) -> str | None:
    """The Workload decode, then the pod specs in pod_specs' order: the checks as they were
    before the one-decode path."""
    declared = shapes.Workload if table.lookup("apps", obj["kind"]) else shapes.Other
    return shapes._decoded(obj, declared) or _exact(obj, table)


@pytest.mark.parametrize("obj", TEMPLATED)
def test_the_one_decode_check_says_what_the_two_checks_say(obj: dict[str, Any]) -> None:
    table = WorkloadTable()
    assert shapes.object_problem(copy.deepcopy(obj), table) == _reference(obj, table)


def test_a_passing_templated_workload_is_not_searched_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic search (a walk of the whole object) ran for each of a cluster's Deployments
    and ReplicaSets: three quarters of their typed check (failed before)."""
    import gpudra.k8s.workloads

    searched: list[Any] = []
    original = gpudra.k8s.workloads._generic_pod_specs

    def counting(data: Any, limit: int = 12) -> Any:
        searched.append(data)
        return original(data, limit)

    passing = [_deployment(), _statefulset(),
               _with(_deployment(), "spec", "template", value={"spec": None}),
               _with(_deployment(), "spec", "template", "spec", "containers", value=[]),
               _with(_deployment(), "metadata", "annotations", value={"gpu": "2"})]
    assert all(_reference(obj, WorkloadTable()) is None for obj in passing)
    monkeypatch.setattr(gpudra.k8s.workloads, "_generic_pod_specs", counting)
    for obj in passing:
        assert shapes.object_problem(obj, WorkloadTable()) is None
    assert searched == []


def test_a_kind_the_user_maps_elsewhere_is_checked_as_the_table_says() -> None:
    """A user entry for Deployment with another pod-spec path: not the one-decode kind."""
    from gpudra.k8s.workloads import WorkloadKind

    table = WorkloadTable().with_kinds([WorkloadKind("apps", "Deployment", ("spec.podSpec",))])
    obj = _with(_deployment(), "spec", "podSpec", value={"nodeName": 5})
    assert shapes.object_problem(obj, table) == "spec.podSpec.nodeName: expected `str`, got `int`"
