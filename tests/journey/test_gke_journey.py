"""Issue 32's GKE-style cluster, migrated with gpudra alone, on one cluster in file order:
before the first wave the fleet runs on the device plugin and what gpudra verify says of each
workload must be what the API server shows; then cutover's runbook is followed as written,
wave by wave, and every workload must be running again after each wave."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.journey import runbook
from tests.journey.cluster import Cluster, journey_cluster_at
from tests.journey.fleets import GKE, POOL_LABEL, Fleet, node
from tests.journey.observe import gpu_pods, running_by_owner


def gpudra(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    home = cluster.kubeconfig.parent
    return subprocess.run([sys.executable, "-m", "gpudra", *args, "--kubeconfig",
                           str(cluster.kubeconfig)], capture_output=True, text=True,
                          check=False, cwd=home, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": str(home)})


def _bring_up(cluster: Cluster, fleet: Fleet) -> None:
    plane = cluster.plane
    for name, machine in fleet.machines().items():
        cluster.stack.add(name, machine)
        plane.create_node(node(name, machine))
    for namespace in fleet.namespaces:
        plane.ensure_namespace(namespace)
    for obj in fleet.objects:
        plane.admin.create(plane.object_path(obj).rpartition("/")[0], obj)
    plane.wait("every GPU workload running on the device plugin", lambda: running_by_owner(
        gpu_pods(plane.admin, fleet.namespaces)) == fleet.running_before, timeout=120)


@pytest.fixture(scope="module")
def gke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with journey_cluster_at(tmp_path_factory.mktemp("gke"), GKE.apiserver_args) as cluster:
        _bring_up(cluster, GKE)
        yield cluster


def _rows(report: dict) -> dict[tuple[str, str, str], dict]:
    return {(row["namespace"], row["kind"], row["name"]): row for row in report["workloads"]
            if row.get("kind")}


def test_before_the_first_wave_verify_sees_what_the_api_server_shows(gke: Cluster) -> None:
    result = gpudra(gke, "verify", "-o", "json")
    assert result.returncode == 0, result.stderr  # nothing on claims yet, so nothing failing
    report = json.loads(result.stdout)
    rows = _rows(report)
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


def _pods_where_they_were(cluster: Cluster, fleet: Fleet) -> dict[tuple[str, str, str], int]:
    return dict(running_by_owner(gpu_pods(cluster.plane.admin, fleet.namespaces)))


def _moved_by_wave(cluster: Cluster) -> dict[int, set[tuple[str, str, str]]]:
    planned = gpudra(cluster, "cutover", "-o", "json")
    assert planned.returncode == 0, planned.stderr
    return {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
            for wave in json.loads(planned.stdout)["waves"]}


def _where_they_run(cluster: Cluster) -> dict[tuple[str, str, str], set[tuple[bool, str]]]:
    """Per workload, the (on claims, node pool) of each of its pods Running and Ready."""
    pools = {name: machine.labels[POOL_LABEL] for name, machine in GKE.machines().items()}
    out: dict[tuple[str, str, str], set[tuple[bool, str]]] = {}
    for view in gpu_pods(cluster.plane.admin, GKE.namespaces):
        if view.phase == "Running" and view.ready:
            on_claims = view.claims and not view.device_plugin
            out.setdefault((view.namespace, *view.owner), set()).add(
                (on_claims, pools.get(view.node or "", "")))
    return out


def test_the_runbook_runs_as_written_and_every_workload_runs_after_each_wave(
        gke: Cluster, tmp_path: Path) -> None:
    """Every shell line of every wave exits 0 as written (its own waits included, and its
    last line, gpudra verify); after each wave every workload runs as many pods as before,
    those moved so far on claims and the others on the device plugin, each on the pool it ran
    on before (the fleet's node selectors pin each workload to one product's pool). The first
    wave is also rolled back as written (everything back on the device plugin) and done
    again."""
    moved_in = _moved_by_wave(gke)
    before = _where_they_run(gke)
    made = gpudra(gke, "cutover", "--output-dir", str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in) == [1, 2, 3]
    bin_dir = runbook.tools(tmp_path / "bin", gke.plane.binary)
    moved: set[tuple[str, str, str]] = set()

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               now_moved: set[tuple[str, str, str]]) -> None:
        for step in steps:
            done = runbook.run(step, bin_dir=bin_dir, kubeconfig=gke.kubeconfig, cwd=tmp_path)
            assert done.exit_code == 0, f"wave {wave.number} {what}: {step}\n{done.output}"
        expected = {key: {(key in now_moved, pool) for _, pool in places}
                    for key, places in before.items()}
        gke.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                       lambda: _pods_where_they_were(gke, GKE) == GKE.running_before
                       and _where_they_run(gke) == expected, timeout=60)

    for wave in waves:
        if wave.number == 1:  # the first wave once forward, rolled back, then forward again
            follow(wave, wave.steps, "steps", moved_in[1])
            follow(wave, wave.rollback, "rollback", set())
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
    assert report["decommission"] == {"safe": True, "judged": True, "blockers": []}
    quota = gke.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/gpu-quota")
    hard = quota["spec"]["hard"]
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "16"
    assert not [key for key in hard if "nvidia.com/" in key]
    assert not [v for v in gpu_pods(gke.plane.admin, GKE.namespaces) if v.device_plugin]
    for name in GKE.machines():
        capacity = gke.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]
