"""A workload held for the bridge until every GPU node it may run on is switched, when one of
those nodes is never switched in the plan (a pool convert cannot empty blocks it): it is
listed as unconverted with the reason, never dropped; the claims strategy's riders are counted
once, the same in the table and the runbook, and no line names a wave that does not exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpudra.cutover.bridge import NEVER_SWITCHED
from gpudra.cutover.waves import UNCONVERTED_BLOCKED
from tests.verify import fleet as f
from tests.verify.test_cutover_bridge import cutover

ON_B = {f.POOL_LABEL: "b"}
ON_A = {f.POOL_LABEL: "a"}


def mpijob(name: str, selector: dict[str, str] | None = None, env: bool = False
           ) -> dict[str, Any]:
    """A v1 MPIJob (training-operator reads its GPU limit: on 1.37 it rides the bridge);
    `env`: NVIDIA_VISIBLE_DEVICES too, which the bridge cannot serve: it stays, and keeps the
    pool it is pinned to on the device plugin."""
    def replica(count: int) -> dict[str, Any]:
        spec = f.pod_spec(gpus=1, node_selector=selector)
        if env:
            spec["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
        return {"replicas": count, "template": {"spec": spec}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"mpiReplicaSpecs": {"Launcher": replica(1), "Worker": replica(2)}}}


def fleet(*workloads: dict[str, Any]) -> list[dict[str, Any]]:
    return [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"),
            mpijob("stuck", ON_B, env=True), *workloads]


# name -> (fleet, strategy, the workloads the bridge serves, the others listed as unconverted
# with their reason; `stuck`, which convert cannot move, is left out of the cases)
CASES = {
    "the only rider, moved by the rewrite in wave 1, may run on pool b": (
        fleet(mpijob("rider")), "rewrite", set(), {"rider": NEVER_SWITCHED}),
    "one rider on a; one no wave reaches": (
        fleet(mpijob("rider"), mpijob("on-a", ON_A)), "rewrite", {"on-a"},
        {"rider": UNCONVERTED_BLOCKED}),
    "no wave at all: the rider's only pool cannot switch": (
        fleet(mpijob("rider"))[1:], "rewrite", set(), {"rider": UNCONVERTED_BLOCKED}),
    "--strategy bridge: a Deployment b cannot keep may run on b": (
        fleet(f.deployment("ml", "web", f.pod_spec(gpus=3), replicas=2),
              f.deployment("ml", "pinned", f.pod_spec(gpus=1, node_selector=ON_A))),
        "bridge", {"pinned"}, {"web": NEVER_SWITCHED}),
    "--strategy bridge: a Deployment b can keep": (
        fleet(f.deployment("ml", "web", f.pod_spec(gpus=2)),
              f.deployment("ml", "pinned", f.pod_spec(gpus=1, node_selector=ON_A))),
        "bridge", {"pinned"}, {"web": UNCONVERTED_BLOCKED}),
}


@pytest.mark.parametrize("name", CASES)
def test_a_workload_whose_last_node_never_switches_is_unconverted(tmp_path: Path,
                                                                  name: str) -> None:
    objects, strategy, bridged, stranded = CASES[name]
    args = ("--target-version", "1.37", "--strategy", strategy)
    code, out, err = cutover(tmp_path, objects, *args, "-o", "json")
    assert code == 1, err
    report = json.loads(out)
    served = {w["name"] for wave in report["waves"] for w in wave["workloads"]
              if w.get("bridged")}
    assert served == bridged
    reasons = {u["name"]: u["reason"] for u in report["unconverted"] if u["name"] != "stuck"}
    assert reasons == stranded
    if strategy == "rewrite":
        assert {r["name"] for r in report["bridge"]["rides"]} == bridged
    _, table, _ = cutover(tmp_path, objects, *args)
    _, markdown, _ = cutover(tmp_path, objects, *args, "-o", "markdown")
    for text in (out, table, markdown):
        assert "wave None" not in text
    if strategy == "rewrite":  # one rider count, said alike in the table and the runbook
        said = [re.search(r"(\d+|no) workloads? (whose controller reads nvidia.com/gpu )?"
                          r"rides?", text) for text in (table, markdown)]
        assert [m.group(1) if m else None for m in said] == \
            [str(len(bridged)) if bridged else "no"] * 2, (table, markdown)
