"""verify and the decommission gate for waves of `cutover --strategy bridge`: a workload with no
pods is on the bridge only where its next pods would be (a class maps nvidia.com/gpu, and every
GPU node it may use publishes devices and advertises no nvidia.com/gpu above 0); a quota's
`requests.nvidia.com/gpu` keeps counting under the bridge; `--wave-of` holds a wave's unchanged
workloads (its bridged/ folder) to the bridge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.verify import fleet as f
from tests.verify.test_verify import verify

NS = "ml"
POOL = f.POOL_LABEL


def mapping_class() -> dict[str, Any]:
    cls = f.device_class("gpu-extended-resource.gpudra.io")
    cls["spec"]["extendedResourceName"] = "nvidia.com/gpu"
    return cls


def dra_node(name: str, *, gpus_shown: str | None = None) -> list[dict[str, Any]]:
    """A switched node and its slice; `gpus_shown`: the nvidia.com/gpu its status still
    lists (the kubelet keeps a stopped plugin's resource at 0 for a while)."""
    node = f.node(name, 4, dra=True, pool="a")
    if gpus_shown is not None:
        for key in ("capacity", "allocatable"):
            node["status"][key]["nvidia.com/gpu"] = gpus_shown
    return [node, f.gpu_slice(name, 4)]


def idle(resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    spec = f.pod_spec(gpus=1, node_selector={POOL: "a"})
    spec["containers"][0]["resources"]["limits"] = {resource: "1"}
    return f.deployment(NS, "idle", spec, replicas=0)


CASES = {
    # name: (objects, verify's state of the idle Deployment, the gate blocks on its template)
    "mapped, every node it may use switched": (
        [mapping_class(), dra_node("a-1")], "bridge"),
    "mapped, the switched node still lists nvidia.com/gpu at 0": (
        [mapping_class(), dra_node("a-1", gpus_shown="0")], "bridge"),
    "mapped, but the switched node still advertises nvidia.com/gpu: 4": (
        [mapping_class(), dra_node("a-1", gpus_shown="4")], "device plugin"),
    "no class maps the name": (
        [dra_node("a-1")], "device plugin"),
    "mapped, but a node of its pool is still on the device plugin": (
        [mapping_class(), dra_node("a-1"), f.node("a-2", 4, pool="a")], "device plugin"),
    "mapped, but it asks for a MIG profile": (
        [mapping_class(), dra_node("a-1"), idle("nvidia.com/mig-1g.10gb")], "device plugin"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_workload_with_no_pods_is_on_the_bridge_only_where_its_pods_would_be(
        case: str) -> None:
    objects, state = CASES[case]
    workloads = [o for o in objects if isinstance(o, dict) and o.get("kind") == "Deployment"]
    code, report, err = verify(f.state(*objects, *([] if workloads else [idle()]),
                                       version="1.37.2"), "-o", "json")
    assert code == 0, err
    [row] = report["workloads"]
    assert row["state"] == state, row
    templated = [b for b in report["decommission"]["blockers"]
                 if "asks for device-plugin GPUs in its pod template" in b]
    assert bool(templated) == (state == "device plugin"), report["decommission"]
    doubled = [b for b in report["decommission"]["blockers"]
               if "publishes ResourceSlices and still advertises" in b]
    assert bool(doubled) == case.endswith("nvidia.com/gpu: 4"), report["decommission"]


def quota(**hard: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": NS}, "spec": {"hard": hard}}


@pytest.mark.parametrize(("mapped", "hard", "blocked"), [
    (True, {"requests.nvidia.com/gpu": "8"}, []),
    (False, {"requests.nvidia.com/gpu": "8"}, ["hard requests.nvidia.com/gpu"]),
    (True, {"requests.nvidia.com/gpu": "8", "requests.nvidia.com/mig-1g.10gb": "2"},
     ["hard requests.nvidia.com/mig-1g.10gb"]),
])
def test_a_quota_on_the_mapped_name_keeps_counting_under_the_bridge(
        mapped: bool, hard: dict[str, str], blocked: list[str]) -> None:
    objects = [*dra_node("a-1"), quota(**hard), *([mapping_class()] if mapped else [])]
    code, report, err = verify(f.state(*objects, version="1.37.2"), "-o", "json")
    assert code == 0, err
    wanted = [f"{NS}/ResourceQuota/gpus keys on device-plugin GPUs: {'; '.join(blocked)}"]
    assert report["decommission"]["blockers"] == (wanted if blocked else []), report[
        "decommission"]


def bridged_pod(name: str, node: str) -> list[dict[str, Any]]:
    """A pod of Deployment `web` the bridge serves: its scheduler-made claim, allocated."""
    pod = f.pod(NS, name, f.pod_spec(gpus=1, node_selector={POOL: "a"}),
                owner=("ReplicaSet", "web-rs"), node_name=node)
    claim_name = f"{name}-extended-resources-x7k2"
    pod["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": claim_name,
        "requestMappings": [{"containerName": "main", "requestName": "container-0-request-0",
                             "resourceName": "nvidia.com/gpu"}]}
    claim = f.claim(NS, claim_name, devices=[(node, "gpu-0")], reserved=[(name, f"uid-{name}")],
                    cls="gpu-extended-resource.gpudra.io", owner=(name, f"uid-{name}"))
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    return [pod, claim]


def web(on_bridge: bool) -> list[dict[str, Any]]:
    deploy = f.deployment(NS, "web", f.pod_spec(gpus=1, node_selector={POOL: "a"}))
    pods = bridged_pod("web-0", "a-1") if on_bridge else [
        f.pod(NS, "web-0", f.pod_spec(gpus=1, node_selector={POOL: "a"}),
              owner=("ReplicaSet", "web-rs"), node_name="a-2")]
    return [deploy, f.replicaset(deploy), *pods]


@pytest.mark.parametrize(("on_bridge", "code", "message"), [
    (True, 0, "on bridge: 1/1 pod Running and Ready"),
    (False, 1, "not moved: still on the device plugin"),
])
def test_wave_of_holds_the_waves_unchanged_workloads_to_the_bridge(
        tmp_path: Path, on_bridge: bool, code: int, message: str) -> None:
    wave = tmp_path / "wave-1"
    (wave / "bridged" / "replace" / NS).mkdir(parents=True)
    (wave / "bridged" / "replace" / NS / "deployment-web.yaml").write_text(yaml.safe_dump(
        f.deployment(NS, "web", f.pod_spec(gpus=1, node_selector={POOL: "a"}))))
    objects = [mapping_class(), *dra_node("a-1"), f.node("a-2", 4, pool="b"), *web(on_bridge)]
    got, report, err = verify(f.state(*objects, version="1.37.2"), "-o", "json",
                              "--wave-of", str(wave))
    assert got == code, err
    [row] = report["workloads"]
    assert row["message"].startswith(message), row
    if not on_bridge:
        assert row["moved_by_wave"].endswith("bridged/replace/ml/deployment-web.yaml")
        assert any("leaves it unchanged for the bridge" in r for r in row["details"]), row
