"""Issue 33 on issue 32's sharing cluster (tests/journey/fleet_sharing.py), with
`gpudra cutover --strategy bridge`: the bridge serves whole GPUs only, so in wave 1 (the MIG
pool) the workloads on MIG slices move to claims on the MIG devices they had, while the Job on
a whole GPU stays unchanged and ends on the pool's whole GPU through the bridge; the wave is
rolled back and done again. The time-sliced pool stops cutover with its reason, as under the
rewrite strategy; once scaled down, the re-run's wave 2 (no second mapping class: the cluster
has one) leaves both its Deployments unchanged, each pod on a whole physical GPU through the
bridge. Then the gate opens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.bridged import BRIDGE, CLAIMS, DEVICE_PLUGIN, served
from tests.journey.cluster import Cluster
from tests.journey.fleet_sharing import SHARING
from tests.journey.steps import WorkloadKey, brought_up, gpudra, running_now, workload_rows

MIG_CONVERTED = {("ml", "Deployment", "tiny"), ("ml", "StatefulSet", "mid"),
                 ("ml", "Pod", "probe")}
WHOLE = ("ml", "Job", "whole")
SHARED = {("serving", "Deployment", "chat"), ("serving", "Deployment", "burst")}


@pytest.fixture(scope="module")
def sharing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("sharing-bridge"), SHARING) as cluster:
        yield cluster


def _states(cluster: Cluster) -> dict[WorkloadKey, str]:
    checked = gpudra(cluster, "verify", "-o", "json")
    return {key: row["state"] for key, row in workload_rows(json.loads(checked.stdout)).items()}


def test_mig_is_converted_whole_gpus_are_bridged_and_the_gate_opens(
        sharing: Cluster, tmp_path: Path) -> None:
    before = {key: {pool for _, pool in places} for key, places in served(sharing,
                                                                          SHARING).items()}
    bin_dir = runbook.tools(tmp_path / "bin", sharing.plane.binary)
    running = dict(SHARING.running_before)

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               stacks: dict[WorkloadKey, str]) -> None:
        # wave 1 from the first plan, wave 2 from the plan made again after it
        out = tmp_path / ("first" if wave.number == 1 else "again")
        with Record("sharing-1.37", "bridge", out).timed(wave.number, what):
            runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=sharing.kubeconfig,
                            cwd=tmp_path, what=f"wave {wave.number} {what}")
        expected = {key: {(stacks.get(key, DEVICE_PLUGIN), pool) for pool in pools}
                    for key, pools in before.items()}
        sharing.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                           lambda: running_now(sharing, SHARING) == running
                           and served(sharing, SHARING) == expected, timeout=90)
        assert _states(sharing) == {key: stacks.get(key, DEVICE_PLUGIN) for key in before}

    made = gpudra(sharing, "cutover", "--strategy", "bridge", "--output-dir",
                  str(tmp_path / "first"), "-o", "markdown")
    assert made.returncode == 1, made.stderr  # blocked before the time-sliced pool
    blocked = next(line for line in made.stdout.splitlines() if line.startswith("**Blocked:**"))
    assert "16 time-slicing replicas on 4 physical GPUs" in blocked, blocked
    [wave] = runbook.parse(made.stdout)
    # Only the MIG workloads are converted; the whole-GPU Job is left as it is.
    converted = {p.name for p in (tmp_path / "first" / "wave-1" / "converted").rglob("*.yaml")
                 if "claims" not in p.parts and "quotas" not in p.parts}
    assert converted == {"deployment-tiny.yaml", "statefulset-mid.yaml", "pod-probe.yaml"}
    assert [p.name for p in (tmp_path / "first" / "wave-1" / "bridged").rglob("*.yaml")] == [
        "job-whole.yaml"]
    wave_1 = {**{key: CLAIMS for key in MIG_CONVERTED}, WHOLE: BRIDGE}
    follow(wave, wave.steps, "steps", wave_1)
    follow(wave, wave.rollback, "rollback", {})
    follow(wave, wave.steps, "steps", wave_1)
    quota = sharing.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/mig-quota")
    assert not [key for key in quota["spec"]["hard"] if "nvidia.com/mig" in key], quota

    scaled = runbook.run("kubectl scale deployment -n serving burst --replicas=1",
                         bin_dir=bin_dir, kubeconfig=sharing.kubeconfig, cwd=tmp_path)
    assert scaled.exit_code == 0, scaled.output
    running[("serving", "Deployment", "burst")] = 1
    sharing.plane.wait("burst scaled to 1", lambda: running_now(sharing, SHARING) == running,
                       timeout=60)
    again = gpudra(sharing, "cutover", "--strategy", "bridge", "--output-dir",
                   str(tmp_path / "again"), "-o", "markdown")
    assert again.returncode == 0, again.stdout + again.stderr
    [wave_2] = runbook.parse(again.stdout)
    assert wave_2.number == 2
    assert not [step for step in wave_2.steps if "/mapping/" in step]  # the class exists
    follow(wave_2, wave_2.steps, "steps", {**wave_1, **{key: BRIDGE for key in SHARED}})
    report = json.loads(gpudra(sharing, "verify", "-o", "json").stdout)
    gate = report["decommission"]
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
    for name in SHARING.machines():
        capacity = sharing.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]
