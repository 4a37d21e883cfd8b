"""Issue 33: the GKE-style cluster migrated with `gpudra cutover --strategy bridge`, the runbook
followed as written, wave by wave (the first also rolled back and done again). Every workload
of this fleet asks for whole GPUs, so none is changed: after each wave the pods of the
workloads moved so far run unchanged on DRA devices through the bridge (the real
kube-scheduler makes each pod's claim and sets `status.extendedResourceClaimStatus`), allocated
on the pool the pod was allowed on, and what `gpudra verify` says of each workload is what the
API server shows. At the end the decommission gate opens. `gpudra guard --strategy bridge
--action deny`, applied before the first wave, lets every unchanged pod through the waves'
namespace labels, and at the end refuses a MIG workload in each namespace."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.test_guard import (
    CREATED, DENIED, apply_guard, kubectl_create, outcome, workload,
)
from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.cluster import Cluster
from tests.journey.bridged import BRIDGE, DEVICE_PLUGIN, served
from tests.journey.fleets import GKE
from tests.journey.steps import WorkloadKey, brought_up, gpudra, running_now, workload_rows

MAPPING_CLASS = "gpu-extended-resource.gpudra.io"


@pytest.fixture(scope="module")
def gke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("gke-bridge"), GKE) as cluster:
        yield cluster


def _plan(cluster: Cluster, *args: str) -> dict[str, Any]:
    planned = gpudra(cluster, "cutover", "-o", "json", *args)
    assert planned.returncode == 0, planned.stderr
    return json.loads(planned.stdout)


def test_the_bridge_runbook_runs_as_written_and_every_workload_ends_on_dra(
        gke: Cluster, tmp_path: Path) -> None:
    rewrite = _plan(gke)
    bridge = _plan(gke, "--strategy", "bridge")
    moved_in = {w["wave"]: {(m["namespace"], m["kind"], m["name"]) for m in w["workloads"]}
                for w in bridge["waves"]}
    # The same waves as the rewrite strategy; on whole GPUs the bridge serves every workload.
    assert [(w["wave"], w["nodes"]) for w in bridge["waves"]] == [
        (w["wave"], w["nodes"]) for w in rewrite["waves"]]
    assert all(m["bridged"] for w in bridge["waves"] for m in w["workloads"])
    before = {key: {(DEVICE_PLUGIN, pool) for _, pool in places}
              for key, places in served(gke, GKE).items()}
    quota_before = gke.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/gpu-quota")
    out = tmp_path / "cutover"
    made = gpudra(gke, "cutover", "--strategy", "bridge", "--output-dir", str(out), "-o",
                  "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in) == [1, 2, 3]
    # Nothing is converted: every wave's converted/ folder is empty (each wave has one, for
    # its verify line), only the unchanged workloads are written.
    assert not [path for path in out.rglob("converted/**/*") if path.is_file()]
    # What each strategy changes, for the closing note: manifests replaced or created anew
    # (workloads), claim-template files, quotas replaced.
    rewritten = tmp_path / "rewrite"
    assert gpudra(gke, "cutover", "--output-dir", str(rewritten)).returncode == 0
    changed = {name: {kind: sum(len(list(top.glob(f"wave-*/converted/{folder}/*/*.yaml")))
                                for folder in folders)
                      for kind, folders in (("workloads", ("replace", "recreate")),
                                            ("claim files", ("claims",)),
                                            ("quotas", ("quotas",)))}
               for name, top in (("rewrite", rewritten), ("bridge", out))}
    assert changed["bridge"] == {"workloads": 0, "claim files": 0, "quotas": 0}
    bin_dir = runbook.tools(tmp_path / "bin", gke.plane.binary)
    took: list[str] = []
    # gpudra guard for the bridge, refusing, from before the first wave: the unchanged pods the
    # waves restart keep asking nvidia.com/gpu, which it lets through.
    apply_guard(gke.plane, "--strategy", "bridge", "--action", "deny")

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               now_moved: set[WorkloadKey]) -> None:
        started = time.monotonic()
        with Record("gke-1.37", "bridge", out).timed(wave.number, what):
            runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=gke.kubeconfig, cwd=tmp_path,
                            what=f"wave {wave.number} {what}")
        took.append(f"wave {wave.number} {what}: {time.monotonic() - started:.1f}s")
        expected = {key: {(BRIDGE if key in now_moved else DEVICE_PLUGIN, pool)
                          for _, pool in places} for key, places in before.items()}
        gke.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                       lambda: running_now(gke, GKE) == GKE.running_before
                       and served(gke, GKE) == expected, timeout=60)
        # verify says of each workload what the API server shows: the ones the waves so far
        # moved on the bridge (the idle ones too: their next pods would be), the rest on the
        # device plugin.
        report = json.loads(gpudra(gke, "verify", "-o", "json").stdout)
        states = {key: row["state"] for key, row in workload_rows(report).items()}
        assert states == {key: BRIDGE if key in now_moved else DEVICE_PLUGIN
                          for key in states}, states
        assert set(states) >= set(before)

    moved: set[WorkloadKey] = set()
    for wave in waves:
        if wave.number == 1:  # the first wave once forward, rolled back, then forward again
            follow(wave, wave.steps, "steps", moved_in[1])
            follow(wave, wave.rollback, "rollback", set())
            assert not [c for c in gke.plane.admin.get(
                "/apis/resource.k8s.io/v1/deviceclasses")["items"]
                if c["metadata"]["name"] == MAPPING_CLASS]
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)
    print(f"\nbridge journey (GKE): manifests changed {changed}; " + "; ".join(took))

    report = json.loads(gpudra(gke, "verify", "-o", "json").stdout)
    assert (report["decommission"]["safe"], report["decommission"]["blockers"]) == (True, [])
    # Every namespace labelled by its last wave and guarded: a new workload asking for whole
    # GPUs is let through (the bridge serves it), one asking for a MIG slice is refused.
    assert report["decommission"]["warnings"] == []
    for namespace in GKE.namespaces:
        labels = gke.plane.admin.get(f"/api/v1/namespaces/{namespace}")["metadata"]["labels"]
        assert labels.get("gpudra.io/migrated") == "true", (namespace, labels)
        for name, limits, expected in (("whole", {"nvidia.com/gpu": "1"}, CREATED),
                                       ("slice", {"nvidia.com/mig-1g.10gb": "1"}, DENIED)):
            made = workload("Deployment", name, namespace, limits)
            assert outcome(kubectl_create(gke.plane, made, dry_run=True)) == expected
    # The quota is as it was: requests.nvidia.com/gpu counts the bridge's claims.
    quota = gke.plane.admin.get("/api/v1/namespaces/ml/resourcequotas/gpu-quota")
    assert quota["spec"]["hard"] == quota_before["spec"]["hard"]
    for name in GKE.machines():
        capacity = gke.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]


def test_cutover_names_the_release_when_it_has_no_bridge(gke: Cluster) -> None:
    """--target-version below 1.36 refuses the bridge before planning (1.33's cluster refuses
    it the same way from its own /version: tests/journey/test_v133_journey.py's release)."""
    for release, said in (("1.33", "has no extended-resource bridge"),
                          ("1.35", "alpha and off by default")):
        result = gpudra(gke, "cutover", "--strategy", "bridge", "--target-version", release)
        assert result.returncode == 2, result
        assert said in result.stderr and f"Kubernetes {release}" in result.stderr
        assert result.stdout == ""
