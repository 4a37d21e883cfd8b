"""A mid-migration 1.35 cluster (states/midmigration.yaml) audited, planned and exported through
the fake API server: every GPU workload once, at its real owner; pods the KEP-5004 bridge serves
counted as on DRA; what could not be read never turned into a fact (issue 14)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.fakeapi import FakeCluster

STATE = Path(__file__).parent / "states" / "midmigration.yaml"
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}


def midmigration() -> dict[str, Any]:
    """The state as a dict (anchors resolved), for variants of it."""
    return copy.deepcopy(yaml.safe_load(STATE.read_text()))


@pytest.fixture(scope="module")
def cluster() -> Any:
    with FakeCluster(STATE, tls=False) as fake:
        yield fake


def run(fake: FakeCluster, *args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(app, [*args, "--kubeconfig", str(fake.kubeconfig), "-o", "json"],
                                env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


def gpu_findings(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(f["namespace"], f["kind"], f["name"]): f for f in report["findings"]
            if f["rule"] in ("GPU101", "GPU102", "GPU103")}


@pytest.fixture(scope="module")
def audited(cluster: FakeCluster) -> dict[str, Any]:
    code, report, _ = run(cluster, "audit")
    assert code == 1
    return report


def test_every_gpu_workload_once_at_its_real_owner(audited: dict[str, Any]) -> None:
    assert set(gpu_findings(audited)) == {
        ("ml", "Deployment", "llm-api"), ("ml", "CronJob", "nightly-eval"),
        ("ml", "JobSet", "pretrain"), ("serving", "LeaderWorkerSet", "vllm"),
        ("research", "RayCluster", "ray-tune"), ("serving", "InferenceService", "llama"),
        ("lab", "Pod", "debug-gpu"), ("ml", "Pod", "orphan-trainer-x7k2"),
        ("search", "Deployment", "rerank")}
    summary = audited["summary"]
    assert (summary["gpu_workloads"], summary["on_device_plugin"], summary["on_dra"],
            summary["on_bridge"]) == (10, 8, 1, 1)
    assert summary["percent_migrated"] == 20.0


def test_worker_statefulsets_of_a_leaderworkerset_count_for_it(audited: dict[str, Any]) -> None:
    # worker Pod -> StatefulSet vllm-N -> leader Pod vllm-N -> StatefulSet vllm -> LWS vllm
    vllm = [f for f in audited["findings"] if f["name"] == "vllm" and f["rule"] == "GPU101"]
    assert {f["container"] for f in vllm} == {"vllm-leader", "vllm-worker"}
    assert all(f["cluster"]["running_pods"] == 4 and f["cluster"]["replicas"] == 4
               and f["cluster"]["nodes"] == ["dp-a100-1", "dp-a100-2"] for f in vllm)
    assert not [f for f in audited["findings"] if f["kind"] == "StatefulSet"]


@pytest.mark.parametrize(("workload", "replicas", "running"), [
    (("serving", "LeaderWorkerSet", "vllm"), 4, 4),    # replicas 2 x size 2
    (("ml", "JobSet", "pretrain"), 4, 4),             # 2 Jobs x parallelism 2
    (("research", "RayCluster", "ray-tune"), 3, 2),   # head + 2 workers; one worker Pending
    (("serving", "InferenceService", "llama"), 1, 1),
    (("ml", "Deployment", "llm-api"), 2, 2),
])
def test_replicas_of_controllers_that_run_several_templates(audited: dict[str, Any],
                                                            workload: tuple, replicas: int,
                                                            running: int) -> None:
    info = gpu_findings(audited)[workload]["cluster"]
    assert (info["replicas"], info["running_pods"]) == (replicas, running)


def test_plan_counts_the_pods_the_audit_reports(cluster: FakeCluster) -> None:
    code, report, _ = run(cluster, "plan")
    pods = {(w["namespace"], w["kind"], w["name"]): w["pods"] for w in report["workloads"]}
    assert pods[("serving", "LeaderWorkerSet", "vllm")] == 4
    assert pods[("ml", "JobSet", "pretrain")] == 4
    assert pods[("research", "RayCluster", "ray-tune")] == 2  # the head asks no GPU
    assert ("serving", "StatefulSet", "vllm-0") not in pods
    assert ("ml", "Pod", "orphan-trainer-x7k2") in pods
    assert sum(pods.values()) == 18 and len(pods) == 10
    assert sum(r["allocated"] for w in report["workloads"] for r in w["requests"]) == 19
    assert code == 0


def test_a_pod_whose_controller_is_gone_is_reported_at_the_pod(audited: dict[str, Any]) -> None:
    orphan = gpu_findings(audited)[("ml", "Pod", "orphan-trainer-x7k2")]
    assert orphan["cluster"]["running_pods"] == 1 and orphan["cluster"]["nodes"] == ["dp-a100-1"]


def test_a_cluster_of_only_an_orphaned_gpu_pod_is_not_empty() -> None:
    state = midmigration()
    state["objects"] = [o for o in state["objects"]
                        if o["metadata"]["name"] == "orphan-trainer-x7k2"]
    with FakeCluster(state, tls=False) as fake:
        code, report, _ = run(fake, "audit")
        table = CliRunner().invoke(app, ["audit", "--kubeconfig", str(fake.kubeconfig)], env=ENV)
    assert code == 1 and report["summary"]["gpu_workloads"] == 1
    assert "No GPU workloads found" not in table.stdout


def test_a_dangling_owner_two_levels_up_reports_the_replicaset() -> None:
    # The Deployment is gone, its ReplicaSet is still there: the ReplicaSet is the workload.
    state = midmigration()
    state["objects"] = [o for o in state["objects"] if not (
        o["kind"] == "Deployment" and o["metadata"]["name"] == "llm-api")]
    with FakeCluster(state, tls=False) as fake:
        _, report, _ = run(fake, "audit", "-n", "ml")
    found = gpu_findings(report)
    assert ("ml", "ReplicaSet", "llm-api-6c9f8") in found
    assert found[("ml", "ReplicaSet", "llm-api-6c9f8")]["cluster"]["running_pods"] == 2
    assert not any(key[1] == "Pod" and key[2].startswith("llm-api") for key in found)


def test_bridge_served_pods_are_on_dra(audited: dict[str, Any]) -> None:
    rerank = gpu_findings(audited)[("search", "Deployment", "rerank")]
    assert rerank["cluster"]["bridge_pods"] == 1 and rerank["cluster"]["nodes"] == []
    assert "bridge" in rerank["message"]
    search = {n["namespace"]: n for n in audited["summary"]["namespaces"]}["search"]
    assert (search["gpu_workloads"], search["on_dra"], search["on_bridge"],
            search["percent_migrated"]) == (2, 1, 1, 100.0)
    # it holds no device-plugin GPU on its node, and its claim is not anybody's finding
    holders = [h for f in audited["findings"] if f["rule"] == "GPU803"
               for h in f["cluster"]["gpu_holders"]]
    assert holders and not any("rerank" in h for h in holders)
    assert not [f for f in audited["findings"] if "extended-resources" in (f["name"] or "")]


def test_a_mixed_workload_is_still_on_the_device_plugin() -> None:
    # One pod served by the bridge, one by the device plugin: the device plugin is still needed.
    state = midmigration()
    pod = next(o for o in state["objects"] if o["metadata"]["name"] == "rerank-58d4c-wq7zt")
    second = copy.deepcopy(pod)
    second["metadata"]["name"] = "rerank-58d4c-zz1aa"
    second["metadata"]["uid"] = "pod-rerank-2"
    second["spec"]["nodeName"] = "dp-a100-1"
    del second["status"]["extendedResourceClaimStatus"]
    state["objects"].append(second)
    with FakeCluster(state, tls=False) as fake:
        _, report, _ = run(fake, "audit", "-n", "search")
    rerank = gpu_findings(report)[("search", "Deployment", "rerank")]["cluster"]
    assert (rerank["bridge_pods"], rerank["nodes"]) == (1, ["dp-a100-1"])
    assert (report["summary"]["on_bridge"], report["summary"]["on_device_plugin"]) == (0, 1)


def test_unreadable_replicasets_make_running_pods_unknown_not_zero() -> None:
    state = midmigration()
    state["deny"] = [{"resource": "replicasets", "verb": "list"}]
    with FakeCluster(state, tls=False) as fake:
        code, report, _ = run(fake, "audit")
    found = gpu_findings(report)
    assert found[("ml", "Deployment", "llm-api")]["cluster"]["running_pods"] is None
    assert found[("serving", "InferenceService", "llama")]["cluster"]["running_pods"] is None
    # kinds that own their pods directly are still known
    assert found[("ml", "JobSet", "pretrain")]["cluster"]["running_pods"] == 4
    # pods below the unreadable kind are unknown, not orphans
    assert not any(key[1] == "Pod" and key[2].startswith("llm-api") for key in found)
    assert code == 3 and report["errors"]


def test_nothing_readable_is_no_percentage() -> None:
    state = midmigration()
    state["deny"] = [{"resource": "*"}]
    with FakeCluster(state, tls=False) as fake:
        code, report, _ = run(fake, "audit")
        table = CliRunner().invoke(app, ["audit", "--kubeconfig", str(fake.kubeconfig)], env=ENV)
    assert code == 3 and report["summary"]["percent_migrated"] is None
    assert report["summary"]["gpu_workloads"] == 0
    assert "in what could be read" in table.stdout


def test_a_namespaced_role_is_a_normal_audit() -> None:
    state = midmigration()
    state["namespaced_only"] = ["ml"]
    with FakeCluster(state, tls=False) as fake:
        code, report, stderr = run(fake, "audit", "-n", "ml")
        table = CliRunner().invoke(app, ["audit", "--kubeconfig", str(fake.kubeconfig),
                                         "-n", "ml"], env=ENV)
    assert set(gpu_findings(report)) == {("ml", "Deployment", "llm-api"),
                                         ("ml", "CronJob", "nightly-eval"),
                                         ("ml", "JobSet", "pretrain"),
                                         ("ml", "Pod", "orphan-trainer-x7k2")}
    assert gpu_findings(report)[("ml", "Deployment", "llm-api")]["cluster"]["running_pods"] == 2
    assert [f["name"] for f in report["findings"] if f["rule"] == "GPU201"] == ["gpu-quota"]
    refused = {r["object"]: r["without"] for r in report["not_read"]}
    assert set(refused) == {"nodes (cluster-wide)",
                            "resourceslices.resource.k8s.io (cluster-wide)",
                            "deviceclasses.resource.k8s.io (cluster-wide)",
                            "clusterqueues.kueue.x-k8s.io (cluster-wide)",
                            "nodepools.karpenter.sh (cluster-wide)"}
    assert "GPU803" in refused["nodes (cluster-wide)"]
    assert report["errors"] == [] and code == 1  # findings, not a partial read
    assert table.stdout.count("not read (a namespaced role may not)") == 5


def test_a_namespaced_role_refused_in_its_own_namespace_is_an_error() -> None:
    state = midmigration()
    state["namespaced_only"] = ["ml"]
    with FakeCluster(state, tls=False) as fake:
        code, report, _ = run(fake, "audit", "-n", "serving")
    assert code == 3 and any("pods" in e["object"] for e in report["errors"])


def test_plan_never_allocates_a_tainted_device_without_a_toleration() -> None:
    # Only dra-h100-1 is eligible: its gpu-1 has the driver's fatal-XID NoSchedule taint.
    state = midmigration()
    state["objects"] = [o for o in state["objects"] if o["kind"] not in ("Node", "ResourceSlice")
                        or o["metadata"]["name"].startswith("dra-h100-1")]
    for obj in state["objects"]:
        if obj["kind"] == "ResourceSlice":
            obj["spec"]["devices"] = [d for d in obj["spec"]["devices"]
                                      if d["name"] in ("gpu-0", "gpu-1")]
    with FakeCluster(state, tls=False) as fake:
        _, report, _ = run(fake, "plan")
    by_name = {w["name"]: w for w in report["workloads"]}
    pretrain = by_name["pretrain"]  # 4 pods x 1 GPU, 1 usable device
    assert pretrain["pods_placed"] <= 1 and not pretrain["satisfiable"]
    assert any("gpu.nvidia.com/xid=79:NoSchedule" in w and "dra-h100-1/gpu-1" in w
               for w in pretrain["warnings"])
    assert sum(r["allocated"] for w in report["workloads"] for r in w["requests"]) == 1
    # gpu-0 only: gpu-1 went to no one
    assert all(any("tainted and not tolerated" in x for x in w["warnings"])
               for w in report["workloads"])


def _gpu_pod(name: str, namespace: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
            "spec": {"nodeName": "dp-a100-1", "containers": [
                {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            "status": {"phase": "Running"}}


def test_convert_from_cluster_exports_bare_pods_cleaned_and_lists_the_rest(
        tmp_path: Path) -> None:
    state = midmigration()
    state["objects"] += [
        _gpu_pod("wf-step-1", "lab", {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                                      "name": "wf", "uid": "wf-1", "controller": True}),
        _gpu_pod("kube-gpu-probe-dp-a100-1", "lab", {"apiVersion": "v1", "kind": "Node",
                                                     "name": "dp-a100-1", "uid": "n-1",
                                                     "controller": True})]
    out = tmp_path / "exported"
    with FakeCluster(state, tls=False) as fake:
        result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                          str(fake.kubeconfig), "--output-dir", str(out),
                                          "-o", "json"], env=ENV)
    assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert "lab/pod-debug-gpu.yaml" in files and "ml/pod-orphan-trainer-x7k2.yaml" in files
    assert not [f for f in files if "statefulset" in f or "wf-step" in f or "probe" in f]
    assert not [f for f in files if "extended-resources" in f or "resourceclaim-" in f]
    pod = next(yaml.safe_load_all((out / "lab/pod-debug-gpu.yaml").read_text()))
    spec = pod["spec"]
    assert "status" not in pod and set(pod["metadata"]) == {"name", "namespace"}
    assert not {"nodeName", "serviceAccountName", "serviceAccount", "volumes", "priority",
                "restartPolicy", "dnsPolicy", "schedulerName"} & set(spec)
    assert "volumeMounts" not in spec["containers"][0]
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                    "effect": "NoSchedule"}]
    orphan = next(yaml.safe_load_all((out / "ml/pod-orphan-trainer-x7k2.yaml").read_text()))
    assert "ownerReferences" not in orphan["metadata"]
    report = json.loads(result.stdout)
    skipped = {w["name"]: w for w in report["workloads"] if w["strategy"] == "manual"}
    assert set(skipped) == {"wf-step-1", "kube-gpu-probe-dp-a100-1"}
    assert "Workflow wf" in skipped["wf-step-1"]["reason"]
    assert "static pod" in skipped["kube-gpu-probe-dp-a100-1"]["reason"]


def _without_bridge(version: str) -> dict[str, Any]:
    state = midmigration()
    state["version"] = version
    state["objects"] = [o for o in state["objects"] if "extended-resources" not in
                        o["metadata"]["name"] and o["metadata"]["name"] != "rerank-58d4c-wq7zt"]
    return state


@pytest.mark.parametrize(("version", "message"), [
    ("1.35.2", "DRAExtendedResource is alpha and off by default in Kubernetes 1.35: only if it "
               "was turned on"),
    ("1.36.1", None),   # beta and on: the quota counts the class's claims, nothing to report
    ("1.34.4", "DRAExtendedResource is alpha and off by default in Kubernetes 1.34"),
])
def test_gpu201_says_what_the_release_and_the_live_classes_make_true(version: str,
                                                                     message: str | None) -> None:
    with FakeCluster(_without_bridge(version), tls=False) as fake:
        _, report, _ = run(fake, "audit", "-n", "ml")
    found = [f for f in report["findings"] if f["rule"] == "GPU201"]
    if message is None:
        assert found == []
    else:
        [quota] = found
        assert message in quota["message"] and "DeviceClass gpu.nvidia.com maps" in \
            quota["message"]


def test_gpu201_is_quiet_where_the_bridge_is_seen_working(audited: dict[str, Any]) -> None:
    # 1.35 (gate off by default), but the scheduler made bridge claims: the gate is on.
    assert not [f for f in audited["findings"] if f["rule"] == "GPU201"]


def test_gpudra_rbac_prints_the_namespace_its_service_account_needs() -> None:
    default = list(yaml.safe_load_all(CliRunner().invoke(app, ["rbac"]).stdout))
    assert [d["kind"] for d in default] == ["Namespace", "ServiceAccount", "ClusterRole",
                                            "ClusterRoleBinding"]
    assert default[0]["metadata"]["name"] == default[1]["metadata"]["namespace"] == "gpudra"
    given = list(yaml.safe_load_all(CliRunner().invoke(app, ["rbac", "-n", "ops"]).stdout))
    assert [d["kind"] for d in given] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    assert given[0]["metadata"]["namespace"] == "ops"
    assert given[2]["subjects"][0]["namespace"] == "ops"
    user = list(yaml.safe_load_all(CliRunner().invoke(app, ["rbac", "--user", "a"]).stdout))
    assert [d["kind"] for d in user] == ["ClusterRole", "ClusterRoleBinding"]


def test_the_role_gpudra_rbac_prints_is_enough_for_audit_plan_and_preflight() -> None:
    # The fake refuses everything the ClusterRole does not grant.
    from gpudra.rbac import cluster_role
    from tests.fakeapi.registry import BUILTIN_RESOURCES
    from tests.fakeapi.state import KNOWN_CRDS

    state = midmigration()
    served = {(r.group, r.plural) for r in BUILTIN_RESOURCES} | {
        (KNOWN_CRDS[c]["group"], KNOWN_CRDS[c]["plural"]) for c in state["crds"]}
    state["deny"] = []
    for verb in ("get", "list"):
        granted = {(g, r) for rule in cluster_role()["rules"] if "resourceNames" not in rule
                   and verb in rule["verbs"] for g in rule["apiGroups"] for r in rule["resources"]}
        state["deny"] += [{"group": g, "resource": r, "verb": verb} for g, r in served - granted]
    assert {"group": "", "resource": "configmaps", "verb": "list"} in state["deny"]
    with FakeCluster(state, tls=False) as fake:
        for command in (["audit"], ["plan"], ["preflight"]):
            _, report, _ = run(fake, *command)
            assert report["errors"] == [], (command, report["errors"])


def test_gpu501_tells_a_recording_rule_from_an_alerting_rule(audited: dict[str, Any]) -> None:
    messages = sorted(f["message"] for f in audited["findings"] if f["rule"] == "GPU501")
    assert len(messages) == 2
    assert messages[0].startswith("alerting rule 'GPUCapacityLow'")
    assert messages[1].startswith("recording rule 'namespace:gpu_requests:sum'")
    assert "every alert and dashboard built on it" in messages[1]


def test_plan_under_a_namespaced_role_says_it_cannot_see_the_devices() -> None:
    state = midmigration()
    state["namespaced_only"] = ["ml"]
    with FakeCluster(state, tls=False) as fake:
        code, report, _ = run(fake, "plan", "-n", "ml")
    assert code == 3
    assert any("nodes" in e.get("object", "") for e in report["errors"])


def _mig_state(selector: str) -> dict[str, Any]:
    """An A100-SXM4-40GB node in mixed MIG mode with no MIG labels (only the device plugin's
    allocatable), and a pod claiming a MIG device by its memory."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mig-a100", "labels": {
                "nvidia.com/gpu.present": "true", "nvidia.com/mig.strategy": "mixed",
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}},
            "status": {"allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "7"}}}
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "slice", "namespace": "ml"},
                "spec": {"spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                    "deviceClassName": "mig.nvidia.com",
                    "selectors": [{"cel": {"expression": selector}}]}}]}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "small", "namespace": "ml"},
           "spec": {"resourceClaims": [{"name": "mig", "resourceClaimTemplateName": "slice"}],
                    "containers": [{"name": "c", "image": "x",
                                    "resources": {"claims": [{"name": "mig"}]}}]}}
    return {"version": "1.35.2", "token": "t0ken", "objects": [node, template, pod]}


@pytest.mark.parametrize(("minimum", "satisfiable"), [("4Gi", True), ("5Gi", False)])
def test_predicted_mig_devices_have_the_usable_memory_not_the_nominal(minimum: str,
                                                                      satisfiable: bool) -> None:
    selector = (f'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{minimum}"))'
                " >= 0")
    with FakeCluster(_mig_state(selector), tls=False) as fake:
        _, report, _ = run(fake, "plan")
    [workload] = report["workloads"]
    assert workload["satisfiable"] is satisfiable
    assert report["devices"]["total"] == 7
    if not satisfiable:  # 1g.5gb has 4864Mi on an A100-40GB: the driver's capacity, not 5Gi
        assert any("4864Mi" in r for q in workload["requests"] for r in q["rejections"])


def test_a_live_device_class_on_a_removed_attribute_is_flagged_with_the_new_name() -> None:
    state = midmigration()
    state["objects"].append({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "near-nic.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].numa == 0"
            " && device.attributes['gpu.nvidia.com'].pcieBusID.startsWith('0000:1')"}}]}})
    with FakeCluster(state, tls=False) as fake:
        _, report, _ = run(fake, "audit")
    messages = [f["message"] for f in report["findings"]
                if f["rule"] == "GPU605" and f["name"] == "near-nic.nvidia.com"]
    assert len(messages) == 2
    assert any('use device.attributes["resource.kubernetes.io"].numaNode' in m for m in messages)
    assert any('use device.attributes["resource.kubernetes.io"].pciBusID' in m for m in messages)


def test_the_device_plugin_sharing_config_is_a_finding_with_its_replicas(
        audited: dict[str, Any]) -> None:
    [config] = [f for f in audited["findings"] if f["rule"] == "GPU111"]
    assert (config["namespace"], config["name"], config["quantity"]) == (
        "gpu-operator", "time-slicing-config", 4)
    assert "TimeSlicing strategy sets only an interval" in config["message"]
    assert "ConsumableShares" in config["message"] and "MPS" in config["message"]


def test_preflight_judges_the_driver_gates_against_the_sharing_in_use(
        cluster: FakeCluster) -> None:
    _, report, _ = run(cluster, "preflight")
    by_id = {c["id"]: c for c in report["checks"]}
    sharing = by_id["CLUSTER016"]
    assert sharing["outcome"] == "warn"
    assert "dp-a100-1, dp-a100-2, dra-h100-2" in sharing["message"]
    assert "gates on: NVMLDeviceHealthCheck" in " ".join(sharing["details"])
    # the bridge on the node that also runs the device plugin: over-admission
    assert by_id["CLUSTER009"]["outcome"] == "fail"
    assert "(dra-h100-2)" in by_id["CLUSTER009"]["message"]
    assert by_id["CLUSTER014"]["outcome"] == "warn"  # a GPU ClusterQueue, no Kueue config
    assert "gpu-h100 (limit nvidia.com/gpu: 32" in by_id["CLUSTER013"]["message"]
