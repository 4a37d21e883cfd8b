"""Live objects exported as manifests (gpudra.convert.export): server state and defaults go, nothing a
user wrote does, and the result is a valid object that reads back as itself."""

from __future__ import annotations

import copy

import pytest
import yaml

from benchmarks.gen_cluster import build_state
from gpudra.convert.export import clean, dump, file_name
from gpudra.k8s.workloads import WorkloadTable

STATE = build_state(deployments=40, replicas=2, nodes=20, gpu_nodes=5, dra_nodes=1,
                    gpu_percent=50)
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def _objects(kind: str) -> list[dict]:
    return [o for o in STATE["objects"] if o.get("kind") == kind]


def _paths(obj: dict) -> list[tuple]:
    group = obj["apiVersion"].rpartition("/")[0]
    return [s.path for s in WorkloadTable().pod_specs(group, obj["kind"], obj)]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"])
def test_server_state_goes_and_the_rest_stays(kind: str) -> None:
    live = _objects(kind)
    assert live, f"the generated cluster has no {kind}"
    for obj in live:
        before = copy.deepcopy(obj)
        out = clean(obj, _paths(obj))
        assert obj == before, "clean() must not change its input"
        assert "status" not in out
        assert not set(SERVER_SET) & set(out["metadata"])
        assert out["metadata"]["name"] == obj["metadata"]["name"]
        assert out["metadata"].get("namespace") == obj["metadata"].get("namespace")
        for path in _paths(out):
            spec = out
            for part in path:
                spec = spec[part]
            for container in spec["containers"]:
                live_container = next(c for c in _containers(obj, path)
                                      if c["name"] == container["name"])
                # what the user chose is kept
                assert container["image"] == live_container["image"]
                assert container.get("resources", {}) == {k: v for k, v in
                                                          live_container.get("resources",
                                                                             {}).items()}
                assert "terminationMessagePath" not in container


def _containers(obj: dict, path: tuple) -> list[dict]:
    spec = obj
    for part in path:
        spec = spec[part]
    return spec["containers"]


def test_exported_manifests_validate_and_read_back() -> None:
    pytest.importorskip("kubernetes_validate")
    from gpudra.dra.validate import StrictValidator
    from gpudra.dra.versions import TargetVersion

    validator = StrictValidator(TargetVersion.parse("1.34"))
    for kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"):
        for obj in _objects(kind)[:5]:
            out = clean(obj, _paths(obj))
            assert validator.errors(out) == [], (kind, validator.errors(out))
            assert yaml.safe_load(dump(out)) == out


def test_job_generated_selector_and_labels_go() -> None:
    live = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u1",
                     "labels": {"team": "ml", "controller-uid": "u1", "job-name": "train"}},
        "spec": {"backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                 "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u1",
                                                      "batch.kubernetes.io/job-name": "train",
                                                      "controller-uid": "u1", "job-name": "train",
                                                      "app": "train"}},
                              "spec": {"restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
                                       "containers": [{"name": "c", "image": "cuda:12",
                                                       "imagePullPolicy": "IfNotPresent",
                                                       "resources": {"limits": {
                                                           "nvidia.com/gpu": "2"}}}]}}},
        "status": {"active": 1},
    }
    out = clean(live, [("spec", "template", "spec")])
    assert out["metadata"] == {"name": "train", "namespace": "ml", "labels": {"team": "ml"}}
    assert out["spec"] == {"template": {"metadata": {"labels": {"app": "train"}}, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "cuda:12",
                                                  "resources": {"limits": {
                                                      "nvidia.com/gpu": "2"}}}]}}}


def test_user_values_equal_to_nothing_default_are_kept() -> None:
    live = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "x"},
            "spec": {"revisionHistoryLimit": 3, "progressDeadlineSeconds": 600,
                     "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"dnsPolicy": "Default", "containers": [
                                      {"name": "c", "image": "x:latest",
                                       "imagePullPolicy": "IfNotPresent"}]}}}}
    out = clean(live, [("spec", "template", "spec")])
    assert out["spec"]["revisionHistoryLimit"] == 3
    assert "progressDeadlineSeconds" not in out["spec"]
    assert out["spec"]["template"]["spec"]["dnsPolicy"] == "Default"
    # ":latest" pulls Always by default: IfNotPresent was the user's choice
    assert out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_file_names() -> None:
    assert file_name({"kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"}}) == \
        "ml/deployment-web.yaml"
    assert file_name({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterServingRuntime",
                      "metadata": {"name": "r"}}) == \
        "_cluster/clusterservingruntime.serving.kserve.io-r.yaml"
    # a Volcano Job and a batch Job of one name do not collide
    assert file_name({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                      "metadata": {"name": "t", "namespace": "ml"}}) == \
        "ml/job.batch.volcano.sh-t.yaml"


_ZONE = "topology.kubernetes.io/zone"
_REGION = "topology.kubernetes.io/region"


@pytest.mark.parametrize(("node_name", "labels", "kept"), [
    # bound: what PodTopologyLabels copied from the node goes, the author's labels stay
    ("gpu-1", {"app": "debug", _ZONE: "us-a", _REGION: "us"}, {"app": "debug"}),
    ("gpu-1", {_ZONE: "us-a"}, None),
    # not bound: no binding copied anything, so a zone label is the author's
    (None, {"app": "debug", _ZONE: "us-a"}, {"app": "debug", _ZONE: "us-a"}),
])
def test_a_bound_pod_loses_the_labels_its_binding_copied_from_the_node(
        node_name: str | None, labels: dict[str, str], kept: dict[str, str] | None) -> None:
    spec: dict = {"containers": [{"name": "main", "image": "cuda",
                                  "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "debug", "namespace": "ml", "labels": dict(labels)},
           "spec": spec}
    out = clean(pod, [("spec",)])
    assert out["metadata"].get("labels") == kept
    assert pod["metadata"]["labels"] == labels



def _key_orders(value: object) -> list[list[str]]:
    """The keys of every mapping in `value`, each in its order, depth first."""
    if isinstance(value, dict):
        return [list(value)] + [o for v in value.values() for o in _key_orders(v)]
    if isinstance(value, list):
        return [o for v in value for o in _key_orders(v)]
    return []


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"])
def test_dump_keeps_the_objects_key_order(kind: str) -> None:
    """The exported file lists keys in the object's order (the representer's sorting is off)."""
    obj = clean(_objects(kind)[0], _paths(_objects(kind)[0]))
    assert any(keys != sorted(keys) for keys in _key_orders(obj))  # an order sorting would change
    assert _key_orders(yaml.safe_load(dump(obj))) == _key_orders(obj)
