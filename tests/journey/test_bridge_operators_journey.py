"""Issue 33 on issue 32's operators cluster (tests/journey/fleet_operators.py: a
LeaderWorkerSet, a JobSet, a RayCluster, two KServe InferenceServices, Helm- and Argo
CD-managed Deployments; stand-ins make the children the real operators make), with
`gpudra cutover --strategy bridge`. The InferenceService whose image KServe picks by the GPU
limit, which the rewrite cannot move, moves here: the bridge keeps the limit. The runbook is
followed as written; each wave that moves an operator's workload is rolled back and done
again; after every step every pod runs unchanged on the GPU product it ran on, those of the
waves done through the bridge, and verify says what the API server shows. Then the gate
opens."""

from __future__ import annotations

import json
from pathlib import Path

from tests.journey import runbook
from tests.journey.bridged import BRIDGE, DEVICE_PLUGIN, served
from tests.journey.cluster import Cluster
from tests.journey.fleet_operators import BLOCKED, OPERATORS
from tests.journey.operators import top_owner
from tests.journey.steps import WorkloadKey, gpudra, workload_rows
from tests.journey.test_operators_journey import fleet, running  # noqa: F401 (the fixture)


def by_product(cluster: Cluster) -> dict[WorkloadKey, set[tuple[str, str]]]:
    """(stack, GPU product) per workload: the two L4 pools are one product, and a pod may come
    back on either."""
    return served(cluster, OPERATORS, top_owner, lambda machine: machine.product.label)


def test_every_operator_workload_ends_on_the_bridge_even_the_one_the_rewrite_cannot_move(
        fleet: Cluster, tmp_path: Path) -> None:  # noqa: F811 (the fixture)
    planned = gpudra(fleet, "cutover", "--strategy", "bridge", "-o", "json")
    assert planned.returncode == 0, planned.stderr  # complete: nothing stays behind
    report = json.loads(planned.stdout)
    moved_in = {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
                for wave in report["waves"]}
    assert BLOCKED in set().union(*moved_in.values())
    assert all(w["bridged"] for wave in report["waves"] for w in wave["workloads"])
    before = {key: {product for _, product in places}
              for key, places in by_product(fleet).items()}
    made = gpudra(fleet, "cutover", "--strategy", "bridge", "--output-dir",
                  str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in)
    assert not list((tmp_path / "cutover").rglob("converted"))  # no manifest changed
    bin_dir = runbook.tools(tmp_path / "bin", fleet.plane.binary)

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               now: set[WorkloadKey]) -> None:
        runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=fleet.kubeconfig, cwd=tmp_path,
                        what=f"wave {wave.number} {what}")
        expected = {key: {(BRIDGE if key in now else DEVICE_PLUGIN, product)
                          for product in products} for key, products in before.items()}
        fleet.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                         lambda: running(fleet) == OPERATORS.running_before
                         and by_product(fleet) == expected, timeout=120)
        rows = workload_rows(json.loads(gpudra(fleet, "verify", "-o", "json").stdout))
        assert {key: (row["state"], row["pods_ready"]) for key, row in rows.items()} == {
            key: (BRIDGE if key in now else DEVICE_PLUGIN, count)
            for key, count in running(fleet).items()}

    moved: set[WorkloadKey] = set()
    for wave in waves:
        if {key for key in moved_in[wave.number] if key[1] != "Deployment"}:
            follow(wave, wave.steps, "steps", moved | moved_in[wave.number])
            follow(wave, wave.rollback, "rollback", moved)
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)
    gate = json.loads(gpudra(fleet, "verify", "-o", "json").stdout)["decommission"]
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
