"""The journey's two failure paths (issue 32), on the real control plane: what `gpudra verify`
says must be what the API server shows, and it must fail (exit 1).

1. A wave applied without relabelling its nodes: its workloads roll onto claims, but no DRA
   driver runs on their nodes, so their pods wait. verify names the nodes that publish no
   devices, each Pending pod's unallocated claim and the scheduler's own message. Then the
   wave's remaining lines (the labels and their waits) are run as written, and the wave's
   verify line passes.
2. A converted workload whose CEL selector matches no device (convert wrote it from a GFD
   product label for a GPU the fleet does not have): verify names the selector term and the
   values the published devices have, as the term compares them.

Run in file order on one small cluster (tests/journey/fleet_failures.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.k8s.objects import plural
from tests.controlplane.nvidia import H100_80GB
from tests.journey import runbook
from tests.journey.cluster import Cluster
from tests.journey.fleet_failures import FAILURES, pinned_spec
from tests.journey.fleets import deployment
from tests.journey.steps import brought_up, gpudra, workload_rows

# The lines of a wave that switch its nodes' stack (and wait for it, or for what moves onto
# it): what path 1 leaves out.
SWITCHING = ("kubectl label node", "kubectl wait", "kubectl rollout status")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("failures"), FAILURES) as started:
        yield started


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("failure-work")


# --- what the API server shows ---------------------------------------------------------------

def api_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.plane.admin.get(f"/api/v1/namespaces/{namespace}/pods")["items"]


def api_claims(cluster: Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    items = cluster.plane.admin.get(
        f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    return {c["metadata"]["name"]: c for c in items}


def api_slices(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.plane.admin.get("/apis/resource.k8s.io/v1/resourceslices")["items"]


def last_failed_scheduling(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Pod name -> the message of its latest FailedScheduling event."""
    events = cluster.plane.admin.get(f"/api/v1/namespaces/{namespace}/events",
                                     fieldSelector="reason=FailedScheduling")["items"]
    latest: dict[str, tuple[str, str]] = {}
    for event in events:
        pod = event["involvedObject"]["name"]
        when = event.get("lastTimestamp") or event.get("eventTime") or ""
        if pod not in latest or when >= latest[pod][0]:
            latest[pod] = (when, " ".join(event.get("message", "").split()))
    return {pod: message for pod, (_, message) in latest.items()}


def owned_by(pod: dict[str, Any], name: str) -> bool:
    """A pod of Deployment `name` (its ReplicaSet is `name-<hash>`)."""
    return any(ref.get("kind") == "ReplicaSet" and ref["name"].rsplit("-", 1)[0] == name
               for ref in pod["metadata"].get("ownerReferences") or [])


def live_pods(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return [p for p in api_pods(cluster, namespace) if owned_by(p, name)
            and not p["metadata"].get("deletionTimestamp")]


def waiting_on_claims(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The workload's pods on claims (its new revision; the old one's pods may run on the
    device plugin meanwhile) when there are some and every one is Pending and unscheduled on
    claims that exist and are not allocated, each with the scheduler's FailedScheduling
    event; else []."""
    pods = [p for p in live_pods(cluster, namespace, name) if p["spec"].get("resourceClaims")]
    if not pods:
        return []
    claims = api_claims(cluster, namespace)
    events = last_failed_scheduling(cluster, namespace)
    for pod in pods:
        statuses = pod.get("status", {}).get("resourceClaimStatuses") or []
        if (pod["status"].get("phase") != "Pending" or pod["spec"].get("nodeName")
                or not statuses
                or pod["metadata"]["name"] not in events):
            return []
        for status in statuses:
            claim = claims.get(status.get("resourceClaimName") or "")
            if claim is None or claim.get("status", {}).get("allocation"):
                return []
    return pods


def all_on_claims(cluster: Cluster, namespace: str, name: str) -> bool:
    pods = live_pods(cluster, namespace, name)
    return bool(pods) and all(
        p["spec"].get("resourceClaims") and p["status"].get("phase") == "Running"
        and any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in p["status"].get("conditions") or []) for p in pods)


def verify_json(cluster: Cluster, *args: str) -> tuple[int, dict[str, Any]]:
    done = gpudra(cluster, "verify", "-o", "json", *args)
    assert done.stdout.startswith("{"), done.stderr
    return done.returncode, json.loads(done.stdout)


def claim_of(pod: dict[str, Any]) -> str:
    return pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]


# --- 1. a wave applied without relabelling its nodes ----------------------------------------

def test_a_wave_applied_without_relabelling_its_nodes_fails_verify(cluster: Cluster,
                                                                   work: Path) -> None:
    out = work / "cutover"
    planned = gpudra(cluster, "cutover", "--output-dir", str(out), "-o", "json")
    assert planned.returncode == 0, planned.stderr
    wave = json.loads(planned.stdout)["waves"][0]
    bin_dir = runbook.tools(work / "bin", cluster.plane.binary)
    steps = [s for s in wave["steps"] if not s.startswith("gpudra verify")]
    for step in steps:
        if step.startswith(SWITCHING):
            continue
        done = runbook.run(step, bin_dir=bin_dir, kubeconfig=cluster.kubeconfig, cwd=work)
        assert done.exit_code == 0, f"{step}\n{done.output}"
    moved = [(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]]
    assert moved and all(kind == "Deployment" for _, kind, _ in moved)
    waiting = {key: cluster.plane.wait(
        f"{key} Pending on unallocated claims, with the scheduler's event",
        lambda key=key: waiting_on_claims(cluster, key[0], key[2]), timeout=60)
        for key in moved}

    code, report = verify_json(cluster, "--wave-of", str(out / f"wave-{wave['wave']}"))
    assert code == 1
    # The API server: no node publishes a ResourceSlice, every GPU node still advertises
    # device-plugin GPUs (the plugin was never told to leave).
    assert api_slices(cluster) == []
    nodes = sorted(FAILURES.machines())
    for name in nodes:
        capacity = cluster.plane.admin.get(f"/api/v1/nodes/{name}")["status"]["capacity"]
        assert int(capacity.get("nvidia.com/gpu", 0)) > 0, (name, capacity)
    rows = workload_rows(report)
    for key, pods in waiting.items():
        row = rows[key]
        assert (row["outcome"], row["state"]) == ("fail", "claims"), row
        said = row["details"]
        driverless = [line for line in said if line.startswith(
            "no DRA driver publishes devices on any node the pod may use: ")]
        assert len(driverless) == 1, said
        assert all(name in driverless[0] for name in nodes)
        assert "not switched" in driverless[0]
        events = last_failed_scheduling(cluster, key[0])
        for pod in pods:
            subject = f"{key[0]}/{pod['metadata']['name']}"
            assert f"pod {subject}: ResourceClaim {claim_of(pod)} is not allocated" in said
            assert f"scheduler: {events[pod['metadata']['name']]}" in said
        # The driverless reason comes before any count of devices.
        assert said.index(driverless[0]) < min(
            [i for i, line in enumerate(said) if "matching devices" in line], default=len(said))

    # The wave's switching lines, as written, then its verify line as written passes.
    for step in steps:
        if step.startswith(SWITCHING):
            done = runbook.run(step, bin_dir=bin_dir, kubeconfig=cluster.kubeconfig, cwd=work)
            assert done.exit_code == 0, f"{step}\n{done.output}"
    for namespace, _, name in moved:
        cluster.plane.wait(f"{namespace}/{name} moved: every pod Running and Ready on claims",
                           lambda namespace=namespace, name=name: all_on_claims(
                               cluster, namespace, name), timeout=90)
    line = wave["steps"][-1]
    assert line.startswith("gpudra verify --wave-of ")
    done = runbook.run(line, bin_dir=bin_dir, kubeconfig=cluster.kubeconfig, cwd=work)
    assert done.exit_code == 0, done.output


# --- 2. a converted workload whose selector matches no device -------------------------------

def test_a_converted_selector_that_matches_no_device_names_term_and_values(
        cluster: Cluster, work: Path) -> None:
    source = work / "wrong.yaml"
    source.write_text(yaml.safe_dump(deployment("serving", "wrong", 1,
                                                pinned_spec(H100_80GB, 1))))
    converted = work / "converted"
    done = subprocess.run([sys.executable, "-m", "gpudra", "convert", str(source),
                           "--output-dir", str(converted)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    bin_dir = runbook.tools(work / "bin", cluster.plane.binary)
    applied = runbook.run(f"kubectl apply -f {converted} --recursive", bin_dir=bin_dir,
                          kubeconfig=cluster.kubeconfig, cwd=work)
    assert applied.exit_code == 0, applied.output
    pods = cluster.plane.wait("serving/wrong Pending on an unallocated claim",
                              lambda: waiting_on_claims(cluster, "serving", "wrong"),
                              timeout=60)

    code, report = verify_json(cluster, "-n", "serving")
    assert code == 1
    row = workload_rows(report)[("serving", "Deployment", "wrong")]
    assert (row["outcome"], row["state"]) == ("fail", "claims")
    said = row["details"]
    # What the published devices that no claim holds (in any namespace) have, as the term
    # compares them (GFD's dashes).
    held = {(r["pool"], r["device"]) for ns in FAILURES.namespaces
            for c in api_claims(cluster, ns).values()
            for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get(
                "results", [])}
    free = [d for s in api_slices(cluster) for d in s["spec"]["devices"]
            if (s["spec"]["pool"]["name"], d["name"]) not in held]
    assert free
    present = Counter(d["attributes"]["productName"]["string"].replace(" ", "-")
                      for d in free)
    term = f'productName.replace(" ", "-") == "{H100_80GB.label}"'
    shown = f"{term}: 0 of {plural(len(free), 'device')} match; values present: "
    lines = [line for line in said if shown in line]
    assert lines, said
    listed = lines[0].split(shown, 1)[1]
    for value, count in present.items():
        assert f"{value} ({count})" in listed
    pod = pods[0]
    assert f"pod serving/{pod['metadata']['name']}: ResourceClaim {claim_of(pod)} is not " \
           "allocated" in said
    events = last_failed_scheduling(cluster, "serving")
    assert f"scheduler: {events[pod['metadata']['name']]}" in said
