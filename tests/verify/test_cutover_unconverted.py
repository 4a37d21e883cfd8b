"""cutover's JSON lists the GPU workloads that stay on the device plugin after its waves
(`unconverted`: kind, namespace, name and why), where it had only the `blocked` line (issue 32,
the last open point). Data-driven: each fleet, and what must be listed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpudra.cutover.waves import UNCONVERTED_BLOCKED, UNCONVERTED_NO_NODE
from tests.verify import fleet as f
from tests.verify.test_cutover import blocked_fleet, cutover, pinned, safe_fleet


def _mpijob() -> dict[str, Any]:
    """A v1 MPIJob whose launcher holds a GPU: convert blocks it."""
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "template": {"spec": f.pod_spec(
            gpus=1, node_selector=pinned("b"))}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob",
            "metadata": {"name": "allreduce", "namespace": "ml"},
            "spec": {"mpiReplicaSpecs": {"Launcher": replica(1), "Worker": replica(2)}}}


def _all_on_dra(*workloads: dict[str, Any]) -> list[dict[str, Any]]:
    return [f.node("d-1", 8, dra=True, pool="d"), f.gpu_slice("d-1", 8), f.device_class(),
            *workloads]


MPI_REASON = ("convert cannot move it: training-operator's v1 MPIJob treats the launcher as a "
              "GPU host")

# (fleet, cutover's extra arguments, the (namespace, kind, name) listed, each reason's start)
CASES: dict[str, tuple[list[dict[str, Any]], tuple[str, ...],
                       list[tuple[str, str, str, str]]]] = {
    "complete: nothing stays": (safe_fleet(), (), []),
    # before 1.37: on 1.37 the MPIJob, whose controller reads the limit, rides the bridge
    "convert blocks one": (
        [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), f.node("b-2", 8, pool="b"),
         f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=2), _mpijob()],
        ("--target-version", "1.36"),
        # web may run on b too, which cannot switch: no wave had to move it
        [("ml", "Deployment", "web", UNCONVERTED_BLOCKED),
         ("ml", "MPIJob", "allreduce", MPI_REASON)]),
    "convert blocks one for its controller, 1.37: it rides the bridge": (
        [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), f.node("b-2", 8, pool="b"),
         f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=2), _mpijob()],
        ("--target-version", "1.37"), []),
    "no wave can be made": (blocked_fleet(), ("--max-wave-nodes", "1"),
                            [("ml", "Deployment", "wide", UNCONVERTED_BLOCKED)]),
    "every node on DRA, one fits no node": (
        _all_on_dra(f.deployment("ml", "late", f.pod_spec(gpus=2), replicas=2),
                    f.deployment("ml", "lost", f.pod_spec(gpus=1,
                                                          node_selector={"no-such": "node"}))),
        (), [("ml", "Deployment", "lost", UNCONVERTED_NO_NODE)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cutover_lists_what_stays_on_the_device_plugin(case: str, tmp_path: Path) -> None:
    objects, args, wanted = CASES[case]
    code, report, err = cutover(tmp_path, objects, *args)
    assert report is not None, err
    listed = report["unconverted"]
    assert [(u["namespace"], u["kind"], u["name"]) for u in listed] == \
        [w[:3] for w in wanted]
    for entry, (*_, reason) in zip(listed, wanted):
        assert set(entry) == {"kind", "namespace", "name", "reason"}
        assert entry["reason"].startswith(reason), entry
    # what is listed is exactly what no wave moved and the plan is incomplete for
    assert (code == 0) is report["complete"]
    moved = {(w["namespace"], w["kind"], w["name"])
             for wave in report["waves"] for w in wave["workloads"]}
    assert not moved & {w[:3] for w in wanted}
    if report["complete"]:
        assert all(u["reason"] != UNCONVERTED_BLOCKED for u in listed)


def test_what_convert_writes_nothing_for_is_listed_with_convert_s_reason() -> None:
    """The fleet's `unconvertible` (labels, and why in the same order) become entries."""
    from gpudra.cutover.pools import Fleet
    from gpudra.cutover.waves import CutoverPlan, unconverted

    fleet = Fleet((), (), (), (), None, ("ml/Deployment/b", "batch/CronJob/a"),
                  unconvertible_why=("convert leaves it as it is (strategy manual)", "why a"))
    assert [(u.namespace, u.kind, u.name, u.reason) for u in
            unconverted(fleet, CutoverPlan((), None))] == [
        ("batch", "CronJob", "a", "convert cannot move it: why a"),
        ("ml", "Deployment", "b",
         "convert cannot move it: convert leaves it as it is (strategy manual)")]
