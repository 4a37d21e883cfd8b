"""The fake API server (tests/fakeapi) against the official Python client and the real kubectl.

What these tests pin down is that clients accept the fake as a Kubernetes API server: the
kubectl wording of errors, paging with continue tokens, discovery, and the injected faults.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakeapi import EXPIRED_CONTEXT, UNREACHABLE_CONTEXT, FakeCluster, StateError, load_state
from tests.fakeapi.tls import tls_available

pytest.importorskip("kubernetes")
from kubernetes import client as k8s
from kubernetes import config as k8s_config

TESTDATA = Path(__file__).parent / "fakeapi" / "testdata"
STATE_FILE = TESTDATA / "cluster.yaml"
CASES = yaml.safe_load((TESTDATA / "cases.yaml").read_text())
USER = "system:serviceaccount:gpudra:auditor"
ALL_PODS = sorted(
    [f"ml-pod-{i}" for i in range(6)] + [f"web-pod-{i}" for i in range(4)]
    + [f"kube-system-pod-{i}" for i in range(3)] + [f"batch-jobs-pod-{i}" for i in range(2)])
REPO = Path(__file__).resolve().parent.parent
KUBECTL = shutil.which("kubectl")


def api_client(cluster: FakeCluster, context: str | None = None) -> Any:
    return k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig),
                                             context=context)


def status_of(error: Any) -> dict[str, Any]:
    return json.loads(error.body)


def http_get(cluster: FakeCluster, path: str, token: str | None) -> tuple[int, dict[str, Any]]:
    """A GET with the standard library: for paths no client API names."""
    context = ssl.create_default_context(cafile=cluster.ca_file) if cluster.ca_file else None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(cluster.url + path, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def small_cluster(**state: Any) -> FakeCluster:
    """A plain-HTTP cluster for the Python client (it sends tokens over http too)."""
    return FakeCluster({"token": "t", "objects": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": ns}}
        for i, ns in enumerate(["a", "a", "b", "c", "c", "c"])], **state}, tls=False)


@pytest.fixture(scope="module")
def cluster() -> Iterator[FakeCluster]:
    """The small cluster of testdata/cluster.yaml, over TLS when openssl is available."""
    state = yaml.safe_load(STATE_FILE.read_text())
    state.pop("object_files")
    state["objects"] += [doc for doc in yaml.safe_load_all(
        (TESTDATA / "extra-objects.yaml").read_text())]
    # Only the kubectl retry test lists pods in batch-jobs namespace-scoped.
    state["faults"] = {"errors": [{"path": "/api/v1/namespaces/batch-jobs/pods", "status": 429,
                                   "count": 2, "retry_after": 0}]}
    with FakeCluster(state) as running:
        yield running


@pytest.fixture(scope="module")
def api(cluster: FakeCluster) -> Any:
    """One client (one connection pool) for the read-only tests of the shared cluster."""
    return api_client(cluster)


# --- state --------------------------------------------------------------------------------

def test_state_file_with_object_files_loads_every_object() -> None:
    state = load_state(STATE_FILE)
    kinds = sorted({obj["kind"] for obj in state.objects})
    assert kinds == ["Deployment", "DeviceClass", "Job", "LimitRange", "Node", "Pod",
                     "PrometheusRule", "ResourceQuota", "ResourceSlice", "Widget"]
    assert sum(obj["kind"] == "Pod" for obj in state.objects) == len(ALL_PODS)


@pytest.mark.parametrize("case", CASES["bad_states"], ids=lambda case: case["message"])
def test_bad_states_are_refused(case: dict[str, Any]) -> None:
    with pytest.raises(StateError, match=case["message"]):
        FakeCluster(case["state"], tls=False)


# --- Python client: version and discovery --------------------------------------------------

def test_version_api(api: Any) -> None:
    info = k8s.VersionApi(api).get_code()
    assert (info.major, info.minor, info.git_version) == ("1", "34", "v1.34.2")
    assert info.platform == "linux/amd64" and info.compiler == "gc"


@pytest.mark.parametrize("version,emulation", [("1.32.3", False), ("1.33.1", True)])
def test_version_document_has_every_field(version: str, emulation: bool) -> None:
    with FakeCluster({"version": version}, tls=False) as small:
        code, document = http_get(small, "/version", token=None)  # public, like a real server
        assert code == 200
        assert http_get(small, "/api", token=None) == (403, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'forbidden: User "system:anonymous" cannot get path "/api"',
            "reason": "Forbidden", "details": {}, "code": 403})
    expected = {"major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
                "goVersion", "compiler", "platform"}
    if emulation:
        expected |= {"emulationMajor", "emulationMinor", "minCompatibilityMajor",
                     "minCompatibilityMinor"}
    assert set(document) == expected
    assert document["gitVersion"] == f"v{version}"


def test_core_and_group_discovery(api: Any) -> None:
    assert k8s.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in k8s.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch", "resource.k8s.io", "monitoring.coreos.com", "example.com",
            "apiextensions.k8s.io"} <= set(groups)
    assert groups["resource.k8s.io"].preferred_version.group_version == "resource.k8s.io/v1"
    resources = {r.name: r for r in k8s.CoreV1Api(api).get_api_resources().resources}
    pods = resources["pods"]
    assert (pods.kind, pods.singular_name, pods.namespaced, pods.short_names,
            pods.categories) == ("Pod", "pod", True, ["po"], ["all"])
    assert {"list", "get", "watch"} <= set(pods.verbs)
    assert resources["pods/status"].verbs == ["get", "patch", "update"]
    dra = {r.name: r for r in k8s.ResourceV1Api(api).get_api_resources().resources}
    assert not dra["deviceclasses"].namespaced and dra["resourceclaims"].namespaced


@pytest.mark.parametrize("case", CASES["served_versions"],
                         ids=lambda case: f"{case['version']}-{len(case)}")
def test_resource_api_versions_by_release(case: dict[str, Any]) -> None:
    state = {key: case[key] for key in ("version", "runtime_config", "api_versions")
             if key in case}
    with small_cluster(**state) as small:
        groups = {g.name: g for g in k8s.ApisApi(api_client(small)).get_api_versions().groups}
    served = groups.get("resource.k8s.io")
    assert ([v.version for v in served.versions] if served else []) == case["expect"]


# --- Python client: listing ----------------------------------------------------------------

def test_paged_list_of_all_pods_follows_continue(cluster: FakeCluster, api: Any) -> None:
    core = k8s.CoreV1Api(api)
    cluster.clear_requests()
    names: list[str] = []
    token = None
    remaining = []
    while True:
        page = core.list_pod_for_all_namespaces(limit=7, _continue=token)
        names += [pod.metadata.name for pod in page.items]
        remaining.append(page.metadata.remaining_item_count)
        token = page.metadata._continue
        if not token:
            break
    assert sorted(names) == ALL_PODS and len(names) == len(set(names))
    assert remaining == [8, 1, None]
    requests = cluster.requests
    assert [r.query.get("limit") for r in requests] == ["7", "7", "7"]
    assert {(r.method, r.path, r.status) for r in requests} == {("GET", "/api/v1/pods", 200)}
    assert [("continue" in r.query) for r in requests] == [False, True, True]


def test_raw_json_list_matches_a_real_server(api: Any) -> None:
    response = k8s.CoreV1Api(api).list_namespaced_pod("ml", _preload_content=False)
    document = json.loads(response.data)
    assert (document["kind"], document["apiVersion"]) == ("PodList", "v1")
    assert set(document["metadata"]) == {"resourceVersion"}  # no continue on a full list
    assert len(document["items"]) == 6
    # Built-in list items carry no kind/apiVersion (kubernetes/kubernetes#3030); CRD items do.
    assert not {"kind", "apiVersion"} & set(document["items"][0])
    custom = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        "monitoring.coreos.com", "v1", "monitoring", "prometheusrules")
    assert custom["items"][0]["kind"] == "PrometheusRule"
    single = k8s.CoreV1Api(api).read_namespaced_pod("ml-pod-0", "ml", _preload_content=False)
    assert json.loads(single.data)["kind"] == "Pod"


def test_dra_objects_through_resource_v1_api(api: Any) -> None:
    dra = k8s.ResourceV1Api(api)
    assert [c.metadata.name for c in dra.list_device_class().items] == [
        "gpu.nvidia.com", "mig.nvidia.com"]
    slices = dra.list_resource_slice(field_selector="spec.nodeName=gpu-1").items
    assert [s.spec.devices[0].name for s in slices] == ["gpu-0"]


@pytest.mark.parametrize("case", CASES["selectors"], ids=lambda case: str(case)[:60])
def test_selectors(api: Any, case: dict[str, Any]) -> None:
    core = k8s.CoreV1Api(api)
    pods = core.list_pod_for_all_namespaces(label_selector=case.get("labelSelector"),
                                            field_selector=case.get("fieldSelector"), limit=2)
    names = [pod.metadata.name for pod in pods.items]
    token = pods.metadata._continue
    while token:
        more = core.list_pod_for_all_namespaces(
            label_selector=case.get("labelSelector"), field_selector=case.get("fieldSelector"),
            limit=2, _continue=token)
        names += [pod.metadata.name for pod in more.items]
        token = more.metadata._continue
    assert sorted(names) == case["expect"]


@pytest.mark.parametrize("case", CASES["bad_selectors"], ids=lambda case: str(case)[:50])
def test_bad_selectors_are_400(api: Any, case: dict[str, Any]) -> None:
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(api).list_pod_for_all_namespaces(
            label_selector=case.get("labelSelector"), field_selector=case.get("fieldSelector"))
    assert raised.value.status == 400
    assert case["message"] in status_of(raised.value)["message"]


# --- Python client: errors -----------------------------------------------------------------

def test_expired_continue_is_410_and_a_restarted_list_completes() -> None:
    with small_cluster(faults={"expire_continue_after": 1}) as small:
        core = k8s.CoreV1Api(api_client(small))
        first = core.list_pod_for_all_namespaces(limit=2)
        second = core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
        with pytest.raises(k8s.ApiException) as raised:
            core.list_pod_for_all_namespaces(limit=2, _continue=second.metadata._continue)
        status = status_of(raised.value)
        assert (raised.value.status, status["reason"], status["code"]) == (410, "Expired", 410)
        assert status["message"].startswith("The provided continue parameter is too old")
        assert status["metadata"]["continue"]  # the "inconsistent" token, as a real server
        names, token = [], None
        while True:  # a restart gets fresh tokens, which stay valid
            page = core.list_pod_for_all_namespaces(limit=2, _continue=token)
            names += [pod.metadata.name for pod in page.items]
            token = page.metadata._continue
            if not token:
                break
        assert sorted(names) == [f"p{i}" for i in range(6)]


@pytest.mark.parametrize("namespace,scope", [
    (None, "at the cluster scope"), ("kube-system", 'in the namespace "kube-system"')])
def test_forbidden_has_the_api_servers_wording(namespace: str | None, scope: str) -> None:
    deny = [{"verb": "list", "group": "", "resource": "pods", "namespace": "kube-system"},
            {"verb": "list", "resource": "deviceclasses"}]
    with small_cluster(deny=deny, user=USER) as small:
        core = k8s.CoreV1Api(api_client(small))
        with pytest.raises(k8s.ApiException) as raised:
            if namespace:
                core.list_namespaced_pod(namespace)
            else:  # listing across namespaces needs the permission in every namespace
                core.list_pod_for_all_namespaces()
        assert core.list_namespaced_pod("a").items  # other namespaces stay readable
        with pytest.raises(k8s.ApiException) as dra:
            k8s.ResourceV1Api(api_client(small)).list_device_class()
    assert raised.value.status == 403
    assert status_of(raised.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'pods is forbidden: User "{USER}" cannot list resource "pods" in API group'
                   f' "" {scope}',
        "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403}
    assert status_of(dra.value)["message"] == (
        f'deviceclasses.resource.k8s.io is forbidden: User "{USER}" cannot list resource '
        f'"deviceclasses" in API group "resource.k8s.io" at the cluster scope')
    assert status_of(dra.value)["details"] == {"group": "resource.k8s.io",
                                               "kind": "deviceclasses"}


def test_not_found_object_and_path(cluster: FakeCluster, api: Any) -> None:
    with pytest.raises(k8s.ApiException) as raised:
        k8s.AppsV1Api(api).read_namespaced_deployment("nope", "ml")
    assert raised.value.status == 404
    status = status_of(raised.value)
    assert (status["reason"], status["message"], status["details"]) == (
        "NotFound", 'deployments.apps "nope" not found',
        {"name": "nope", "group": "apps", "kind": "deployments"})
    for path in ("/apis/nosuch.example.com/v1/things", "/api/v1/pods/name-without-namespace",
                 "/api/v1/namespaces/ml/pods/ml-pod-0/log", "/openapi/v2"):
        code, status = http_get(cluster, path, cluster.state.token)
        assert (code, status["message"]) == (
            404, "the server could not find the requested resource"), path


def test_wrong_token_is_401(cluster: FakeCluster) -> None:
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(api_client(cluster, EXPIRED_CONTEXT)).list_namespace()
    assert raised.value.status == 401
    assert status_of(raised.value)["reason"] == "Unauthorized"


def test_unreachable_context_refuses_connections(cluster: FakeCluster) -> None:
    api = api_client(cluster, UNREACHABLE_CONTEXT)
    api.configuration.retries = 0
    with pytest.raises(Exception, match="Connection refused|Max retries exceeded"):
        k8s.CoreV1Api(api).list_namespace()


def test_writes_are_405_and_logged(cluster: FakeCluster, api: Any) -> None:
    cluster.clear_requests()
    body = {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(api).create_namespaced_pod("ml", body)
    assert raised.value.status == 405
    assert status_of(raised.value)["message"] == (
        'create is not supported on resources of kind "pods"')
    assert [(r.method, r.status) for r in cluster.requests] == [("POST", 405)]


def test_configmap_writes_follow_the_real_servers_rules() -> None:
    """POST creates (409 when it exists), PUT replaces (404 when it does not), both then seen
    by GET and lists; over 1 MiB of data is 422, as ValidateConfigMap answers."""
    with small_cluster() as small:
        core = k8s.CoreV1Api(api_client(small))
        body = {"metadata": {"name": "r"}, "data": {"report.json": "{}"}}
        with pytest.raises(k8s.ApiException) as missing:
            core.replace_namespaced_config_map("r", "a", body)
        created = core.create_namespaced_config_map("a", body)
        with pytest.raises(k8s.ApiException) as twice:
            core.create_namespaced_config_map("a", body)
        replaced = core.replace_namespaced_config_map(
            "r", "a", {**body, "data": {"report.json": "[1]"}})
        assert (missing.value.status, twice.value.status) == (404, 409)
        assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
        assert replaced.metadata.uid == created.metadata.uid
        assert core.read_namespaced_config_map("r", "a").data == {"report.json": "[1]"}
        assert [c.metadata.name for c in core.list_namespaced_config_map("a").items] == ["r"]
        too_big = {"metadata": {"name": "big"}, "data": {"a": "x" * (1 << 20), "b": "y"}}
        with pytest.raises(k8s.ApiException) as invalid:
            core.create_namespaced_config_map("a", too_big)
        assert invalid.value.status == 422
        assert "may not be more than 1048576 bytes" in status_of(invalid.value)["message"]
        assert [(r.method, r.status) for r in small.requests if r.method != "GET"] == [
            ("PUT", 404), ("POST", 201), ("POST", 409), ("PUT", 200), ("POST", 422)]


def test_429_with_retry_after_is_retried_by_the_client() -> None:
    # urllib3 (under the official client) retries 429/503 that carry Retry-After, 3 times.
    faults = {"errors": [{"path": "/api/v1/namespaces", "status": 429, "count": 1,
                          "retry_after": 0}]}
    with small_cluster(faults=faults) as small:
        names = [n.metadata.name for n in k8s.CoreV1Api(api_client(small)).list_namespace().items]
        assert [r.status for r in small.requests] == [429, 200]
    assert "a" in names


@pytest.mark.parametrize("status,retry_after,attempts", [(429, 0, 4), (500, None, 1),
                                                         (503, 0, 4)])
def test_injected_errors_reach_the_caller(status: int, retry_after: int | None,
                                          attempts: int) -> None:
    faults = {"errors": [{"path": "/api/v1/pods", "status": status, "count": 10,
                          "retry_after": retry_after}]}
    with small_cluster(faults=faults) as small:
        core = k8s.CoreV1Api(api_client(small))
        with pytest.raises(k8s.ApiException) as raised:
            core.list_pod_for_all_namespaces()
        assert [r.status for r in small.requests] == [status] * attempts
    assert raised.value.status == status  # after urllib3's retries, the last answer
    assert status_of(raised.value)["reason"] == {
        429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}[status]


# --- standalone process -------------------------------------------------------------------

def test_runs_as_a_process(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeapi", "--state", str(STATE_FILE),
         "--kubeconfig-out", str(kubeconfig)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith(("https://127.0.0.1:", "http://127.0.0.1:")), process.stderr.read()
        api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        assert api.configuration.host == url
        pods = k8s.CoreV1Api(api).list_pod_for_all_namespaces().items
        assert len(pods) == len(ALL_PODS)
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


# --- kubectl -------------------------------------------------------------------------------

needs_kubectl = pytest.mark.skipif(
    KUBECTL is None or not tls_available(),
    reason="kubectl not installed, or no openssl for TLS (kubectl sends tokens only over TLS)")


@pytest.fixture(scope="module")
def kubectl_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kubectl-home")


def kubectl(cluster: FakeCluster, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run([KUBECTL, f"--cache-dir={home / 'cache'}", *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@needs_kubectl
def test_kubectl_version(cluster: FakeCluster, kubectl_home: Path) -> None:
    result = kubectl(cluster, kubectl_home, "version", "-o", "json")
    assert result.returncode == 0, result.stderr
    server = json.loads(result.stdout)["serverVersion"]
    assert (server["gitVersion"], server["major"], server["minor"]) == ("v1.34.2", "1", "34")


@needs_kubectl
def test_kubectl_get_all_pods_in_chunks(cluster: FakeCluster, kubectl_home: Path) -> None:
    cluster.clear_requests()
    result = kubectl(cluster, kubectl_home, "get", "pods", "-A", "--chunk-size=3", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(f"pod/{name}" for name in ALL_PODS)
    pages = [r for r in cluster.requests if r.path == "/api/v1/pods"]
    assert len(pages) == 5 and {r.query["limit"] for r in pages} == {"3"}
    assert sum("continue" in r.query for r in pages) == 4
    assert {r.method for r in cluster.requests} == {"GET"}


@needs_kubectl
def test_kubectl_get_deviceclasses_json(cluster: FakeCluster, kubectl_home: Path) -> None:
    result = kubectl(cluster, kubectl_home, "get", "deviceclasses", "-o", "json")
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)["items"]
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in items] == [
        ("resource.k8s.io/v1", "DeviceClass", "gpu.nvidia.com"),
        ("resource.k8s.io/v1", "DeviceClass", "mig.nvidia.com")]


@needs_kubectl
def test_kubectl_api_resources(cluster: FakeCluster, kubectl_home: Path) -> None:
    result = kubectl(cluster, kubectl_home, "api-resources", "--no-headers")
    assert result.returncode == 0, result.stderr
    rows = {tuple(line.split()) for line in result.stdout.splitlines()}
    assert {("pods", "po", "v1", "true", "Pod"),
            ("deployments", "deploy", "apps/v1", "true", "Deployment"),
            ("jobs", "batch/v1", "true", "Job"),
            ("deviceclasses", "resource.k8s.io/v1", "false", "DeviceClass"),
            ("resourceslices", "resource.k8s.io/v1", "false", "ResourceSlice"),
            ("prometheusrules", "promrule", "monitoring.coreos.com/v1", "true",
             "PrometheusRule"),
            ("widgets", "wd", "example.com/v1alpha1", "true", "Widget")} <= rows


@needs_kubectl
@pytest.mark.parametrize("args,message", [
    (("get", "resourcequotas", "-A"),
     (f'Error from server (Forbidden): resourcequotas is forbidden: User "{USER}" cannot list '
      f'resource "resourcequotas" in API group "" at the cluster scope')),
    (("get", "limits", "-n", "kube-system"),
     (f'Error from server (Forbidden): limitranges is forbidden: User "{USER}" cannot list '
      f'resource "limitranges" in API group "" in the namespace "kube-system"')),
    (("get", "pod", "nope", "-n", "ml"), 'Error from server (NotFound): pods "nope" not found'),
    (("get", "deviceclass", "nope"),
     'Error from server (NotFound): deviceclasses.resource.k8s.io "nope" not found'),
    (("--context", EXPIRED_CONTEXT, "get", "pods", "-n", "ml"),
     "error: You must be logged in to the server (Unauthorized)"),
])
def test_kubectl_error_messages(cluster: FakeCluster, kubectl_home: Path, args: tuple[str, ...],
                                message: str) -> None:
    result = kubectl(cluster, kubectl_home, *args)
    assert result.returncode == 1
    assert message in result.stderr.splitlines()


@needs_kubectl
def test_kubectl_get_resourceslices_table(cluster: FakeCluster, kubectl_home: Path) -> None:
    result = kubectl(cluster, kubectl_home, "get", "resourceslices")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE"]  # no server-side Table: kubectl's own columns
    assert [line.split()[0] for line in lines[1:]] == ["gpu-1-gpu.nvidia.com-x7k2p"]


@needs_kubectl
def test_kubectl_retries_429(cluster: FakeCluster, kubectl_home: Path) -> None:
    cluster.clear_requests()
    result = kubectl(cluster, kubectl_home, "get", "pods", "-n", "batch-jobs", "-o", "name")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pod/batch-jobs-pod-0", "pod/batch-jobs-pod-1"]
    statuses = [r.status for r in cluster.requests if r.path.endswith("/batch-jobs/pods")]
    assert statuses == [429, 429, 200]


# --- the benchmark generator ----------------------------------------------------------------

@pytest.mark.parametrize("claim_percent", [0, 50])
def test_generated_benchmark_cluster_is_served_whole(claim_percent: int) -> None:
    from benchmarks import gen_cluster

    options = {"deployments": 40, "replicas": 3, "nodes": 30, "gpu_nodes": 10, "dra_nodes": 2,
               "gpu_percent": 10, "claim_percent": claim_percent}
    state, meta = gen_cluster.generate(**options)
    assert gen_cluster.generate(**options) == (state, meta)  # seeded: deterministic
    assert meta["gpu_deployments"] == 4
    assert meta["gpu_pods"] + meta.get("claim_pods", 0) == 12
    if claim_percent:
        assert {"ResourceClaimTemplate", "ResourceClaim"} <= set(meta["kinds"])
    api_versions = {obj["kind"]: obj["apiVersion"] for obj in state["objects"]}
    with FakeCluster(state, tls=False) as small:
        for kind, count in meta["kinds"].items():
            prefix = "/api" if "/" not in api_versions[kind] else "/apis"
            resource = small.api.registry.for_kind(api_versions[kind], kind)
            assert resource is not None
            path = f"{prefix}/{api_versions[kind]}/{resource.plural}"
            code, listed = http_get(small, path, "fake-token")
            assert (code, len(listed["items"])) == (200, count), kind


def _distrustful(cluster: FakeCluster) -> None:
    """A client of the system CAs only: it refuses the fake's certificate mid-handshake."""
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{cluster.url}/version", timeout=10,
                               context=ssl.create_default_context())


def _plain_http(cluster: FakeCluster) -> None:
    """A client speaking plain HTTP to the TLS port: the server's handshake reads a request."""
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(cluster.url.replace("https:", "http:") + "/version", timeout=10)


def _gone(cluster: FakeCluster) -> None:
    """A client that connects and leaves before the handshake."""
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=10).close()


@pytest.mark.skipif(not tls_available(), reason="the openssl CLI is needed for a TLS fake")
@pytest.mark.parametrize("client", [_distrustful, _plain_http, _gone],
                         ids=lambda client: client.__name__.strip("_"))
def test_a_client_hanging_up_is_no_traceback_on_stderr(
        client: Any, capfd: pytest.CaptureFixture[str]) -> None:
    # Issue 36: `Exception occurred during processing of request` and an SSLError traceback
    # came out of the server's thread into whichever test was running.
    with FakeCluster({}, tls=True) as fake:
        client(fake)
        for _ in range(1000):  # the server's thread sees the hang-up after the client returns
            if fake.hangups:
                break
            time.sleep(0.01)
        assert fake.hangups, "the server never saw the client hang up"
    err = capfd.readouterr().err
    assert "Exception occurred" not in err and "Traceback" not in err, err
