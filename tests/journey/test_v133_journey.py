"""Issue 32's 1.33 cluster (fleet_v133.py): resource.k8s.io is beta there, served at v1beta1 and
v1beta2 and not at v1, so everything gpudra writes for it without being told must be v1beta2
(item 8) and must be what that API server accepts. Then the migration as on the GKE cluster:
cutover's runbook followed as written wave by wave (the first wave also rolled back and done
again), gpudra verify after each wave saying what the API server shows, and the gate at the
end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.journey import runbook
from tests.journey.record import Record
from tests.journey.cluster import Cluster
from tests.journey.fleet_v133 import API_VERSION, RELEASE, V133
from tests.journey.observe import gpu_pods, running_by_owner
from tests.journey.steps import (
    WorkloadKey,
    brought_up,
    gpudra,
    moved_by_wave,
    running_now,
    where_they_run,
    workload_rows,
)

QUOTA = "/api/v1/namespaces/ml/resourcequotas/gpu-quota"
DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


@pytest.fixture(scope="module")
def v133(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("v133"), V133, RELEASE) as cluster:
        yield cluster


def _documents(directory: Path) -> list[dict[str, Any]]:
    """Every YAML document gpudra wrote under `directory`."""
    return [doc for path in sorted(directory.rglob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def _resource_api_versions(directory: Path) -> set[str]:
    return {doc["apiVersion"] for doc in _documents(directory)
            if doc["apiVersion"].startswith("resource.k8s.io/")}


def test_the_cluster_runs_1_33_and_serves_no_resource_k8s_io_v1(v133: Cluster) -> None:
    version = v133.plane.admin.get("/version")
    assert (version["major"], version["minor"]) == ("1", "33"), version
    served = {v["version"] for v in v133.plane.admin.get("/apis/resource.k8s.io")["versions"]}
    assert served == {"v1beta1", "v1beta2"}
    # the chart's DeviceClasses, created at v1beta2; no slice until a wave labels a node (the
    # stand-in's v1beta2 slices are what the scheduler allocates from in the runbook test)
    classes = v133.plane.admin.get(f"/apis/{API_VERSION}/deviceclasses")["items"]
    assert {c["metadata"]["name"] for c in classes} == {"gpu.nvidia.com", "mig.nvidia.com"}
    assert v133.plane.admin.get(f"/apis/{API_VERSION}/resourceslices")["items"] == []


def test_cutover_refuses_the_bridge_naming_the_release_the_cluster_runs(
        v133: Cluster, tmp_path: Path) -> None:
    """1.33 has no extended-resource bridge (issue 33): cutover --strategy bridge reads the
    release from the cluster's /version and refuses in one line, planning nothing and writing
    no file."""
    out = tmp_path / "bridge"
    refused = gpudra(v133, "cutover", "--strategy", "bridge", "--output-dir", str(out))
    assert (refused.returncode, refused.stdout) == (2, ""), refused
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "Kubernetes 1.33 has no extended-resource bridge" in refused.stderr
    assert not out.exists() or not any(out.iterdir())


def test_convert_from_cluster_writes_v1beta2_which_the_api_server_accepts(
        v133: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "converted"
    done = gpudra(v133, "convert", "--from-cluster", "--output-dir", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _resource_api_versions(out) == {API_VERSION}
    written = [doc for doc in _documents(out) if doc["apiVersion"] == API_VERSION]
    assert {doc["kind"] for doc in written} == {"ResourceClaimTemplate"}
    for doc in written:  # strict field validation: a v1 shape under v1beta2 would be refused
        v133.plane.dry_run(doc)


def _verify_agrees_with_the_api_server(cluster: Cluster, moved: set[WorkloadKey],
                                       when: str) -> None:
    """gpudra verify -o json: each workload on claims exactly when it has moved, with as many
    pods ready as the API server shows Running and Ready."""
    result = gpudra(cluster, "verify", "-o", "json")
    assert result.returncode == 0, f"{when}: {result.stdout}{result.stderr}"
    rows = workload_rows(json.loads(result.stdout))
    states = {key: row["state"] for key, row in rows.items()}
    assert states == {key: "claims" if key in moved else "device plugin"
                      for key in V133.running_before}, when
    shown = running_by_owner(gpu_pods(cluster.plane.admin, V133.namespaces))
    assert {key: row["pods_ready"] for key, row in rows.items()} == dict(shown), when
    # a moved workload's claims are all allocated, as verify says; the API server agrees
    # that each of its running pods' claims is allocated and reserved for that pod
    assert {key for key, row in rows.items()
            if row["claims"] and row["claims_allocated"] == row["claims"]} == moved, when
    assert _pods_whose_claims_are_not_allocated_for_them(cluster) == [], when


def _pods_whose_claims_are_not_allocated_for_them(cluster: Cluster) -> list[str]:
    """Running pods that name a claim the API server shows unallocated or not reserved for
    them."""
    out = []
    for namespace in V133.namespaces:
        claims = {c["metadata"]["name"]: c.get("status") or {} for c in cluster.plane.admin.get(
            f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims")["items"]}
        for pod in cluster.plane.admin.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
            status = pod.get("status") or {}
            if status.get("phase") != "Running":
                continue
            for entry in status.get("resourceClaimStatuses") or []:
                claim = claims.get(entry.get("resourceClaimName"), {})
                reserved = {ref.get("uid") for ref in claim.get("reservedFor") or []}
                if not claim.get("allocation") or pod["metadata"]["uid"] not in reserved:
                    out.append(f"{namespace}/{pod['metadata']['name']}")
    return out


def _allocated_claims(cluster: Cluster) -> dict[str, set[str]]:
    """Per namespace, the names of the ResourceClaims the scheduler allocated (at v1beta2)."""
    out: dict[str, set[str]] = {}
    for namespace in V133.namespaces:
        for claim in cluster.plane.admin.get(
                f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims")["items"]:
            if (claim.get("status") or {}).get("allocation"):
                out.setdefault(namespace, set()).add(claim["metadata"]["name"])
    return out


def _devices_allocated(cluster: Cluster, namespace: str) -> int:
    claims = cluster.plane.admin.get(
        f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims")["items"]
    return sum(len(((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
                   .get("results") or []) for claim in claims)


def _used(cluster: Cluster) -> dict[str, str]:
    """The GPU lines of the quota's usage (device-plugin GPUs and DRA devices)."""
    used = cluster.plane.admin.get(QUOTA).get("status", {}).get("used") or {}
    return {key: value for key, value in used.items() if "nvidia.com" in key}


def test_the_runbook_writes_v1beta2_runs_as_written_and_verify_follows_the_api_server(
        v133: Cluster, tmp_path: Path) -> None:
    moved_in = moved_by_wave(v133)
    before = where_they_run(v133, V133)
    _verify_agrees_with_the_api_server(v133, set(), "before the first wave")
    made = gpudra(v133, "cutover", "--output-dir", str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    assert _resource_api_versions(tmp_path / "cutover") == {API_VERSION}
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in)
    assert len(waves) >= 2  # one pool per wave at least: the rollback is of a partial move
    bin_dir = runbook.tools(tmp_path / "bin", v133.plane.binary)
    record = Record("v133-1.33", "claims", tmp_path / "cutover")

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str,
               now_moved: set[WorkloadKey]) -> None:
        with record.timed(wave.number, what):
            runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=v133.kubeconfig, cwd=tmp_path,
                            what=f"wave {wave.number} {what}")
        expected = {key: {(key in now_moved, pool) for _, pool in places}
                    for key, places in before.items()}
        v133.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                        lambda: running_now(v133, V133) == V133.running_before
                        and where_they_run(v133, V133) == expected, timeout=60)
        _verify_agrees_with_the_api_server(v133, now_moved, f"after wave {wave.number} {what}")
        # the pods on claims hold claims the scheduler allocated, read at v1beta2
        on_claims = {(view.namespace, *view.owner) for view in gpu_pods(
            v133.plane.admin, V133.namespaces) if view.claims and view.node}
        assert on_claims == now_moved
        assert {ns for ns, _, _ in now_moved} == set(_allocated_claims(v133))

    moved: set[WorkloadKey] = set()
    for wave in waves:
        if wave.number == 1:  # forward, rolled back as written, then forward again
            follow(wave, wave.steps, "steps", moved_in[1])
            follow(wave, wave.rollback, "rollback", set())
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)

    report = json.loads(gpudra(v133, "verify", "-o", "json").stdout)
    gate = report["decommission"]  # also its outcome, message and remediation
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
    hard = v133.plane.admin.get(QUOTA)["spec"]["hard"]
    assert hard[DEVICES] == "8" and "requests.nvidia.com/gpu" not in hard, hard
    # 1.33's quota controller counts the converted quota's devices from the claims (v1beta1
    # inside): what the namespace's allocated claims hold, and no device-plugin GPUs.
    held = _devices_allocated(v133, "ml")
    assert held > 0
    v133.plane.wait("the quota to count the claims' devices",
                    lambda: _used(v133) == {DEVICES: str(held)}, timeout=60)
    assert not [v for v in gpu_pods(v133.plane.admin, V133.namespaces) if v.device_plugin]
    for name in V133.machines():
        capacity = v133.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert not [key for key in capacity if key.startswith("nvidia.com/")]
