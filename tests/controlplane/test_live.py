"""gpudra's live-cluster commands against the real API server (1.37.2) with RBAC on.

The role `gpudra rbac` prints is applied with kubectl, and audit, preflight and the
`convert --from-cluster` export then run as that ServiceAccount's token: every read they make
must be allowed by it (no 403), and what they export, converted, must pass server-side dry-run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.controlplane.cluster import ControlPlane, Credentials
from tests.controlplane.manifests import Source, dry_run, load_tree
from tests.controlplane.nvidia import A100_80GB, Machine, device_plugin_node, dra_node

GOLDEN = Path(__file__).resolve().parents[1] / "convert" / "golden"
# Workloads left on the device plugin in the live cluster: (golden case, namespace there).
WORKLOADS = [("example-job", "live-a"), ("two-gpu-containers", "live-a"),
             ("mig", "live-b"), ("init-container", "live-b")]


def gpudra(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudra", *args], capture_output=True,
                          text=True, check=False, cwd=cwd, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": str(cwd)})


@pytest.fixture(scope="module")
def reader(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig for ServiceAccount gpudra/gpudra-reader, bound by `gpudra rbac`'s role,
    in a cluster with device-plugin workloads running."""
    home = tmp_path_factory.mktemp("live")
    control_plane.create_node(device_plugin_node(Machine("live", A100_80GB, 8), "live-gpu"))
    for case, namespace in WORKLOADS:
        control_plane.ensure_namespace(namespace)
        for path in sorted((GOLDEN / case / "before").glob("*.yaml")):
            for obj in yaml.safe_load_all(path.read_text()):
                obj["metadata"]["namespace"] = namespace
                control_plane.admin.create(control_plane.object_path(obj).rpartition("/")[0],
                                           obj)
    rbac = gpudra("rbac", cwd=home)
    assert rbac.returncode == 0, rbac.stderr
    # As the README says, on a cluster that has no namespace gpudra yet.
    applied = control_plane.kubectl("apply", "-f", "-", stdin=rbac.stdout)
    assert applied.returncode == 0, applied.stderr
    token = control_plane.service_account_token("gpudra", "gpudra-reader")
    return control_plane.write_kubeconfig(home / "reader.kubeconfig", Credentials(token=token))


def test_the_role_is_all_the_audit_needs(reader: Path) -> None:
    result = gpudra("audit", "--kubeconfig", str(reader), "-o", "json", cwd=reader.parent)
    assert "forbidden" not in result.stderr.lower(), result.stderr
    assert result.returncode == 1, result.stderr  # findings: workloads on the device plugin
    report = json.loads(result.stdout)
    assert report["errors"] == []
    found = {(f["namespace"], f["kind"], f["name"]) for f in report["findings"]
             if f["rule"].startswith("GPU1")}
    assert {("live-a", "Job", "train-bert"), ("live-a", "Pod", "pair"),
            ("live-b", "Deployment", "small-infer"), ("live-b", "Job", "warmup")} <= found


def test_the_role_is_all_preflight_needs(reader: Path) -> None:
    """Every cluster check runs: none is `unavailable` for want of a permission, and nothing
    the role lets gpudra read is refused (a refusal would be listed under errors)."""
    result = gpudra("preflight", "--kubeconfig", str(reader), "-o", "json", cwd=reader.parent)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == []
    assert report["checks"], "preflight ran no check"
    refused = [c for c in report["checks"] if c["outcome"] == "unavailable"
               and ("forbidden" in c["message"].lower() or "403" in c["message"])]
    assert refused == []


def test_export_converts_to_objects_the_server_accepts(control_plane: ControlPlane,
                                                       reader: Path) -> None:
    out = reader.parent / "exported"
    result = gpudra("convert", "--from-cluster", "--kubeconfig", str(reader),
                    "--output-dir", str(out), cwd=reader.parent)
    assert "forbidden" not in result.stderr.lower(), result.stderr
    assert result.returncode in (0, 4), result.stderr
    sources, unreadable = load_tree(out, control_plane)
    assert [str(r) for r in unreadable] == []
    kinds = {(s.obj["kind"], s.obj["metadata"]["name"]) for s in sources}
    assert {("Job", "train-bert"), ("Pod", "pair"), ("Deployment", "small-infer"),
            ("Job", "warmup")} <= kinds
    assert any(kind == "ResourceClaimTemplate" for kind, _ in kinds)
    # Into namespaces of their own: the originals still exist, and a Pod or a Job cannot be
    # replaced in place; a create is what re-applying an export elsewhere does.
    moved = [Source(s.where, {**s.obj, "metadata": {
        **s.obj["metadata"], "namespace": "copy-" + s.obj["metadata"]["namespace"]}})
        for s in sources]
    assert [str(r) for r in dry_run(control_plane, moved)] == []


def test_without_the_role_the_audit_is_refused(control_plane: ControlPlane,
                                               reader: Path) -> None:
    """The control: a ServiceAccount nothing binds is refused, and gpudra says so."""
    control_plane.admin.create("/api/v1/namespaces/gpudra/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}})
    token = control_plane.service_account_token("gpudra", "nobody")
    config = control_plane.write_kubeconfig(reader.parent / "nobody.kubeconfig",
                                            Credentials(token=token))
    result = gpudra("audit", "--kubeconfig", str(config), "-o", "json", cwd=reader.parent)
    assert result.returncode == 3
    assert "forbidden" in result.stderr.lower() or "403" in result.stderr



def test_verify_names_the_schedulers_reason(control_plane: ControlPlane, reader: Path) -> None:
    """verify against the real scheduler: a pod whose claim asks for a GPU no node publishes
    stays Pending; under the role `gpudra rbac` prints, verify reads the scheduler's own
    FailedScheduling event (the `reason=` field selector the real server supports) and the plan
    engine's account of the selector term."""
    node, slice_ = dra_node(Machine("verify", A100_80GB, 2), "live-dra")
    control_plane.create_node(node)
    control_plane.admin.create("/apis/resource.k8s.io/v1/resourceslices", slice_)
    control_plane.ensure_namespace("live-v")
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "h200", "namespace": "live-v"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu.nvidia.com",
                    "selectors": [{"cel": {"expression":
                        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"}}],
                }}]}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wants-h200",
                                                          "namespace": "live-v"},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "h200"}],
                    "containers": [{"name": "c", "image": "x",
                                    "resources": {"claims": [{"name": "gpu"}]}}]}}
    control_plane.admin.create("/apis/resource.k8s.io/v1/namespaces/live-v/"
                               "resourceclaimtemplates", template)
    control_plane.admin.create("/api/v1/namespaces/live-v/pods", pod)
    control_plane.wait("the scheduler's FailedScheduling event", lambda: [
        e for e in control_plane.admin.get("/api/v1/namespaces/live-v/events")["items"]
        if e.get("reason") == "FailedScheduling"], 60)
    result = gpudra("verify", "--kubeconfig", str(reader), "-n", "live-v", "-o", "json",
                    cwd=reader.parent)
    assert "forbidden" not in result.stderr.lower(), result.stderr
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    workloads = [w for w in report["workloads"] if w.get("name") == "wants-h200"]
    assert len(workloads) == 1, report
    [workload] = workloads
    details = "\n".join(workload["details"])
    assert workload["outcome"] == "fail"
    assert "is not allocated" in details
    assert "scheduler: 0/" in details and "cannot allocate all claims" in details, details
    assert "productName == 'NVIDIA H200'" in details or 'productName == "NVIDIA H200"' in details
