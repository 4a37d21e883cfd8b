"""gpudra verify against the fake API server: clusters before, during and after a cutover.

Each scenario's verdicts and reasons are asserted from the JSON report; the CLI runs in a
subprocess as users run it (exit codes, formats, a denied read)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.fakeapi import FakeCluster
from tests.verify import fleet as f

NS = "ml"
ANY_H200 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"


def deployed(name: str, spec: dict[str, Any], pods: list[dict[str, Any]], replicas: int = 1,
             **labels: str) -> list[dict[str, Any]]:
    deploy = f.deployment(NS, name, spec, replicas, labels=labels)
    return [deploy, f.replicaset(deploy), *pods]


def claim_pod(name: str, template: str, claim: str, node: str, *, rs: str,
              phase: str = "Running", ready: bool = True) -> dict[str, Any]:
    return f.pod(NS, name, f.pod_spec(template_name=template), owner=("ReplicaSet", rs),
                 phase=phase, ready=ready, node_name=node if phase == "Running" else None,
                 claims={"gpu": claim})


def after_cutover() -> dict[str, Any]:
    """Every node on DRA, every workload on claims and running: decommission-ready."""
    pods = [claim_pod(f"train-{i}", "gpu", f"train-{i}-gpu", "dra-1", rs="train-rs")
            for i in range(2)]
    claims = [f.claim(NS, f"train-{i}-gpu", devices=[("dra-1", f"gpu-{i}")],
                      reserved=[(f"train-{i}", f"uid-train-{i}")],
                      owner=(f"train-{i}", f"uid-train-{i}")) for i in range(2)]
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpus", "namespace": NS},
             "spec": {"hard": {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "8"}}}
    return f.state(f.node("dra-1", 8, dra=True), f.gpu_slice("dra-1", 8), f.device_class(),
                   f.template(NS, "gpu"), deployed("train", f.pod_spec(template_name="gpu"),
                                                   pods, 2), claims, quota)


def during_cutover() -> dict[str, Any]:
    """Half the fleet moved: one node on both stacks, and every way a claim can be stuck."""
    objects: list[Any] = [
        f.node("dp-1", 4), f.node("dra-1", 4, dra=True),
        f.node("both-1", 2, dra=True, plugin=True, labels={"pool": "both"}),
        f.gpu_slice("dra-1", 4, taints={3: {"key": "gpu.nvidia.com/xid", "value": "79",
                                            "effect": "NoSchedule"}}),
        f.gpu_slice("both-1", 2), f.device_class(),
        f.plugin_daemonset(["dp-1", "both-1"]),
        {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "gpus", "namespace": NS},
         "spec": {"hard": {"requests.nvidia.com/gpu": "8"}}},
    ]
    # ok: on claims, allocated on dra-1 gpu-0, running
    objects += [f.template(NS, "gpu"),
                deployed("serve", f.pod_spec(template_name="gpu"),
                         [claim_pod("serve-0", "gpu", "serve-0-gpu", "dra-1", rs="serve-rs")]),
                f.claim(NS, "serve-0-gpu", devices=[("dra-1", "gpu-0")],
                        reserved=[("serve-0", "uid-serve-0")])]
    # busy: gpu-1 and gpu-2 of dra-1 held by claims of other (bare) pods; both-1's GPUs too
    for index, (node_name, device) in enumerate([("dra-1", "gpu-1"), ("dra-1", "gpu-2"),
                                                 ("both-1", "gpu-0"), ("both-1", "gpu-1")]):
        objects += [f.claim(NS, f"hold-{index}", devices=[(node_name, device)],
                            reserved=[(f"holder-{index}", f"uid-holder-{index}")]),
                    f.pod(NS, f"holder-{index}", f.pod_spec(claim_name=f"hold-{index}"),
                          node_name=node_name)]
    # nomatch: asks for an H200, the fleet has H100s; Pending with the scheduler's event
    objects += [f.template(NS, "h200", selector=ANY_H200),
                deployed("nomatch", f.pod_spec(template_name="h200"),
                         [claim_pod("nomatch-0", "h200", "nomatch-0-gpu", "", rs="nomatch-rs",
                                    phase="Pending")]),
                f.claim(NS, "nomatch-0-gpu", selector=ANY_H200),
                f.failed_scheduling(NS, "nomatch-0", "0/3 nodes are available: 3 cannot "
                                    "allocate all claims. preemption: 0/3 nodes are available")]
    # wants2: two GPUs on one node; free are only dra-1 gpu-3 (tainted): held and tainted
    objects += [f.template(NS, "two", count=2),
                deployed("wants2", f.pod_spec(template_name="two"),
                         [claim_pod("wants2-0", "two", "wants2-0-gpu", "", rs="wants2-rs",
                                    phase="Pending")]),
                f.claim(NS, "wants2-0-gpu", count=2)]
    # stolen: a shared claim reserved for another pod, this pod Pending on it
    objects += [f.claim(NS, "shared", devices=[("dra-1", "gpu-0")],
                        reserved=[("someone", "uid-someone")]),
                f.pod(NS, "stolen", f.pod_spec(claim_name="shared"), phase="Pending")]
    # noclass: a template naming a DeviceClass the cluster does not have
    objects += [f.template(NS, "other", cls="gpu.example.com"),
                deployed("noclass", f.pod_spec(template_name="other"),
                         [claim_pod("noclass-0", "other", "noclass-0-gpu", "",
                                    rs="noclass-rs", phase="Pending")]),
                f.claim(NS, "noclass-0-gpu", cls="gpu.example.com")]
    # legacy: still on the device plugin
    objects += deployed("legacy", f.pod_spec(gpus=2),
                        [f.pod(NS, "legacy-0", f.pod_spec(gpus=2),
                               owner=("ReplicaSet", "legacy-rs"), node_name="dp-1")])
    return f.state(*objects)


def before_cutover() -> dict[str, Any]:
    """Nothing moved yet: every workload on the device plugin, no DRA driver."""
    return f.state(f.node("dp-1", 4), f.node("dp-2", 4), f.plugin_daemonset(["dp-1", "dp-2"]),
                   deployed("legacy", f.pod_spec(gpus=4),
                            [f.pod(NS, "legacy-0", f.pod_spec(gpus=4),
                                   owner=("ReplicaSet", "legacy-rs"), node_name="dp-1")]))


def verify(data: dict[str, Any], *args: str) -> tuple[int, Any, str]:
    with FakeCluster(data, tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "verify", "--kubeconfig",
                              str(cluster.kubeconfig), *args], capture_output=True, text=True,
                             timeout=120)
    out: Any = run.stdout
    if "json" in args:
        out = json.loads(run.stdout)
    return run.returncode, out, run.stderr


@pytest.fixture(scope="module")
def during() -> tuple[int, dict[str, Any], str]:
    return verify(during_cutover(), "-o", "json")


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in report["workloads"]}


def gate(report: dict[str, Any]) -> dict[str, Any]:
    return report["decommission"]


def gate_of(report: dict[str, Any]) -> dict[str, Any]:
    """The gate's verdict: safe, judged and what blocks it."""
    return {key: report["decommission"][key] for key in ("safe", "judged", "blockers")}


def test_after_cutover_every_claim_allocated_and_safe_to_decommission() -> None:
    code, report, err = verify(after_cutover(), "-o", "json")
    assert code == 0, err
    train = by_name(report)["train"]
    assert (train["outcome"], train["state"]) == ("pass", "claims")
    assert (train["pods"], train["pods_ready"], train["claims_allocated"]) == (2, 2, 2)
    assert gate(report)["outcome"] == "pass"
    assert gate(report)["message"] == "safe to remove the device plugin"
    assert gate_of(report) == {"safe": True, "judged": True, "blockers": []}


def test_during_cutover_exit_1_and_running_claims_pass(during) -> None:
    code, report, err = during
    assert code == 1, err
    serve = by_name(report)["serve"]
    assert serve["outcome"] == "pass" and serve["state"] == "claims"
    assert report["summary"]["not_ok"] == 4


def test_pending_pod_whose_claim_matches_no_device(during) -> None:
    nomatch = by_name(during[1])["nomatch"]
    assert nomatch["outcome"] == "fail"
    details = "\n".join(nomatch["details"])
    assert "pod ml/nomatch-0: ResourceClaim nomatch-0-gpu is not allocated" in details
    assert "scheduler: 0/3 nodes are available: 3 cannot allocate all claims" in details
    # the plan engine names the selector term and what the devices have instead
    assert 'productName == "NVIDIA H200": 0 of 1 device match; values present: NVIDIA H100 ' \
        '80GB HBM3 (1)' in details
    assert "no free device matches" in details


def test_claim_held_by_another_pod(during) -> None:
    stolen = by_name(during[1])["stolen"]
    assert stolen["outcome"] == "fail" and stolen["kind"] == "Pod"
    assert any("ResourceClaim shared is allocated but not reserved for this pod (held by "
               "someone, uid-someone)" in d for d in stolen["details"])


def test_matching_devices_held_by_other_claims_and_tainted(during) -> None:
    details = "\n".join(by_name(during[1])["wants2"]["details"])
    assert "needs 2 matching devices on one node" in details
    # the held devices are named by the claims that hold them
    assert "matching devices are held by other claims: ml/hold-0, ml/hold-1, ml/hold-2, " \
           "ml/hold-3, ml/serve-0-gpu, ml/shared" in details
    # the one free device left on dra-1 is tainted: the request does not tolerate it
    assert "1 of 1 matching devices are tainted and not tolerated" in details
    assert "dra-1/gpu-3 (gpu.nvidia.com/xid=79:NoSchedule)" in details


def test_missing_device_class(during) -> None:
    details = "\n".join(by_name(during[1])["noclass"]["details"])
    assert "DeviceClass gpu.example.com does not exist" in details


def test_device_plugin_workload_is_a_warning_not_a_failure(during) -> None:
    legacy = by_name(during[1])["legacy"]
    assert (legacy["outcome"], legacy["state"]) == ("warn", "device plugin")
    assert "hold 2 nvidia.com/gpu" in legacy["message"]


def test_node_with_both_stacks_blocks_the_gate(during) -> None:
    blockers = during[1]["decommission"]["blockers"]
    assert not during[1]["decommission"]["safe"]
    assert "pod ml/legacy-0 holds 2 device-plugin GPUs on dp-1" in blockers
    assert ("node both-1 publishes ResourceSlices and still advertises nvidia.com/gpu: 2 "
            "(the device plugin was not stopped there)") in blockers
    assert ("node dp-1 serves nvidia.com/gpu: 4 through the device plugin only (switch it to "
            "DRA first)") in blockers
    assert ("device-plugin DaemonSet gpu-operator/nvidia-device-plugin-daemonset runs on DRA "
            "nodes: both-1") in blockers
    assert "ml/ResourceQuota/gpus keys on device-plugin GPUs: hard requests.nvidia.com/gpu" \
        in blockers
    assert len(blockers) == 5


def test_before_cutover_nothing_on_claims_exit_0_gate_closed() -> None:
    code, report, _ = verify(before_cutover(), "-o", "json")
    assert code == 0
    assert [w["state"] for w in by_name(report).values()] == ["device plugin"]
    assert gate(report)["outcome"] == "warn"
    code, report, _ = verify(before_cutover(), "-o", "json", "--decommission")
    assert code == 1 and gate(report)["outcome"] == "fail"
    assert "pod ml/legacy-0 holds 4 device-plugin GPUs on dp-1" in report["decommission"][
        "blockers"]


def test_selector_and_formats() -> None:
    data = during_cutover()
    code, report, _ = verify(data, "-o", "json", "--selector", "app=serve")
    assert code == 0 and list(by_name(report)) == ["serve"]
    code, text, _ = verify(data, "-o", "junit", "-l", "app in (x)")
    assert code == 2 and text == ""
    for fmt, marker in (("junit", "<testsuite"), ("markdown", "## gpudra verify"),
                        ("github", "::error"), ("table", "Decommission gate")):
        code, text, err = verify(data, "-o", fmt, "-l", "app=nomatch")
        assert code == 1, err
        assert marker in text and "nomatch" in text


def test_denied_events_read_is_an_input_error() -> None:
    data = after_cutover()
    data["deny"] = [{"resource": "events"}]
    code, _, err = verify(data, "-o", "json")
    assert code == 3
    assert "events" in err and "cannot list" in err


def test_rbac_grants_events() -> None:
    from gpudra.rbac import cluster_role

    core = next(r for r in cluster_role()["rules"] if r["apiGroups"] == [""]
                and "pods" in r["resources"])
    assert "events" in core["resources"] and core["verbs"] == ["get", "list"]


@pytest.mark.parametrize("version,compiles", [("1.33.4", False), ("1.36.1", True)])
def test_selectors_judged_in_the_clusters_release(version: str, compiles: bool) -> None:
    """`semver(s, true)` came with 1.34's CEL environment: on a 1.33 cluster the scheduler
    cannot compile the selector, on 1.36 it matches a device another claim holds."""
    selector = ('device.attributes["gpu.nvidia.com"].driverVersion'
                '.isGreaterThan(semver("580.95", true))')
    objects = [f.node("dra-1", 1, dra=True), f.gpu_slice("dra-1", 1), f.device_class(),
               f.claim(NS, "hold", devices=[("dra-1", "gpu-0")], reserved=[("h", "uid-h")]),
               f.pod(NS, "h", f.pod_spec(claim_name="hold"), node_name="dra-1"),
               f.template(NS, "t", selector=selector),
               deployed("w", f.pod_spec(template_name="t"),
                        [claim_pod("w-0", "t", "w-0-gpu", "", rs="w-rs", phase="Pending")]),
               f.claim(NS, "w-0-gpu", selector=selector)]
    code, report, err = verify(f.state(*objects, version=version,
                                       api_versions={"resource.k8s.io": ("v1",)}), "-o", "json")
    assert code == 1, err
    details = "\n".join(by_name(report)["w"]["details"])
    assert ("does not compile" in details) is not compiles, details
    assert ("1 matching devices are held by other claims: ml/hold" in details) is compiles


# --- the benchmark's mid-migration cluster (benchmarks/gen_cluster.py --claim-percent) -------

MIGRATING = {"deployments": 40, "replicas": 3, "nodes": 30, "gpu_nodes": 10, "dra_nodes": 2,
             "gpu_percent": 20, "claim_percent": 50}


@pytest.fixture(scope="module")
def migrating() -> tuple[dict[str, Any], dict[str, Any]]:
    from benchmarks import gen_cluster

    return gen_cluster.generate(**MIGRATING)


def test_benchmark_claims_are_allocated_from_the_slices(migrating) -> None:
    state, meta = migrating
    objects = state["objects"]
    devices = {(o["spec"]["pool"]["name"], d["name"]) for o in objects
               if o["kind"] == "ResourceSlice" for d in o["spec"]["devices"]}
    pods = {o["metadata"]["uid"]: o for o in objects
            if o["kind"] == "Pod" and o["spec"].get("resourceClaims")}
    events = {o["involvedObject"]["uid"] for o in objects
              if o["kind"] == "Event" and o["reason"] == "FailedScheduling"}
    taken: list[tuple[str, str]] = []
    for claim in (o for o in objects if o["kind"] == "ResourceClaim"):
        pod = pods[claim["metadata"]["ownerReferences"][0]["uid"]]
        assert pod["status"]["resourceClaimStatuses"] == [
            {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
        results = claim["status"].get("allocation", {}).get("devices", {}).get("results", [])
        if pod["status"]["phase"] == "Running":
            node = pod["spec"]["nodeName"]
            assert [r["pool"] for r in results] == [node] * claim["spec"]["devices"][
                "requests"][0]["exactly"]["count"]
            assert claim["status"]["reservedFor"] == [
                {"resource": "pods", "name": pod["metadata"]["name"],
                 "uid": pod["metadata"]["uid"]}]
            taken += [(r["pool"], r["device"]) for r in results]
        else:
            assert claim["status"] == {} and pod["metadata"]["uid"] in events
    assert set(taken) <= devices and len(taken) == len(set(taken))  # no device twice
    assert len(pods) == meta["claim_pods"] == 12 and meta["claim_pods_pending"] == 8


def test_verify_judges_the_benchmark_cluster(migrating) -> None:
    state, meta = migrating
    code, report, err = verify(state, "-o", "json")
    assert code == 1, err
    claims = {n: w for n, w in by_name(report).items() if w["state"] == "claims"}
    assert len(claims) == report["summary"]["on_claims"] == meta["claim_deployments"] == 4
    legacy = [w for w in by_name(report).values()
              if w["kind"] == "Deployment" and w["state"] == "device plugin"]
    assert len(legacy) == meta["gpu_deployments"] - len(claims)
    passed = {n for n, w in claims.items() if w["outcome"] == "pass"}
    assert passed == {"triton-0001"}
    for name, workload in claims.items():
        if name in passed:
            continue
        reasons = "\n".join(workload["details"])
        assert "is not allocated" in reasons
        assert "scheduler: 0/30 nodes are available: 10 cannot allocate all claims" in reasons
        assert "16 matching devices are held by other claims" in reasons  # the plan engine


def _cronjob(active: bool) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {**f.pod_spec(template_name="gpu"),
                                               "restartPolicy": "OnFailure"}}}}
    cronjob: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "CronJob",
                               "metadata": {"name": "nightly", "namespace": NS,
                                            "uid": "uid-nightly"},
                               "spec": {"schedule": "0 3 * * *", "jobTemplate": template}}
    if active:
        cronjob["status"] = {"active": [{"kind": "Job", "namespace": NS,
                                         "name": "nightly-29000000"}]}
    return cronjob


@pytest.mark.parametrize("active", [False, True])
def test_a_cronjob_on_claims_is_judged_by_its_running_jobs(active: bool) -> None:
    """Between its scheduled runs a CronJob has no pods, and that is no failure; during a run
    (status.active) its pods must be there."""
    data = f.state(f.node("dra-1", 8, dra=True), f.gpu_slice("dra-1", 8), f.device_class(),
                   f.template(NS, "gpu"), _cronjob(active))
    code, report, _ = verify(data, "-o", "json")
    nightly = by_name(report)["nightly"]
    assert nightly["outcome"] == ("fail" if active else "pass"), nightly
    assert code == (1 if active else 0)


def _cronjob_on_device_plugin() -> dict[str, Any]:
    cronjob = _cronjob(active=False)
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"] = {
        **f.pod_spec(gpus=1), "restartPolicy": "OnFailure"}
    return cronjob


# Each: what is added to a cluster whose gate is open, and the line that must close it.
GATE_CLOSERS = {
    "cronjob between runs": (
        [_cronjob_on_device_plugin()],
        "ml/CronJob/nightly asks for device-plugin GPUs in its pod template (no pods now; its "
        "next pod would)"),
    "deployment scaled to 0": (
        deployed("idle", f.pod_spec(gpus=1), [], replicas=0),
        "ml/Deployment/idle asks for device-plugin GPUs in its pod template (no pods now; its "
        "next pod would)"),
    "pending pod bound to no node": (
        [f.pod(NS, "waiting", f.pod_spec(gpus=2), phase="Pending")],
        "pod ml/waiting asks for 2 device-plugin GPUs (Pending, not scheduled)"),
    "old revision left by a rollout": (
        [f.pod(NS, "train-old", f.pod_spec(gpus=1), owner=("ReplicaSet", "train-rs"),
               node_name="dra-1")],
        "pod ml/train-old holds 1 device-plugin GPU on dra-1"),
    "node still on the device plugin": (
        [f.node("dp-9", 4)],
        "node dp-9 serves nvidia.com/gpu: 4 through the device plugin only (switch it to DRA "
        "first)"),
}


@pytest.mark.parametrize("case", sorted(GATE_CLOSERS))
def test_the_gate_stays_closed_while_anything_would_still_ask_the_device_plugin(
        case: str) -> None:
    added, line = GATE_CLOSERS[case]
    data = after_cutover()
    data["objects"] = data["objects"] + added
    code, report, err = verify(data, "-o", "json", "--decommission")
    assert report["decommission"]["safe"] is False, report["decommission"]
    assert line in report["decommission"]["blockers"]
    assert code == 1, err


def test_the_gate_is_not_judged_from_one_namespace_or_a_selector() -> None:
    for scope in (["-n", NS], ["--selector", "app=train"]):
        code, report, err = verify(after_cutover(), "-o", "json", *scope)
        assert code == 0, err
        assert gate_of(report) == {"safe": False, "judged": False, "blockers": []}
        assert gate(report)["outcome"] == "unavailable"
        assert gate(report)["message"].startswith("not judged:")
        code, _, err = verify(after_cutover(), "--decommission", *scope)
        assert code == 2 and "--decommission judges the whole cluster" in err


def test_the_gate_counts_what_stands_in_the_way_not_its_lines() -> None:
    """Twelve pods on the device plugin are twelve things in the way, though the gate names
    ten and counts the rest in one line; a pod's count says Running and Ready."""
    pods = [f.pod(NS, f"legacy-{i}", f.pod_spec(gpus=1), owner=("ReplicaSet", "legacy-rs"),
                  node_name="dp-1") for i in range(12)]
    data = f.state(f.node("dp-1", 16), deployed("legacy", f.pod_spec(gpus=1), pods, 12))
    _, report, _ = verify(data, "-o", "json")
    blockers = report["decommission"]["blockers"]
    assert "... and 2 more pods asking for device-plugin GPUs" in blockers
    # 12 pods and the node that still serves them through the device plugin
    assert gate(report)["message"] == ("not yet safe to remove the device plugin: 13 things in "
                                       "the way")
    assert by_name(report)["legacy"]["message"] == (
        "still on the device plugin: 12 pods (12 Running and Ready) hold 12 nvidia.com/gpu")


@pytest.mark.parametrize(("node", "resource", "said"), [
    ("dra-1", "nvidia.com/gpu", "still holds 1 device-plugin nvidia.com/gpu"),
    (None, "nvidia.com/gpu", "still asks for 1 device-plugin nvidia.com/gpu"),
    # a MIG profile's resource is named as the pod asks for it, not as nvidia.com/gpu
    (None, "nvidia.com/mig-1g.10gb", "still asks for 1 device-plugin nvidia.com/mig-1g.10gb"),
])
def test_a_pod_on_both_stacks_holds_only_once_bound(node: str | None, resource: str,
                                                    said: str) -> None:
    spec = f.pod_spec(template_name="gpu")
    spec["containers"][0]["resources"]["limits"] = {resource: "1"}
    pod = f.pod(NS, "both-0", spec, owner=("ReplicaSet", "both-rs"),
                phase="Running" if node else "Pending", node_name=node, claims={"gpu": "c"})
    data = f.state(f.node("dra-1", 8, dra=True, plugin=True), f.gpu_slice("dra-1", 8),
                   f.device_class(), f.template(NS, "gpu"),
                   f.claim(NS, "c", devices=[("dra-1", "gpu-0")],
                           reserved=[("both-0", "uid-both-0")]),
                   deployed("both", spec, [pod]))
    _, report, _ = verify(data, "-o", "json")
    assert f"pod {NS}/both-0: {said}" in by_name(report)["both"]["details"]


def test_the_gate_is_not_judged_when_part_of_the_cluster_was_not_read() -> None:
    """A pod its reader refuses (containers: 5) is left out, and may hold GPUs: the gate
    cannot say safe, nor list what it did not see."""
    data = after_cutover()
    data["objects"] = data["objects"] + [{"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "odd", "namespace": NS, "uid": "uid-odd"}, "spec": {"containers": 5}}]
    code, report, _ = verify(data, "-o", "json")
    assert code == 3
    assert gate_of(report) == {"safe": False, "judged": False, "blockers": []}
    assert gate(report)["message"].startswith("not judged: some of the cluster could not be read")
