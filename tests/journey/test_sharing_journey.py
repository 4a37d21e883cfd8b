"""Issue 32's second cluster (tests/journey/fleet_sharing.py): time-sliced and MIG nodes,
migrated with gpudra alone, in file order.

cutover's runbook is followed as written. The MIG pool moves in wave 1 (its MIG workloads onto
the MIG devices the driver publishes, each on the pool it ran on); the time-sliced pool cannot:
its pods hold 7 of 16 time-slicing replicas, and DRA capacity is the 4 physical GPUs, so
cutover stops there and says why (issue 32, item 7). Wave 1 is rolled back and done again; the
gate stays closed while the time-sliced pool serves through the device plugin. Then the user
does what cutover says (scales a workload down), cutover is run again, and its wave keeps its
number (2: wave 1 is done). Wave 2 switches the time-sliced pool and also moves an OnDelete
StatefulSet made after the MIG pool switched, whose Pending pod is on no node wave 2 drains:
it takes the new template only because the runbook deletes it. Then the gate opens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.cluster import Cluster
from tests.journey.fleet_sharing import LATE, SHARING, ZONE_LABEL
from tests.journey.observe import gpu_pods
from tests.journey.steps import (WorkloadKey, brought_up, gpudra, running_now, where_they_run,
                                 workload_rows)

MIG_MOVES = {("ml", "Deployment", "tiny"), ("ml", "StatefulSet", "mid"), ("ml", "Job", "whole"),
             ("ml", "Pod", "probe")}
SHARED = {("serving", "Deployment", "chat"), ("serving", "Deployment", "burst")}
LATE_KEY = ("lab", "StatefulSet", "late")


@pytest.fixture(scope="module")
def sharing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("sharing"), SHARING) as cluster:
        yield cluster


def _follow(cluster: Cluster, wave: runbook.Wave, steps: tuple[str, ...], what: str,
            bin_dir: Path, cwd: Path, expected: dict[WorkloadKey, set[tuple[bool, str]]],
            running: dict[WorkloadKey, int]) -> None:
    # wave 1 from the first plan (cutover/), wave 2 from the plan made again after it (again/)
    out = cwd / ("cutover" if wave.number == 1 else "again")
    with Record("sharing-1.37", "claims", out).timed(wave.number, what):
        runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=cluster.kubeconfig, cwd=cwd,
                        what=f"wave {wave.number} {what}")
    cluster.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                       lambda: running_now(cluster, SHARING) == running
                       and where_they_run(cluster, SHARING) == expected, timeout=90)


def _expected(before: dict[WorkloadKey, set[tuple[bool, str]]], moved: set[WorkloadKey]
              ) -> dict[WorkloadKey, set[tuple[bool, str]]]:
    return {key: {(key in moved, pool) for _, pool in places} for key, places in before.items()}


def _granted(cluster: Cluster) -> dict[WorkloadKey, set[str]]:
    """Per workload, the MIG profile (or "gpu") of each device its pods' claims hold."""
    admin = cluster.plane.admin
    slices = admin.get("/apis/resource.k8s.io/v1/resourceslices")["items"]
    kinds = {(s["spec"]["nodeName"], d["name"]): d["attributes"].get("profile", {}).get(
        "string", "gpu") for s in slices for d in s["spec"]["devices"]}
    out: dict[WorkloadKey, set[str]] = {}
    for view in gpu_pods(admin, SHARING.namespaces):
        if not view.claims or view.phase != "Running":
            continue
        pod = admin.get(f"/api/v1/namespaces/{view.namespace}/pods/{view.name}")
        for status in pod.get("status", {}).get("resourceClaimStatuses") or []:
            claim = admin.get(f"/apis/resource.k8s.io/v1/namespaces/{view.namespace}/"
                              f"resourceclaims/{status['resourceClaimName']}")
            for result in claim["status"]["allocation"]["devices"]["results"]:
                out.setdefault((view.namespace, *view.owner), set()).add(
                    kinds[(result["pool"], result["device"])])
    return out


def _on_update_revision(cluster: Cluster, namespace: str, name: str) -> bool:
    """Every pod of the StatefulSet is of its update revision (an OnDelete StatefulSet never
    moves its currentRevision, so the pods' revision label is what tells)."""
    admin = cluster.plane.admin
    statefulset = admin.get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}")
    revision = statefulset.get("status", {}).get("updateRevision")
    pods = [p for p in admin.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
            if p["metadata"]["name"].startswith(f"{name}-")]
    return bool(pods) and all(p["metadata"]["labels"].get("controller-revision-hash")
                              == revision for p in pods)


def test_before_the_first_wave_verify_sees_every_shared_workload_on_the_device_plugin(
        sharing: Cluster) -> None:
    result = gpudra(sharing, "verify", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = workload_rows(json.loads(result.stdout))
    assert set(rows) == SHARED | MIG_MOVES
    assert {row["state"] for row in rows.values()} == {"device plugin"}
    assert {key: row["pods_ready"] for key, row in rows.items()} == SHARING.running_before


def test_mig_moves_time_slicing_stops_with_its_reason_then_moves_in_wave_2(
        sharing: Cluster, tmp_path: Path) -> None:
    before = where_they_run(sharing, SHARING)
    bin_dir = runbook.tools(tmp_path / "bin", sharing.plane.binary)
    first = tmp_path / "cutover"
    made = gpudra(sharing, "cutover", "--output-dir", str(first), "-o", "markdown")
    # Blocked after wave 1: the runbook has the wave that works and says why no more does.
    assert made.returncode == 1, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == [1]
    blocked = next(line for line in made.stdout.splitlines() if line.startswith("**Blocked:**"))
    assert "ts" in blocked and "16 time-slicing replicas on 4 physical GPUs" in blocked, blocked
    planned = json.loads(gpudra(sharing, "cutover", "-o", "json").stdout)
    assert {(w["namespace"], w["kind"], w["name"]) for w in planned["waves"][0]["workloads"]} \
        == MIG_MOVES
    # The bare Pod is exported as its author wrote it: not with the zone label the API server
    # copied from its node when the scheduler bound it (PodTopologyLabels).
    live_probe = sharing.plane.admin.get("/api/v1/namespaces/ml/pods/probe")
    assert ZONE_LABEL in live_probe["metadata"]["labels"]
    exported = (first / "wave-1" / "original" / "recreate").rglob("*.yaml")
    assert [p for p in exported if "probe" in p.name]
    assert not [p for p in (first / "wave-1").rglob("*.yaml")
                if ZONE_LABEL in p.read_text(encoding="utf-8")]

    [wave] = waves
    running = dict(SHARING.running_before)
    _follow(sharing, wave, wave.steps, "steps", bin_dir, tmp_path, _expected(before, MIG_MOVES),
            running)
    _follow(sharing, wave, wave.rollback, "rollback", bin_dir, tmp_path, _expected(before, set()),
            running)
    _follow(sharing, wave, wave.steps, "steps", bin_dir, tmp_path, _expected(before, MIG_MOVES),
            running)
    # On claims, each MIG workload holds the devices it held through the device plugin.
    assert _granted(sharing) == {("ml", "Deployment", "tiny"): {"1g.10gb"},
                                 ("ml", "Pod", "probe"): {"1g.10gb"},
                                 ("ml", "StatefulSet", "mid"): {"3g.40gb"},
                                 ("ml", "Job", "whole"): {"gpu"}}
    assert _on_update_revision(sharing, "ml", "mid")
    quota = sharing.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/mig-quota")
    assert not [key for key in quota["spec"]["hard"] if "nvidia.com/mig" in key], quota
    # verify says what the API server shows: the MIG workloads on claims, every claim
    # allocated, as many pods Ready as run; the time-sliced ones still on the device plugin.
    checked = gpudra(sharing, "verify", "-o", "json")
    assert checked.returncode == 0, checked.stdout
    report = json.loads(checked.stdout)
    rows = workload_rows(report)
    assert {key: row["state"] for key, row in rows.items()} == {
        **{key: "claims" for key in MIG_MOVES}, **{key: "device plugin" for key in SHARED}}
    assert {key: row["pods_ready"] for key, row in rows.items()} == running_now(
        sharing, SHARING) == running
    assert {key: (row["claims"], row["claims_allocated"]) for key, row in rows.items()
            if key in MIG_MOVES} == {key: (n, n) for key, n in running.items()
                                     if key in MIG_MOVES}
    # The gate stays closed: the time-sliced pool still serves through the device plugin.
    assert report["decommission"]["safe"] is False
    held = {b.split()[1].split("/")[0] for b in report["decommission"]["blockers"]
            if b.startswith("pod ")}
    assert held == {"serving"}

    # What cutover said to do: fewer pods for the switch (4 fit the 4 physical GPUs).
    scaled = runbook.run("kubectl scale deployment -n serving burst --replicas=1",
                         bin_dir=bin_dir, kubeconfig=sharing.kubeconfig, cwd=tmp_path)
    assert scaled.exit_code == 0, scaled.output
    running[("serving", "Deployment", "burst")] = 1
    sharing.plane.wait("burst scaled to 1", lambda: running_now(sharing, SHARING) == running,
                       timeout=60)
    # A StatefulSet made from an old manifest after the MIG pool switched: its pod waits, as
    # no node advertises nvidia.com/mig-1g.10gb any more.
    sharing.plane.admin.create(sharing.plane.object_path(LATE).rpartition("/")[0], LATE)
    sharing.plane.wait("the late StatefulSet's pod made", lambda: [
        v for v in gpu_pods(sharing.plane.admin, ("lab",)) if v.phase == "Pending"], timeout=60)
    again = gpudra(sharing, "cutover", "--output-dir", str(tmp_path / "again"), "-o", "markdown")
    assert again.returncode == 0, again.stdout + again.stderr
    [wave_2] = runbook.parse(again.stdout)
    # wave 1 is done: the rest keeps the numbers of the first plan. The late StatefulSet moves
    # with it (its nodes publish already), though wave 2 drains none of them: its Pending
    # pod takes the converted template only when the runbook deletes it (OnDelete).
    assert wave_2.number == 2
    assert "- lab/StatefulSet/late (1 pod, 1 GPU; StatefulSet or singleton)" in again.stdout
    assert sorted(p.name for p in (tmp_path / "again").iterdir() if p.is_dir()) == ["wave-2"]
    running[LATE_KEY] = 1
    _follow(sharing, wave_2, wave_2.steps, "steps", bin_dir, tmp_path,
            {**_expected(before, MIG_MOVES | SHARED), LATE_KEY: {(True, "mig")}}, running)
    assert _on_update_revision(sharing, "lab", "late")
    report = json.loads(gpudra(sharing, "verify", "-o", "json").stdout)
    gate = report["decommission"]
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
    assert not [v for v in gpu_pods(sharing.plane.admin, SHARING.namespaces) if v.device_plugin]
    for name in SHARING.machines():
        capacity = sharing.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]
