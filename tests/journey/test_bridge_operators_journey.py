"""Issue 33 on issue 32's operators cluster (tests/journey/fleet_operators.py: a
LeaderWorkerSet, a JobSet, a RayCluster, two KServe InferenceServices, Helm- and Argo
CD-managed Deployments; stand-ins make the children the real operators make), with
`gpudra cutover --strategy bridge`. The InferenceService whose image KServe picks by the GPU
limit, which the rewrite cannot move, moves here: the bridge keeps the limit. The runbook is
followed as written; each wave that moves an operator's workload is rolled back and done
again; after every step every pod runs unchanged on the GPU product it ran on, through the
bridge exactly when its node is switched (a workload that may use both L4 pools is held to the
wave that switches the second), and verify says what the API server shows. Then the gate
opens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.bridged import BRIDGE, DEVICE_PLUGIN, served
from tests.journey.cluster import Cluster
from tests.journey.fleet_operators import BLOCKED, OPERATORS
from tests.journey.operators import top_owner
from tests.journey.steps import WorkloadKey, gpudra, workload_rows
from tests.journey.test_operators_journey import fleet, running  # noqa: F401 (the fixture)


def by_node(cluster: Cluster) -> dict[WorkloadKey, set[tuple[str, str]]]:
    """(stack, node) of each pod Running and Ready, per workload."""
    return served(cluster, OPERATORS, top_owner, lambda name, _: name)


def switched(cluster: Cluster) -> set[str]:
    return {name for name in OPERATORS.machines() if cluster.plane.admin.get(
        f"/api/v1/nodes/{name}")["metadata"]["labels"].get("gpudra.io/gpu-stack") == "dra"}


def test_every_operator_workload_ends_on_the_bridge_even_the_one_the_rewrite_cannot_move(
        fleet: Cluster, tmp_path: Path) -> None:  # noqa: F811 (the fixture)
    planned = gpudra(fleet, "cutover", "--strategy", "bridge", "-o", "json")
    assert planned.returncode == 0, planned.stderr  # complete: nothing stays behind
    report = json.loads(planned.stdout)
    moved_in = {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
                for wave in report["waves"]}
    assert BLOCKED in set().union(*moved_in.values())
    assert all(w["bridged"] for wave in report["waves"] for w in wave["workloads"])
    product = {name: machine.product.label for name, machine in OPERATORS.machines().items()}
    before = {key: {product[node] for _, node in places}
              for key, places in by_node(fleet).items()}
    made = gpudra(fleet, "cutover", "--strategy", "bridge", "--output-dir",
                  str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in)
    assert not [path for path in (tmp_path / "cutover").rglob("converted/**/*")
                if path.is_file()]  # no manifest changed (each wave's converted/ is empty)
    bin_dir = runbook.tools(tmp_path / "bin", fleet.plane.binary)

    def settled(held: set[WorkloadKey]) -> bool:
        """Every workload runs its pods on the GPU products it ran on (the two L4 pools are
        one product: a pod may come back on either), each through the bridge exactly when
        its node is switched; those the waves so far hold, only through the bridge."""
        on_dra, now = switched(fleet), by_node(fleet)
        return (running(fleet) == OPERATORS.running_before
                and {key: {product[node] for _, node in places}
                     for key, places in now.items()} == before
                and all((stack == BRIDGE) == (node in on_dra)
                        for places in now.values() for stack, node in places)
                and all(stack == BRIDGE for key in held for stack, _ in now.get(key, ())))

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               held: set[WorkloadKey]) -> None:
        with Record("operators-1.37", "bridge", tmp_path / "cutover").timed(wave.number, what):
            runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=fleet.kubeconfig,
                            cwd=tmp_path, what=f"wave {wave.number} {what}")
        try:
            fleet.plane.wait(f"every GPU workload running again after wave {wave.number} "
                             f"{what}", lambda: settled(held), timeout=120)
        except TimeoutError:
            pytest.fail(f"after wave {wave.number} {what}: running {running(fleet)}, where "
                        f"{by_node(fleet)}, switched {switched(fleet)}, held {held}")
        # verify says of each workload what the API server shows: on the bridge when every
        # pod is, else on the device plugin
        rows = workload_rows(json.loads(gpudra(fleet, "verify", "-o", "json").stdout))
        now = by_node(fleet)
        assert {key: (row["state"], row["pods_ready"]) for key, row in rows.items()} == {
            key: (BRIDGE if all(stack == BRIDGE for stack, _ in now[key]) else DEVICE_PLUGIN,
                  count) for key, count in running(fleet).items()}

    moved: set[WorkloadKey] = set()
    for wave in waves:
        if {key for key in moved_in[wave.number] if key[1] != "Deployment"}:
            follow(wave, wave.steps, "steps", moved | moved_in[wave.number])
            follow(wave, wave.rollback, "rollback", moved)
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)
    gate = json.loads(gpudra(fleet, "verify", "-o", "json").stdout)["decommission"]
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
