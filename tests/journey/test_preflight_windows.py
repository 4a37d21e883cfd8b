"""`gpudra preflight` and `gpudra audit` on the real control plane, in the states a migration
passes through (issue 32 item 17), each made as a person makes it (kubectl label, pods created
and deleted) and each verdict held against what the API server shows:

1. before the first wave: the DRA driver installed beside the device plugin with the node
   selector docs/cutover.md gives it, no node labelled: CLUSTER005/006 must not fail, and
   CLUSTER006 must say the DaemonSet's own selector;
2. item 4's window: a node labelled before it was drained publishes DRA devices while pods
   still hold its device-plugin GPUs: CLUSTER008 and GPU801 must flag it, naming those pods;
   drained, the node is clean;
3. item 14's window: a node with a claim pod on it sent back to the device plugin before that
   pod was drained: CLUSTER008 and GPU801 must flag the claim whose device is no longer
   published; with the pod gone, the node is clean.

The states follow each other on one cluster, in file order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane.nvidia import A100_80GB
from tests.journey.cluster import Cluster
from tests.journey.fleets import ADMISSION, Fleet, Pool, deployment
from tests.journey.gpu_stack import DRA_KUBELET_PLUGIN, DRA_LABEL, NAMESPACE, PLUGIN_LABEL
from tests.journey.observe import gpu_pods
from tests.journey.steps import brought_up, gpudra

NS = "ml"
GPU_SPEC = {"nodeSelector": {"nvidia.com/gpu.product": A100_80GB.label},
            "containers": [{"name": "main", "image": "registry.example/cuda:12.4",
                            "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}
# Two nodes of four GPUs; two pods of two device-plugin GPUs each.
FLEET = Fleet((Pool("a100", A100_80GB, 2, 4),), (NS,),
              (deployment(NS, "train", 2, GPU_SPEC),), {(NS, "Deployment", "train"): 2},
              ADMISSION)
NODES = tuple(FLEET.machines())
CLAIM_POD = "notebook-0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with brought_up(tmp_path_factory.mktemp("windows"), FLEET) as made:
        yield made


def preflight(cluster: Cluster) -> tuple[int, dict[str, dict[str, Any]]]:
    """preflight's exit code and its checks by id."""
    done = gpudra(cluster, "preflight", "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, {c["id"]: c for c in json.loads(done.stdout)["checks"]}


def gpu801(cluster: Cluster) -> dict[str, str]:
    """audit's GPU801 findings: node -> message."""
    done = gpudra(cluster, "audit", "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    return {f["name"]: f["message"] for f in json.loads(done.stdout)["findings"]
            if f["rule"] == "GPU801"}


def node(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.plane.admin.get(f"/api/v1/nodes/{name}")


def published(cluster: Cluster, name: str) -> int:
    """Devices the node's gpu.nvidia.com slices publish, as the API server lists them."""
    return sum(len(s["spec"].get("devices") or ()) for s in cluster.plane.admin.get(
        "/apis/resource.k8s.io/v1/resourceslices")["items"]
        if s["spec"].get("nodeName") == name and s["spec"].get("driver") == "gpu.nvidia.com")


def device_plugin_gpus(cluster: Cluster, name: str) -> str | None:
    return node(cluster, name)["status"].get("allocatable", {}).get("nvidia.com/gpu")


def label(cluster: Cluster, name: str, *labels: str) -> None:
    done = cluster.plane.kubectl("label", "node", name, *labels, "--overwrite")
    assert done.returncode == 0, done.stderr


def holders_on(cluster: Cluster, name: str) -> list[str]:
    """`ns/pod (N)` of the pods the API server shows Running on the node with device-plugin
    GPUs, as preflight and audit name them."""
    out = []
    for pod in cluster.plane.admin.get(f"/api/v1/namespaces/{NS}/pods")["items"]:
        if pod["spec"].get("nodeName") != name or pod["status"].get("phase") != "Running":
            continue
        gpus = sum(int(c["resources"].get("limits", {}).get("nvidia.com/gpu", 0))
                   for c in pod["spec"]["containers"])
        if gpus:
            out.append(f"{NS}/{pod['metadata']['name']} ({gpus})")
    return sorted(out)


def driver_daemonset(cluster: Cluster) -> dict[str, Any]:
    return cluster.plane.admin.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/"
                                   f"{DRA_KUBELET_PLUGIN['metadata']['name']}")


def test_before_the_first_wave_the_driver_waits_for_its_label(cluster: Cluster) -> None:
    daemonset = driver_daemonset(cluster)
    assert daemonset["status"].get("desiredNumberScheduled", 0) == 0
    assert all(device_plugin_gpus(cluster, name) == "4" and published(cluster, name) == 0
               for name in NODES)
    code, checks = preflight(cluster)
    driver, slices = checks["CLUSTER006"], checks["CLUSTER005"]
    assert driver["outcome"] == "pass", driver
    for key, value in daemonset["spec"]["template"]["spec"]["nodeSelector"].items():
        assert f"{key}={value}" in driver["message"], driver
    assert "pci-10de" not in driver["message"]
    assert "before the first wave" in driver["message"]
    assert slices["outcome"] == "warn", slices
    assert f"all {len(NODES)} GPU nodes are on the device plugin" in slices["message"]
    assert checks["CLUSTER008"]["outcome"] == "pass", checks["CLUSTER008"]
    failing = {key for key, check in checks.items() if check["outcome"] == "fail"}
    assert code == 0 and not failing, failing  # the runbook's starting point is no failure
    assert gpu801(cluster) == {}


def test_a_node_labelled_before_it_is_drained_is_flagged_until_drained(
        cluster: Cluster) -> None:
    plane = cluster.plane
    name = next(view.node for view in gpu_pods(plane.admin, FLEET.namespaces) if view.node)
    # The runbook's labels, before any drain (issue 32 item 4's order).
    label(cluster, name, f"{PLUGIN_LABEL}=false", f"{DRA_LABEL}=dra")
    plane.wait("the node to publish its 4 GPUs and drop the device plugin's", lambda:
               published(cluster, name) == 4 and device_plugin_gpus(cluster, name) is None)
    plane.wait("the kubelet plugin's DaemonSet to count its pod ready", lambda: (
        (status := driver_daemonset(cluster)["status"]).get("desiredNumberScheduled") == 1
        and status.get("numberReady") == 1))
    holders = holders_on(cluster, name)
    assert holders, "the device-plugin pods still run on the node"

    code, checks = preflight(cluster)
    double = checks["CLUSTER008"]
    assert double["outcome"] == "fail" and code == 1, double
    assert f"({name})" in double["message"]
    [detail] = [d for d in double["details"] if d.startswith(f"{name}:")]
    verb = "holds" if len(holders) == 1 else "hold"
    assert detail.endswith(f"{verb} device-plugin GPUs on it: {', '.join(holders)}"), detail
    assert f"publishes {published(cluster, name)} gpu.nvidia.com devices" in detail
    assert checks["CLUSTER006"]["outcome"] == "pass", checks["CLUSTER006"]
    findings = gpu801(cluster)
    assert set(findings) == {name}
    assert all(holder in findings[name] for holder in holders)

    # Drained: its device-plugin pods gone (they come back on the other node), it is clean.
    drained = plane.kubectl("drain", name, "--ignore-daemonsets", "--delete-emptydir-data",
                            "--timeout=60s")
    assert drained.returncode == 0, drained.stderr
    plane.wait("no device-plugin pod left on the node", lambda: not holders_on(cluster, name))
    _, checks = preflight(cluster)
    assert checks["CLUSTER008"]["outcome"] == "pass", checks["CLUSTER008"]
    assert checks["CLUSTER005"]["outcome"] == "warn", checks["CLUSTER005"]
    assert f"1 of {len(NODES)} GPU nodes publish no" in checks["CLUSTER005"]["message"]
    assert gpu801(cluster) == {}
    done = plane.kubectl("uncordon", name)
    assert done.returncode == 0, done.stderr


def _claim_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": CLAIM_POD, "namespace": NS},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": name},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                      "effect": "NoSchedule"}],
                     "resourceClaims": [{"name": "gpu",
                                         "resourceClaimTemplateName": "one-gpu"}],
                     "containers": [{"name": "main", "image": "registry.example/cuda:12.4",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}


def _claims(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.plane.admin.get(
        f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims")["items"]


def test_a_node_back_on_the_device_plugin_under_a_claim_pod_is_flagged(
        cluster: Cluster) -> None:
    plane = cluster.plane
    name = next(n for n in NODES if published(cluster, n))  # the node the last test switched
    plane.admin.create(f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})
    plane.admin.create(f"/api/v1/namespaces/{NS}/pods", _claim_pod(name))
    plane.wait("the claim pod Running on its claim", lambda: plane.admin.get(
        f"/api/v1/namespaces/{NS}/pods/{CLAIM_POD}")["status"].get("phase") == "Running"
        and [c for c in _claims(cluster) if c.get("status", {}).get("reservedFor")])
    [claim] = _claims(cluster)
    allocation = claim["status"]["allocation"]
    [device] = allocation["devices"]["results"]
    # What gpudra.dra.allocations reads the node from, as this release's scheduler writes it.
    assert allocation["nodeSelector"]["nodeSelectorTerms"] == [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [name]}]}]
    _, checks = preflight(cluster)
    assert checks["CLUSTER008"]["outcome"] == "pass", checks["CLUSTER008"]

    # Back to the device plugin before the claim pod is drained (issue 32 item 14's window).
    label(cluster, name, f"{PLUGIN_LABEL}=true", f"{DRA_LABEL}=plugin")
    plane.wait("the slice to go and the device plugin to come back", lambda:
               published(cluster, name) == 0 and device_plugin_gpus(cluster, name) == "4")
    pod = plane.admin.get(f"/api/v1/namespaces/{NS}/pods/{CLAIM_POD}")
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == name

    code, checks = preflight(cluster)
    double = checks["CLUSTER008"]
    assert double["outcome"] == "fail" and code == 1, double
    assert f"({name})" in double["message"]
    claim_name = f"{NS}/{claim['metadata']['name']}"
    stale = f"{device['pool']}/{device['device']}"
    users = ", ".join(r["name"] for r in claim["status"]["reservedFor"])
    assert f"{name}: offers nvidia.com/gpu while claim {claim_name} (used by {users}) still " \
           f"holds {stale}, which gpu.nvidia.com no longer publishes" in double["details"]
    findings = gpu801(cluster)
    assert set(findings) == {name}
    assert claim_name in findings[name] and stale in findings[name]

    # The claim pod ends: nothing holds that GPU twice any more.
    plane.admin.delete(f"/api/v1/namespaces/{NS}/pods/{CLAIM_POD}")
    plane.wait("the claim pod gone and its claim released", lambda: not [
        c for c in _claims(cluster) if c.get("status", {}).get("reservedFor")])
    _, checks = preflight(cluster)
    assert checks["CLUSTER008"]["outcome"] == "pass", checks["CLUSTER008"]
    assert gpu801(cluster) == {}
