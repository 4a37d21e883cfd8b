"""Issue 32's GKE-style cluster, migrated with gpudra alone, on one cluster in file order:
before the first wave the fleet runs on the device plugin and what gpudra verify says of each
workload must be what the API server shows; then cutover's runbook is followed as written,
wave by wave, and every workload must be running again after each wave."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controlplane.test_guard import DENIED, apply_guard, kubectl_create, outcome, workload
from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.cluster import Cluster
from tests.journey.fleets import GKE
from tests.journey.observe import gpu_pods, running_by_owner
from tests.journey.steps import (brought_up, gpudra, moved_by_wave, running_now, where_they_run,
                                 workload_rows)


@pytest.fixture(scope="module")
def gke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("gke"), GKE) as cluster:
        yield cluster


def test_before_the_first_wave_verify_sees_what_the_api_server_shows(gke: Cluster) -> None:
    result = gpudra(gke, "verify", "-o", "json")
    assert result.returncode == 0, result.stderr  # nothing on claims yet, so nothing failing
    report = json.loads(result.stdout)
    rows = workload_rows(report)
    workloads = {(obj["metadata"]["namespace"], obj["kind"], obj["metadata"]["name"])
                 for obj in GKE.objects if obj["kind"] != "ResourceQuota"}
    assert set(rows) == workloads
    assert {row["state"] for row in rows.values()} == {"device plugin"}

    shown = gpu_pods(gke.plane.admin, GKE.namespaces)
    running = running_by_owner(shown)
    assert {key: row["pods_ready"] for key, row in rows.items() if row["pods_ready"]} == running

    gate = report["decommission"]
    assert gate["safe"] is False
    named = {blocker.split()[1] for blocker in gate["blockers"] if blocker.startswith("pod ")}
    assert named == {f"{view.namespace}/{view.name}" for view in shown if view.node}


def test_the_runbook_runs_as_written_and_every_workload_runs_after_each_wave(
        gke: Cluster, tmp_path: Path) -> None:
    """Every shell line of every wave exits 0 as written (its own waits included, and its
    last line, gpudra verify); after each wave every workload runs as many pods as before,
    those moved so far on claims and the others on the device plugin, each on the pool it ran
    on before (the fleet's node selectors pin each workload to one product's pool). The first
    wave is also rolled back as written (everything back on the device plugin) and done
    again, and so is the last, which labels the namespaces it finishes for gpudra guard: the
    guard refuses device-plugin workloads from before the first wave, and the last wave's
    rollback, which puts device-plugin originals back, unlabels first."""
    apply_guard(gke.plane, "--action", "deny")
    moved_in = moved_by_wave(gke)
    before = where_they_run(gke, GKE)
    made = gpudra(gke, "cutover", "--output-dir", str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in) == [1, 2, 3]
    bin_dir = runbook.tools(tmp_path / "bin", gke.plane.binary)
    moved: set[tuple[str, str, str]] = set()
    record = Record("gke-1.37", "claims", tmp_path / "cutover")

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               now_moved: set[tuple[str, str, str]]) -> None:
        with record.timed(wave.number, what):
            runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=gke.kubeconfig, cwd=tmp_path,
                            what=f"wave {wave.number} {what}")
        expected = {key: {(key in now_moved, pool) for _, pool in places}
                    for key, places in before.items()}
        gke.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                       lambda: running_now(gke, GKE) == GKE.running_before
                       and where_they_run(gke, GKE) == expected, timeout=60)

    for wave in waves:
        # the first and the last wave once forward, rolled back, then forward again
        if wave.number in (waves[0].number, waves[-1].number):
            assert any("label namespace" in step for step in wave.steps) == (wave is waves[-1])
            follow(wave, wave.steps, "steps", moved | moved_in[wave.number])
            follow(wave, wave.rollback, "rollback", set(moved))
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)
        # The quota counts claims from the namespace's first wave on, and device-plugin GPUs
        # until its last workload on them has moved.
        hard = gke.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/gpu-quota")["spec"][
            "hard"]
        in_ml = {key for key in before if key[0] == "ml"} | {
            (o["metadata"]["namespace"], o["kind"], o["metadata"]["name"]) for o in GKE.objects
            if o["metadata"].get("namespace") == "ml" and o["kind"] != "ResourceQuota"}
        assert ("gpu.nvidia.com.deviceclass.resource.k8s.io/devices" in hard) == bool(
            in_ml & moved), hard
        assert ("requests.nvidia.com/gpu" in hard) == bool(in_ml - moved), hard
    # Every workload moved, every node switched, the quota counting claims only: the gate
    # opens, and the API server shows nothing left for the device plugin to serve.
    report = json.loads(gpudra(gke, "verify", "-o", "json").stdout)
    assert (report["decommission"]["safe"], report["decommission"]["blockers"]) == (True, [])
    # Every namespace was finished by its last wave, labelled, and is guarded: a new
    # device-plugin workload there is refused.
    assert report["decommission"]["warnings"] == []
    for namespace in GKE.namespaces:
        labels = gke.plane.admin.get(f"/api/v1/namespaces/{namespace}")["metadata"]["labels"]
        assert labels.get("gpudra.io/migrated") == "true", (namespace, labels)
        again = workload("Deployment", "again", namespace, {"nvidia.com/gpu": "1"})
        assert outcome(kubectl_create(gke.plane, again)) == DENIED, namespace
    quota = gke.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/gpu-quota")
    hard = quota["spec"]["hard"]
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "16"
    assert not [key for key in hard if "nvidia.com/" in key]
    assert not [v for v in gpu_pods(gke.plane.admin, GKE.namespaces) if v.device_plugin]
    for name in GKE.machines():
        capacity = gke.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]
