"""The cluster tier on a snapshot read from the fake API server with the official client.

This pins down that the checks accept objects exactly as a real server lists them (built-in
list items without kind/apiVersion, CRD items with them, 403 and 404 answers), and shows the
reading contract of gpudra.preflight.cluster.snapshot end to end: discovery decides what is
served, a denied list becomes an `unavailable` reason, an API that is not served is left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.cluster import RESOURCES, run_cluster_checks
from gpudra.preflight.cluster.snapshot import (
    DISCOVERY,
    KUEUE_CONFIG,
    VERSION,
    ClusterSnapshot,
    ResourceRef,
)
from tests.fakeapi import FakeCluster

pytest.importorskip("kubernetes")
from kubernetes import client as k8s  # noqa: E402
from kubernetes import config as k8s_config  # noqa: E402

TOKEN = "preflight-token"
USER = "system:serviceaccount:gpudra:preflight"
DRA_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
DP_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def _node(name: str, labels: dict[str, str], allocatable: dict[str, str], runtime: str
          ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": allocatable, "nodeInfo": {
                "kubeletVersion": "v1.34.2", "containerRuntimeVersion": runtime}}}


def _daemonset(name: str, namespace: str, uid: str, image: str, container: str,
               ready: int, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "uid": uid, "labels": labels},
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": container, "image": image}]}}},
            "status": {"desiredNumberScheduled": 1, "numberReady": ready}}


def _pod(name: str, namespace: str, owner: str, uid: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": uid,
                 "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


STATE: dict[str, Any] = {
    "version": "1.34.2",
    "token": TOKEN,
    "user": USER,
    "crds": ["prometheusrules.monitoring.coreos.com", "clusterqueues.kueue.x-k8s.io",
             "clusterpolicies.nvidia.com",
             {"group": "nvidia.com", "version": "v1alpha1", "plural": "gpuclusters",
              "kind": "GPUCluster", "namespaced": False, "shortNames": ["gc"]}],
    "deny": [{"verb": "list", "resource": "resourcequotas"}],
    "objects": [
        _node("gpu-1", {"nvidia.com/gpu.present": "true"}, {"cpu": "96"}, "containerd://2.1.4"),
        _node("gpu-2", {"nvidia.com/gpu.present": "true",
                        "nvidia.com/gpu.deploy.device-plugin": "true"},
              {"cpu": "96", "nvidia.com/gpu": "8"}, "containerd://2.1.4"),
        _node("cpu-1", {}, {"cpu": "32"}, "containerd://1.7.27"),
        _daemonset("dra-driver-nvidia-gpu-kubelet-plugin", "dra-driver-nvidia-gpu", "uid-dra",
                   DRA_IMAGE, "gpus", 1, {"app.kubernetes.io/name": "dra-driver-nvidia-gpu"}),
        _daemonset("nvidia-device-plugin-daemonset", "gpu-operator", "uid-dp", DP_IMAGE,
                   "nvidia-device-plugin", 1, {"app": "nvidia-device-plugin-daemonset"}),
        _pod("dra-plugin-a", "dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu-kubelet-plugin",
             "uid-dra", "gpu-1"),
        _pod("device-plugin-b", "gpu-operator", "nvidia-device-plugin-daemonset", "uid-dp",
             "gpu-2"),
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "gpu-operator", "namespace": "gpu-operator",
                      "labels": {"app": "gpu-operator"}},
         "spec": {"selector": {"matchLabels": {"app": "gpu-operator"}}, "template": {
             "metadata": {"labels": {"app": "gpu-operator"}}, "spec": {"containers": [
                 {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v25.10.1"}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "gpu.nvidia.com"}, "spec": {"selectors": [{"cel": {
             "expression": "device.driver == 'gpu.nvidia.com'"}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "mig.nvidia.com"}, "spec": {}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": "gpu-1-gpu.nvidia.com-abcde"},
         "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-1",
                  "pool": {"name": "gpu-1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}},
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
         "metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": True}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
         "metadata": {"name": "gpu-queue"},
         "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"]}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
         "metadata": {"name": "gpu-alerts", "namespace": "monitoring"},
         "spec": {"groups": [{"name": "gpu", "rules": [{
             "alert": "GPUsBusy",
             "expr": 'sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu"}) > 6'
         }]}]}},
    ],
}

EXPECTED = {
    "CLUSTER001": CheckOutcome.PASS, "CLUSTER002": CheckOutcome.PASS,
    "CLUSTER003": CheckOutcome.PASS, "CLUSTER004": CheckOutcome.PASS,
    "CLUSTER005": CheckOutcome.WARN, "CLUSTER006": CheckOutcome.PASS,
    "CLUSTER007": CheckOutcome.PASS, "CLUSTER008": CheckOutcome.PASS,
    "CLUSTER009": CheckOutcome.PASS, "CLUSTER010": CheckOutcome.WARN,
    "CLUSTER011": CheckOutcome.UNAVAILABLE, "CLUSTER012": CheckOutcome.PASS,
    "CLUSTER013": CheckOutcome.PASS, "CLUSTER014": CheckOutcome.UNAVAILABLE,
    "CLUSTER015": CheckOutcome.WARN, "CLUSTER016": CheckOutcome.PASS,
}


def _read(call: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    response = call(_preload_content=False, **kwargs)
    return json.loads(response.data)


def _reason(error: k8s.ApiException) -> str:
    try:
        message = json.loads(error.body)["message"]
    except (TypeError, ValueError, KeyError):
        message = error.reason
    return f"{error.status}: {message}"


def _list_all(call: Callable[..., Any], **kwargs: Any) -> tuple[dict[str, Any], ...]:
    items: list[dict[str, Any]] = []
    token = None
    while True:
        page = _read(call, limit=2, _continue=token, **kwargs) if token else \
            _read(call, limit=2, **kwargs)
        items += page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return tuple(items)


def _lister(api: Any, ref: ResourceRef, version: str) -> Callable[[], tuple[dict, ...]]:
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    builtin = {
        "nodes": core.list_node, "pods": core.list_pod_for_all_namespaces,
        "resourcequotas": core.list_resource_quota_for_all_namespaces,
        "daemonsets": apps.list_daemon_set_for_all_namespaces,
        "deployments": apps.list_deployment_for_all_namespaces,
        "deviceclasses": k8s.ResourceV1Api(api).list_device_class,
        "resourceslices": k8s.ResourceV1Api(api).list_resource_slice,
    }
    if ref.key in builtin:
        return lambda: _list_all(builtin[ref.key])
    custom = k8s.CustomObjectsApi(api)
    return lambda: _list_all(custom.list_cluster_custom_object, group=ref.group,
                             version=version, plural=ref.plural)


def snapshot_from(api: Any) -> ClusterSnapshot:
    """What the cluster client does, in miniature: /version, discovery, then one list per
    served resource; errors become reasons."""
    unavailable: dict[str, str] = {}
    objects: dict[str, tuple[dict, ...]] = {}
    server_version = groups = None
    try:
        server_version = _read(k8s.VersionApi(api).get_code)["gitVersion"]
    except k8s.ApiException as error:
        unavailable[VERSION] = _reason(error)
    try:
        listed = _read(k8s.ApisApi(api).get_api_versions)["groups"]
        groups = {"": ("v1",), **{g["name"]: tuple(v["version"] for v in g["versions"])
                                  for g in listed}}
    except k8s.ApiException as error:
        unavailable[DISCOVERY] = _reason(error)
    for ref in RESOURCES:
        try:
            if ref is KUEUE_CONFIG:
                objects[ref.key] = (_read(k8s.CoreV1Api(api).read_namespaced_config_map,
                                          name="kueue-manager-config",
                                          namespace="kueue-system"),)
                continue
            served = [v for v in ref.versions if v in (groups or {}).get(ref.group, ())]
            if groups is not None and not served:
                continue  # not served: "not installed" for a CRD
            objects[ref.key] = _lister(api, ref, served[0] if served else ref.versions[0])()
        except k8s.ApiException as error:
            unavailable[ref.key] = _reason(error)
    return ClusterSnapshot(server_version, groups, objects, unavailable,
                           {"pods": "all namespaces"})


@pytest.fixture(scope="module")
def snapshot() -> ClusterSnapshot:
    with FakeCluster(STATE, tls=False) as cluster:
        api = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
        taken = snapshot_from(api)
        assert {r.method for r in cluster.requests} == {"GET"}
    return taken


def test_the_snapshot_has_what_a_real_server_returns(snapshot: ClusterSnapshot) -> None:
    assert snapshot.server_version == "v1.34.2"
    assert snapshot.served_versions("resource.k8s.io") == ("v1",)
    assert snapshot.served_versions("nvidia.com") == ("v1", "v1alpha1")
    node = snapshot.objects["nodes"][0]
    assert "kind" not in node and "apiVersion" not in node  # built-in list items
    assert snapshot.objects["clusterpolicies"][0]["kind"] == "ClusterPolicy"  # CRD items
    assert len(snapshot.objects["pods"]) == 2 and len(snapshot.objects["nodes"]) == 3
    assert snapshot.unavailable["resourcequotas"].startswith("403: resourcequotas is forbidden")
    assert USER in snapshot.unavailable["resourcequotas"]
    assert snapshot.unavailable["kueueconfig"].startswith("404")  # no Kueue ConfigMap
    assert "nodepools" not in snapshot.objects and "nodepools" not in snapshot.unavailable


def test_cluster_checks_on_the_fake_cluster(snapshot: ClusterSnapshot) -> None:
    results = run_cluster_checks(snapshot)
    got = {r.id: r.outcome for r in results}
    shown = "\n".join(f"{r.id} {r.outcome.value}: {r.message}" for r in results)
    assert got == EXPECTED, shown
    by_id = {r.id: r for r in results}
    assert "gpu-2" in by_id["CLUSTER005"].message
    assert any("nodes from its pods: gpu-2" in d for d in map(str, by_id["CLUSTER007"].details))
    assert "403" in by_id["CLUSTER011"].message
    assert "Operator 25.10.1" in by_id["CLUSTER010"].message
    assert "gpu-queue" in by_id["CLUSTER014"].message
    assert "monitoring/gpu-alerts" in by_id["CLUSTER015"].message
