"""gpudra cutover on fleets where a safe order exists, where only one order works, and where
none does. Every plan's waves are re-checked here by an independent simulation (first-fit
decreasing of each pod's GPUs on the nodes its nodeSelector allows), not the plan engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakeapi import FakeCluster
from tests.verify import fleet as f

POOL = f.POOL_LABEL


def cutover(tmp_path: Path, objects: list[dict[str, Any]], *args: str
            ) -> tuple[int, Any, str]:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                          "-o", "json", *args], capture_output=True, text=True, timeout=120)
    return run.returncode, json.loads(run.stdout) if run.stdout.startswith("{") else None, \
        run.stderr


def pinned(pool: str) -> dict[str, str]:
    return {POOL: pool}


# --- the independent check -------------------------------------------------------------------

def demand(objects: list[dict[str, Any]]) -> dict[str, tuple[int, int, dict[str, str]]]:
    """`ns/Kind/name` -> (pods, GPUs per pod, nodeSelector), read from the manifests."""
    out = {}
    for obj in objects:
        if obj["kind"] not in ("Deployment", "Job", "StatefulSet"):
            continue
        spec = obj["spec"]
        pods = spec.get("replicas", spec.get("parallelism", 1))
        pod_spec = spec["template"]["spec"]
        gpus = sum(int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
                   for c in pod_spec["containers"])
        meta = obj["metadata"]
        out[f"{meta['namespace']}/{obj['kind']}/{meta['name']}"] = (
            pods, gpus, pod_spec.get("nodeSelector", {}))
    return out


def fits(workloads: list[tuple[int, int, dict[str, str]]],
         nodes: dict[str, tuple[int, dict[str, str]]]) -> bool:
    free = {name: gpus for name, (gpus, _) in nodes.items()}
    pods = sorted(((size, selector) for count, size, selector in workloads
                   for _ in range(count)), key=lambda p: -p[0])
    for size, selector in pods:
        choices = [n for n, (_, labels) in nodes.items()
                   if all(labels.get(k) == v for k, v in selector.items()) and free[n] >= size]
        if not choices:
            return False
        best = min(choices, key=lambda n: (free[n] - size, n))
        free[best] -= size
    return True


def recheck(objects: list[dict[str, Any]], report: dict[str, Any]) -> None:
    """After every wave both sides fit, no node is on both, each workload moves once."""
    wanted = demand(objects)
    nodes = {o["metadata"]["name"]: (int(o["status"]["allocatable"].get("nvidia.com/gpu", 0)),
                                     o["metadata"]["labels"])
             for o in objects if o["kind"] == "Node"}
    on_dra: set[str] = set()
    moved: list[str] = []
    for wave in report["waves"]:
        assert not set(wave["nodes"]) & on_dra, "a node switched twice"
        on_dra |= set(wave["nodes"])
        moved += [f"{w['namespace']}/{w['kind']}/{w['name']}" for w in wave["workloads"]]
        plugin = {n: v for n, v in nodes.items() if n not in on_dra}
        dra = {n: v for n, v in nodes.items() if n in on_dra}
        assert fits([wanted[k] for k in wanted if k not in moved], plugin), wave
        assert fits([wanted[k] for k in moved], dra), wave
    assert len(moved) == len(set(moved))
    if report["complete"]:
        assert set(moved) == set(wanted) and on_dra == set(nodes)


# --- fleets ----------------------------------------------------------------------------------

def safe_fleet() -> list[dict[str, Any]]:
    return [f.node("a-1", 8, pool="a"), f.node("a-2", 8, pool="a"), f.node("b-1", 8, pool="b"),
            f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=3),
            f.deployment("ml", "batch", f.pod_spec(gpus=4), replicas=1, kind="Job"),
            f.deployment("ml", "pinned", f.pod_spec(gpus=8, node_selector=pinned("b")))]


def ordered_fleet() -> list[dict[str, Any]]:
    """`wide` runs a pod of 8 GPUs on each small pool and may run nowhere else: switching
    one small pool first (the smallest-first order) strands it on either side; the big pool
    first (its pinned workload moves with it), then both small pools together, works."""
    spans = f.pod_spec(gpus=8)
    spans["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": POOL, "operator": "In", "values": ["small-1", "small-2"]}]}]}}}
    return [f.node("s-1", 8, pool="small-1"), f.node("s-2", 8, pool="small-2"),
            f.node("t-1", 8, pool="big"), f.node("t-2", 8, pool="big"),
            f.deployment("ml", "big-train", f.pod_spec(gpus=8, node_selector=pinned("big")),
                         replicas=2),
            f.deployment("ml", "wide", spans, replicas=2)]


def blocked_fleet() -> list[dict[str, Any]]:
    """One Deployment runs a pod of 8 GPUs on each of the two nodes: no side can hold both
    pods until both nodes switch together, which --max-wave-nodes 1 forbids."""
    return [f.node("p-1", 8, pool="p"), f.node("q-1", 8, pool="q"),
            f.deployment("ml", "wide", f.pod_spec(gpus=8), replicas=2)]


def test_safe_order_exists(tmp_path: Path) -> None:
    objects = safe_fleet()
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    assert report["complete"] and report["blocked"] is None
    assert [w["pools"] for w in report["waves"]] == [["b"], ["a"]]
    # batch first, then the Deployment with several replicas; the pinned singleton must move
    # with its pool
    assert [[m["name"] for m in w["workloads"]] for w in report["waves"]] == \
        [["pinned"], ["batch", "web"]]
    recheck(objects, report)


def test_a_specific_order_is_needed(tmp_path: Path) -> None:
    objects = ordered_fleet()
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    assert [w["pools"] for w in report["waves"]] == [["big"], ["small-1", "small-2"]]
    recheck(objects, report)
    # the independent check agrees that starting with a small pool alone (either) leaves a
    # workload without capacity, whether `wide` moves or not
    for first in (["s-1"], ["s-2"]):
        for moving in ([], [{"namespace": "ml", "kind": "Deployment", "name": "wide"}]):
            wrong = {"complete": False, "waves": [{"nodes": first, "workloads": moving}]}
            with pytest.raises(AssertionError):
                recheck(objects, wrong)


def test_no_order_without_more_capacity(tmp_path: Path) -> None:
    objects = blocked_fleet()
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err  # both pools in one wave
    assert [w["pools"] for w in report["waves"]] == [["p", "q"]]
    recheck(objects, report)
    code, report, err = cutover(tmp_path, objects, "--max-wave-nodes", "1")
    assert code == 1, err
    assert not report["complete"] and report["waves"] == []
    assert report["blocked"].startswith("cannot cut over without more capacity")
    assert "8 GPUs on 1 node for 16 GPUs of 1 workload (short by 8 GPUs)" in report["blocked"]
    side = report["attempt"]["device_plugin_side"]
    assert (side["gpus"], side["gpus_requested"], side["fits"]) == (8, 16, False)


def test_max_wave_nodes_splits_pools(tmp_path: Path) -> None:
    objects = [*(f.node(f"a-{i}", 8, pool="a") for i in range(4)),
               f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=4)]
    code, report, err = cutover(tmp_path, objects, "--max-wave-nodes", "2")
    assert code == 0, err
    assert [w["pools"] for w in report["waves"]] == [["a#1"], ["a#2"]]
    assert all(len(w["nodes"]) <= 2 for w in report["waves"])
    recheck(objects, report)


def test_affinity_and_taints_decide_where_workloads_may_run(tmp_path: Path) -> None:
    tainted = f.node("t-1", 8, pool="t")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}
    spec = f.pod_spec(gpus=8)
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": POOL, "operator": "In", "values": ["u"]}]}]}}}
    objects = [tainted, f.node("u-1", 8, pool="u"), f.deployment("ml", "aff", spec)]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    # pool t (the pod does not tolerate its taint) switches first, moving nothing; the
    # workload moves with pool u, the only one its affinity allows
    assert [(w["pools"], [m["name"] for m in w["workloads"]]) for w in report["waves"]] == \
        [(["t"], []), (["u"], ["aff"])]


def test_a_bare_pod_the_scheduler_bound_moves_with_its_pool(tmp_path: Path) -> None:
    # Its nodeName is cluster state, not a pin convert must refuse (issue 13 item 8).
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"),
               f.pod("ml", "bound", f.pod_spec(gpus=2, node_selector=pinned("b")),
                     node_name="b-1")]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    assert [(w["pools"], [m["name"] for m in w["workloads"]]) for w in report["waves"]] == \
        [(["a"], []), (["b"], ["bound"])]


def test_runbook_and_wave_manifests(tmp_path: Path) -> None:
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, safe_fleet(), "--output-dir", str(out))
    assert code == 0, err
    first = report["waves"][0]
    assert "kubectl label node b-1 nvidia.com/gpu.deploy.device-plugin=false --overwrite   " \
        "# the device plugin leaves (GPU Operator)" in first["steps"]
    assert first["steps"][-1].startswith("gpudra verify")
    # The claim templates first; the Deployment replaced (apply would keep its limit); the
    # drain before either stack changes; each node's slice waited for before the uncordon.
    commands = [s.split("   #")[0] for s in first["steps"]]
    assert commands[:3] == [f"kubectl apply -f {out}/wave-1/converted/claims/ --recursive",
                            "kubectl cordon b-1",
                            f"kubectl replace -f {out}/wave-1/converted/replace/ --recursive"]
    assert commands.index("kubectl drain b-1 --ignore-daemonsets --delete-emptydir-data") < \
        commands.index("kubectl label node b-1 gpudra.io/gpu-stack=dra "
                       "gpudra.io/cutover-wave=1 --overwrite") < \
        commands.index("kubectl wait --for=create resourceslices --field-selector "
                       "spec.nodeName=b-1 --timeout=10m") < commands.index("kubectl uncordon b-1")
    assert f"kubectl replace -f {out}/wave-1/original/replace/ --recursive" in first["rollback"]
    original = (out / "wave-1" / "original" / "replace" / "ml" / "deployment-pinned.yaml")
    assert "nvidia.com/gpu" in original.read_text()
    replaced = (out / "wave-1" / "converted" / "replace" / "ml" / "deployment-pinned.yaml")
    assert "resourceClaimTemplateName" in replaced.read_text()
    assert "nvidia.com/gpu:" not in replaced.read_text()
    assert "ResourceClaimTemplate" not in replaced.read_text()
    claims = (out / "wave-1" / "converted" / "claims" / "ml" / "deployment-pinned.yaml")
    assert "kind: ResourceClaimTemplate" in claims.read_text()
    assert "kind: Deployment" not in claims.read_text()
    runbook = (out / "runbook.md").read_text()
    assert "## Wave 1: b (1 node)" in runbook and "Rollback:" in runbook


def test_wave_manifests_are_converted_for_the_target_release(tmp_path: Path) -> None:
    out = tmp_path / "cutover"
    code, _, err = cutover(tmp_path, safe_fleet(), "--output-dir", str(out),
                           "--target-version", "1.32")
    assert code == 0, err
    text = "\n".join(p.read_text() for p in (out / "wave-1" / "converted").rglob("*.yaml"))
    assert "apiVersion: resource.k8s.io/v1beta1" in text  # 1.32 serves no resource.k8s.io/v1
    assert "resource.k8s.io/v1\n" not in text


def test_a_fleet_without_waves_still_gets_its_runbook(tmp_path: Path) -> None:
    out = tmp_path / "cutover"
    no_gpu_node = [{"apiVersion": "v1", "kind": "List", "items": []}]
    code, report, err = cutover(tmp_path, no_gpu_node, "--output-dir", str(out))
    assert code == 0, err
    assert report["waves"] == []
    assert (out / "runbook.md").read_text().startswith("#")


def test_live_cluster_and_table(tmp_path: Path) -> None:
    objects = ordered_fleet()
    live = []
    for obj in objects:
        live.append(obj)
        if obj["kind"] == "Deployment":
            live.append(f.replicaset(obj))
    with FakeCluster(f.state(*live), tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig)], capture_output=True, text=True,
                             timeout=120)
    assert run.returncode == 0, run.stderr
    read, blank, *lines = run.stdout.splitlines()  # first, the cluster read and when
    assert read.startswith('cluster: context "fake"') and blank == ""
    assert lines[0].split() == ["wave", "pools", "nodes", "moves", "device", "plugin", "after",
                                "DRA", "after"]
    assert lines[1].split()[:4] == ["1", "big", "2", "1"]
    assert lines[2].split()[:5] == ["2", "small-1,", "small-2", "2", "1"]
    assert "2 waves" in run.stdout


def test_a_quota_counts_claims_from_its_namespaces_first_wave_and_gpus_until_its_last(
        tmp_path: Path) -> None:
    """ml's `pinned` moves in the first wave, its Job and Deployment `web` in the last: the
    quota gains the DRA key in the first (its nvidia.com/gpu key stays: `web` and the Job still
    run on the device plugin) and loses the old key in the last; each rollback puts back what
    it had."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpus", "namespace": "ml"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "24"}}}
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, [*safe_fleet(), quota], "--output-dir", str(out))
    assert code == 0, err
    waves = report["waves"]
    assert len(waves) == 2 and {w["name"] for w in waves[0]["workloads"]} == {"pinned"}
    for wave in waves:
        where = out / f"wave-{wave['wave']}"
        assert wave["steps"][0] == (f"kubectl replace -f {where}/converted/quotas/ --recursive"
                                    "   # 1 quota of the namespaces moving count claims too "
                                    "(device-plugin keys go with a namespace's last workload)")
        assert f"kubectl replace -f {where}/original/quotas/ --recursive" in wave["rollback"]
    first = yaml.safe_load((out / "wave-1/converted/quotas/ml/resourcequota-gpus.yaml")
                           .read_text())["spec"]["hard"]
    last = yaml.safe_load((out / "wave-2/converted/quotas/ml/resourcequota-gpus.yaml")
                          .read_text())["spec"]["hard"]
    back = yaml.safe_load((out / "wave-2/original/quotas/ml/resourcequota-gpus.yaml")
                          .read_text())["spec"]["hard"]
    dra_key = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
    assert first["requests.nvidia.com/gpu"] == "24" and first[dra_key] == "24"
    assert "requests.nvidia.com/gpu" not in last and last[dra_key] == "24"
    assert back == first


def _live_fleet() -> list[dict[str, Any]]:
    live: list[dict[str, Any]] = []
    for obj in safe_fleet():
        live.append(obj)
        if obj["kind"] == "Deployment":
            live.append(f.replicaset(obj))
    return live


@pytest.mark.parametrize(("server", "args", "written"), [
    ("1.33.4", (), "resource.k8s.io/v1beta2"),            # the cluster's own release
    ("1.33.4", ("--target-version", "1.37"), "resource.k8s.io/v1"),  # unless told otherwise
    ("1.40.0", (), "resource.k8s.io/v1"),                 # newer: the newest gpudra knows
])
def test_a_live_cutover_writes_for_the_release_the_cluster_runs(
        tmp_path: Path, server: str, args: tuple[str, ...], written: str) -> None:
    out = tmp_path / "cutover"
    with FakeCluster(f.state(*_live_fleet(), version=server), tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig), "--output-dir", str(out), *args],
                             capture_output=True, text=True, timeout=120)
        export = subprocess.run([sys.executable, "-m", "gpudra", "convert", "--from-cluster",
                                 "--kubeconfig", str(cluster.kubeconfig), "--output-dir",
                                 str(tmp_path / "exported"), *args],
                                capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    claims = "\n".join(p.read_text() for p in (out / "wave-1").rglob("claims/**/*.yaml"))
    assert f"apiVersion: {written}\n" in claims
    assert export.returncode in (0, 1), export.stderr
    exported = "\n".join(p.read_text() for p in (tmp_path / "exported").rglob("*.yaml"))
    assert f"apiVersion: {written}\n" in exported


def test_a_live_cutover_of_a_release_gpudra_cannot_write_for_is_a_usage_error(
        tmp_path: Path) -> None:
    with FakeCluster(f.state(*_live_fleet(), version="1.31.2"), tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig)], capture_output=True, text=True,
                             timeout=120)
    assert run.returncode == 2
    assert "the cluster runs Kubernetes v1.31.2, older than the 1.32" in run.stderr


def test_the_dra_side_counts_physical_devices_not_time_slicing_replicas(tmp_path: Path) -> None:
    """A node of 2 GPUs shared 4 ways advertises 8 nvidia.com/gpu to the device plugin; the
    DRA driver publishes its 2 GPUs, so that is what the DRA side counts."""
    shared = f.node("ts-1", 8, pool="ts", labels={"nvidia.com/gpu.replicas": "4",
                                                  "nvidia.com/gpu.count": "2"})
    objects = [shared, f.node("a-1", 8, pool="a"),
               f.deployment("ml", "small", f.pod_spec(gpus=1, node_selector=pinned("ts")),
                            replicas=2)]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    sides = [(w["pools"], w["device_plugin_side"]["gpus"], w["dra_side"]["gpus"])
             for w in report["waves"]]
    # a first: the shared node keeps advertising its 8 replicas; then ts: 8 + 2 devices on DRA
    assert sides == [(["a"], 8, 8), (["ts"], 0, 10)]


def test_a_workload_a_tool_manages_is_named_with_its_manager(tmp_path: Path) -> None:
    """The runbook replaces live objects: Helm or Argo CD would put the device-plugin template
    back, so the runbook says who manages each moving workload (kubectl apply is no manager
    that reverts)."""
    objects = safe_fleet()
    pinned_deploy = next(o for o in objects if o["metadata"]["name"] == "pinned")
    pinned_deploy["metadata"]["annotations"] = {"meta.helm.sh/release-name": "trainer",
                                                "meta.helm.sh/release-namespace": "ml"}
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    managers = {w["name"]: w["managed_by"] for wave in report["waves"]
                for w in wave["workloads"]}
    assert managers == {"pinned": "Helm release trainer (namespace ml)", "web": None,
                        "batch": None}
    source = tmp_path / "fleet.yaml"
    markdown = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                               "-o", "markdown"], capture_output=True, text=True,
                              timeout=120).stdout
    assert "- ml/Deployment/pinned (1 pod, 8 GPUs; StatefulSet or singleton): **managed by " \
        "Helm release trainer (namespace ml)**: convert its source too" in markdown
    table = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source)],
                           capture_output=True, text=True, timeout=120).stdout
    wave = next(w["wave"] for w in report["waves"]
                if any(m["name"] == "pinned" for m in w["workloads"]))
    assert f"wave {wave}: ml/Deployment/pinned is managed by Helm release trainer (namespace " \
        "ml): convert its chart values or Git tree too" in table


def test_workloads_left_on_the_device_plugin_of_switched_nodes_move_in_a_wave_of_their_own(
        tmp_path: Path) -> None:
    """Every node publishes already (switched before, or by hand) but a Deployment still asks
    the device plugin: it is unconverted, not unplaceable; a wave that switches no node moves
    it."""
    objects = [f.node("d-1", 8, dra=True, pool="d"), f.gpu_slice("d-1", 8), f.device_class(),
               f.deployment("ml", "late", f.pod_spec(gpus=2), replicas=2)]
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, objects, "--output-dir", str(out))
    assert code == 0, err
    assert report["blocked"] is None
    [wave] = report["waves"]
    assert (wave["pools"], wave["nodes"], [w["name"] for w in wave["workloads"]]) == \
        ([], [], ["late"])
    commands = [s.split("   #")[0] for s in wave["steps"]]
    assert commands == [f"kubectl apply -f {out}/wave-1/converted/claims/ --recursive",
                        f"kubectl replace -f {out}/wave-1/converted/replace/ --recursive",
                        "kubectl label namespace ml gpudra.io/migrated=true --overwrite",
                        "kubectl rollout status deployment/late -n ml --timeout=10m",
                        f"gpudra verify --wave-of {out}/wave-1"]


def test_quotas_of_one_name_in_two_namespaces_are_both_written(tmp_path: Path) -> None:
    """Two namespaces each hold a quota called `gpus` and move in the same wave: each gets
    its own converted and original file (the second once collided with the first's
    converted copy and cutover refused to write the wave, exit 3)."""
    objects = [f.node("b-1", 8, pool="b"),
               f.deployment("ml", "pinned", f.pod_spec(gpus=4, node_selector=pinned("b"))),
               f.deployment("web", "pinned", f.pod_spec(gpus=4, node_selector=pinned("b")))]
    quotas = [{"apiVersion": "v1", "kind": "ResourceQuota",
               "metadata": {"name": "gpus", "namespace": namespace},
               "spec": {"hard": {"requests.nvidia.com/gpu": gpus}}}
              for namespace, gpus in (("ml", "4"), ("web", "6"))]
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, [*objects, *quotas], "--output-dir", str(out))
    assert code == 0, err
    assert len(report["waves"]) == 1
    dra_key = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
    for namespace, gpus in (("ml", "4"), ("web", "6")):
        converted = yaml.safe_load((out / f"wave-1/converted/quotas/{namespace}/"
                                    "resourcequota-gpus.yaml").read_text())
        original = yaml.safe_load((out / f"wave-1/original/quotas/{namespace}/"
                                   "resourcequota-gpus.yaml").read_text())
        assert converted["metadata"]["namespace"] == namespace
        assert converted["spec"]["hard"][dra_key] == gpus
        assert "requests.nvidia.com/gpu" not in converted["spec"]["hard"]
        assert original["spec"]["hard"] == {"requests.nvidia.com/gpu": gpus}


def test_a_from_export_plans_each_workload_once_at_its_top_owner(tmp_path: Path) -> None:
    """An export of a CronJob holds the Job it runs and that Job's pod: cutover moves the
    CronJob alone, as it does live (the Job and the pod are its children)."""
    cron = {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "ml", "uid": "uid-nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {
                "spec": {**f.pod_spec(gpus=1), "restartPolicy": "OnFailure"}}}}}}
    job = f.deployment("ml", "nightly-29000000", {**f.pod_spec(gpus=1),
                                                  "restartPolicy": "OnFailure"}, kind="Job")
    job["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "CronJob",
                                           "name": "nightly", "uid": "uid-nightly",
                                           "controller": True}]
    pod = f.pod("ml", "nightly-29000000-abcde", f.pod_spec(gpus=1),
                owner=("Job", "nightly-29000000"), node_name="b-1")
    objects = [*safe_fleet(), cron, job, pod]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    moved = sorted(f"{w['kind']}/{w['name']}" for wave in report["waves"]
                   for w in wave["workloads"])
    assert moved == ["CronJob/nightly", "Deployment/pinned", "Deployment/web", "Job/batch"]


def test_names_no_api_server_holds_never_reach_the_runbooks_shell_lines(tmp_path: Path) -> None:
    """From a file anything can be a name: a node called `--all` would make `kubectl label
    node --all ...` switch every node, a selector value with a comma would widen the wait,
    and a '²' in a count label is a digit to str.isdigit() only."""
    objects = safe_fleet()
    objects.append(f.node("--all", 8, pool="b"))
    objects.append(f.node("odd", 8, pool="a", labels={"nvidia.com/gpu.replicas": "²"}))
    daemonset = f.plugin_daemonset([])[0]
    daemonset["spec"]["selector"] = {"matchLabels": {"app": "x,name!=y"}}
    objects.append(daemonset)
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    lines = [s for wave in report["waves"] for s in wave["steps"] + wave["rollback"]]
    assert [s for s in lines if "kubectl label node" in s]  # the waves were written
    assert not [s for s in lines if "--all" in s or "x,name" in s]


JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "pretrain", "namespace": "ml"},
          "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
              "parallelism": 1, "completions": 1, "template": {"spec": {
                  **f.pod_spec(gpus=4), "restartPolicy": "Never"}}}}}]}}


@pytest.mark.parametrize(("kind", "cascade"), [("Job", ""), ("JobSet", " --cascade=foreground")])
def test_a_jobset_is_deleted_in_the_foreground_before_it_is_created_again(
        tmp_path: Path, kind: str, cascade: str) -> None:
    """A re-created JobSet is deleted in the foreground (its Jobs are named by index: created
    again too soon, they would meet the old ones), in the wave and in its rollback; a Job in
    the background, as kubectl does by default (its pods and claims have generated names)."""
    objects = safe_fleet()
    if kind == "JobSet":
        objects = [o for o in objects if o["kind"] != "Job"] + [JOBSET]
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, objects, "--output-dir", str(out))
    assert code == 0, err
    wave = next(w for w in report["waves"] if any(m["kind"] == kind for m in w["workloads"]))
    where = out / f"wave-{wave['wave']}"
    deletes = [s.split("   #")[0] for s in wave["steps"] + wave["rollback"]
               if s.startswith("kubectl delete")]
    assert deletes == [
        f"kubectl delete -f {where}/original/recreate/ --recursive --wait{cascade}",
        f"kubectl delete -f {where}/converted/recreate/ --recursive --wait{cascade}"]


@pytest.mark.parametrize("with_template", [False, True])
def test_a_claim_template_missing_from_the_input_is_named_not_taken_for_capacity(
        tmp_path: Path, with_template: bool) -> None:
    """A workload already on claims names a ResourceClaimTemplate: without it in the export
    its pods cannot be created, which cutover says (it is not short of capacity); with it the
    plan completes."""
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, dra=True, pool="b"),
               f.gpu_slice("b-1", 8), f.device_class(),
               f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=2),
               f.deployment("ml", "claimed", f.pod_spec(template_name="gpu-tpl"), replicas=2)]
    if with_template:
        objects.append(f.template("ml", "gpu-tpl"))
    code, report, err = cutover(tmp_path, objects)
    assert report is not None, err
    if with_template:
        assert (code, report["blocked"]) == (0, None)
    else:
        assert code == 1
        assert report["blocked"].startswith(
            "ml/Deployment/claimed names ResourceClaimTemplate gpu-tpl, which its namespace "
            "does not hold: their pods cannot be created, so they are not planned (from --from "
            "files, export resourceclaimtemplates too: docs/cutover.md")


@pytest.mark.parametrize("target", ["1.36", "1.37"])
def test_a_blocked_workload_of_several_gpu_templates_keeps_the_nodes_all_its_pods_need(
        tmp_path: Path, target: str) -> None:
    """A v1 MPIJob whose launcher holds a GPU: convert blocks it (the training operator treats
    the launcher as a GPU host only while it has the limit). Before 1.37 its launcher and both
    workers stay on the device plugin, so the pool they may run on is not switched, and
    cutover says why; on 1.37 it rides the bridge unchanged (its controller reads the limit:
    gpudra.cutover.rides), and both pools switch."""
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "template": {"spec": f.pod_spec(
            gpus=1, node_selector=pinned("b"))}}

    mpi = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob",
           "metadata": {"name": "allreduce", "namespace": "ml"},
           "spec": {"mpiReplicaSpecs": {"Launcher": replica(1), "Worker": replica(2)}}}
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), f.node("b-2", 8, pool="b"),
               f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=2), mpi]
    code, report, err = cutover(tmp_path, objects, "--target-version", target)
    if target == "1.37":
        assert (code, report["blocked"]) == (0, None), err
        assert sorted(p for w in report["waves"] for p in w["pools"]) == ["a", "b"]
        assert [r["name"] for r in report["bridge"]["rides"]] == ["allreduce"]
        return
    assert code == 1, err
    assert [w["pools"] for w in report["waves"]] == [["a"]]
    assert report["blocked"].startswith(
        "b (2 nodes) stays on the device plugin for 1 workload convert cannot move: "
        "ml/MPIJob/allreduce: training-operator's v1 MPIJob treats the launcher as a GPU host")
    # the launcher and the two workers were placed: 3 of the pool's 16 GPUs
    start = report["start"][0]
    assert (start["workloads"], start["gpus_requested"]) == (2, 4 + 3)


# --- issue 32: shared GPUs, the end of a migration, re-runs, OnDelete StatefulSets -----------

def _sharing_fleet() -> list[dict[str, Any]]:
    """The journey's second cluster as the device plugin shows it (tests/journey)."""
    from tests.controlplane.nvidia import DEVICE_CLASSES, device_plugin_capacity
    from tests.journey.fleet_sharing import SHARING
    from tests.journey.fleets import node

    objects: list[dict[str, Any]] = []
    for name, machine in SHARING.machines().items():
        obj = node(name, machine)
        for key in ("capacity", "allocatable"):
            obj["status"][key].update(device_plugin_capacity(machine))
        objects.append(obj)
    return objects + [dict(o) for o in SHARING.objects] + DEVICE_CLASSES


def test_a_mig_pool_moves_and_a_time_sliced_pool_says_why_it_cannot(tmp_path: Path) -> None:
    """Both sides are judged on the devices each stack offers: on the device plugin a MIG
    node's slices and a time-sliced node's replicas, on DRA the MIG devices and the physical
    GPUs. The MIG pool moves; the time-sliced pool's 7 pods cannot fit its 4 GPUs, and
    cutover says that sharing is why."""
    code, report, err = cutover(tmp_path, _sharing_fleet())
    assert code == 1, err
    assert [(w["pools"], sorted(m["name"] for m in w["workloads"]),
             w["device_plugin_side"]["gpus"], w["dra_side"]["gpus"])
            for w in report["waves"]] == [(["mig"], ["mid", "probe", "tiny", "whole"], 16, 8)]
    assert report["blocked"].startswith("cannot cut over without more capacity: switching the "
                                        "smallest pool left (ts, 2 nodes) fails")
    assert report["blocked"].endswith(
        "; ts: the device plugin time-slices these GPUs, 16 time-slicing replicas on 4 "
        "physical GPUs, and on DRA each claim gets a whole physical GPU: scale the workloads "
        "down for the switch, or let pods share a GPU through one ResourceClaim")


_LATE = f.deployment("ml", "late", f.pod_spec(gpus=2), replicas=2)
_LOST = f.deployment("ml", "lost", f.pod_spec(gpus=1, node_selector={"no-such": "node"}))


@pytest.mark.parametrize(("workloads", "said"), [
    # placeable ones move in a wave of their own; the one no node takes is unconverted
    ([_LATE, _LOST], "1 workload is not converted (it still asks for device-plugin GPUs) "
                     "while every GPU node is on DRA, and its node selector, affinity or "
                     "tolerations match none of those nodes: ml/Deployment/lost"),
    # too many for the switched nodes: no pool is left to switch, so none is named
    ([f.deployment("ml", "late", f.pod_spec(gpus=2), replicas=8)],
     "cannot move the 1 workload still on the device plugin (not converted) onto the nodes "
     "that publish already: the DRA side would have 8 GPUs on 1 node for 16 GPUs of 1 "
     "workload (short by 8 GPUs); first: 16 GPUs requested, 8 on the nodes"),
])
def test_with_every_node_on_dra_what_is_left_is_said_to_be_unconverted(
        tmp_path: Path, workloads: list[dict[str, Any]], said: str) -> None:
    objects = [f.node("d-1", 8, dra=True, pool="d"), f.gpu_slice("d-1", 8), f.device_class(),
               *workloads]
    code, report, err = cutover(tmp_path, objects)
    assert code == 1, err
    assert report["blocked"] == said


@pytest.mark.parametrize(("label", "on_dra", "first"), [
    ("1", True, 2),        # wave 1 done: the rest are waves 2, 3, ... as first planned
    ("7", True, 8),
    ("1", False, 1),       # labelled but not switched (a wave stopped half way): not done
    ("²", True, 1),        # not a number to int(); not gpudra's label
    ("9999999", True, 1),  # more waves than any cluster has nodes
    ("-1", True, 1),
])
def test_a_rerun_numbers_its_waves_after_those_its_nodes_say_are_done(
        tmp_path: Path, label: str, on_dra: bool, first: int) -> None:
    labels = {"gpudra.io/cutover-wave": label}
    switched = [f.node("b-1", 8, dra=True, pool="b", labels=labels), f.gpu_slice("b-1", 8)] \
        if on_dra else [f.node("b-1", 8, pool="b", labels=labels)]
    objects = [f.node("a-1", 8, pool="a"), f.node("c-1", 8, pool="c"), *switched,
               f.device_class(),
               f.deployment("ml", "web", f.pod_spec(gpus=2, node_selector=pinned("a"))),
               f.deployment("ml", "api", f.pod_spec(gpus=2, node_selector=pinned("c")))]
    out = tmp_path / "cutover"
    code, report, err = cutover(tmp_path, objects, "--output-dir", str(out))
    assert code == 0, err
    numbers = [w["wave"] for w in report["waves"]]
    assert numbers == list(range(first, first + len(numbers)))
    # every wave's folder, one that moves nothing too: its verify line reads it
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == \
        sorted(f"wave-{w['wave']}" for w in report["waves"])
    for wave in report["waves"]:  # each switch records its number; its rollback takes it off
        assert any(f"gpudra.io/cutover-wave={wave['wave']} --overwrite" in s
                   for s in wave["steps"])
        assert any("gpudra.io/gpu-stack- gpudra.io/cutover-wave- --overwrite" in s
                   for s in wave["rollback"])


def test_verify_runs_once_what_the_wave_changed_has_settled(tmp_path: Path) -> None:
    """A verify run at once finds the new pods not yet scheduled and the re-created ones'
    claims not yet created (the sharing journey's bare Pod: 'claim ... not created yet'): the
    runbook waits for each moving workload, forward and back, right before verify."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",  # its rollback is a change too
             "metadata": {"name": "gpus", "namespace": "ml"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "24"}}}
    objects = [*safe_fleet(), quota,
               f.pod("ml", "debug", f.pod_spec(gpus=1), node_name="b-1")]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    expected = {
        "web": "kubectl rollout status deployment/web -n ml --timeout=10m",
        "pinned": "kubectl rollout status deployment/pinned -n ml --timeout=10m",
        "batch": "kubectl wait --for=jsonpath='{.status.ready}'=1 job/batch -n ml "
                 "--timeout=10m || kubectl wait --for=condition=Complete job/batch -n ml "
                 "--timeout=1s",
        "debug": "kubectl wait --for=create pod/debug -n ml --timeout=10m && kubectl wait "
                 "--for=condition=Ready pod/debug -n ml --timeout=10m"}
    for wave in report["waves"]:
        for steps in (wave["steps"], wave["rollback"]):
            commands = [s.split("   #")[0] for s in steps]
            waits = {expected[w["name"]] for w in wave["workloads"]}
            assert commands[-1].startswith("gpudra verify")
            assert set(commands[-1 - len(waits):-1]) == waits, commands
            last_change = max(i for i, c in enumerate(commands) if c.startswith(
                ("kubectl create", "kubectl replace", "kubectl uncordon")))
            assert last_change < len(commands) - 1 - len(waits)


@pytest.mark.parametrize(("strategy", "wait"), [
    (None, "kubectl rollout status statefulset/db -n ml --timeout=10m"),
    ({"type": "RollingUpdate"}, "kubectl rollout status statefulset/db -n ml --timeout=10m"),
    # kubectl rollout status refuses any other strategy (exit 1 would stop the runbook)
    ({"type": "Recreate"}, "kubectl wait --for=jsonpath='{.status.updatedReplicas}'=2 "
     "statefulset/db -n ml --timeout=10m && kubectl wait --for=jsonpath="
     "'{.status.readyReplicas}'=2 statefulset/db -n ml --timeout=10m"),
])
def test_a_statefulset_is_waited_for_as_its_update_strategy_allows(
        tmp_path: Path, strategy: dict[str, str] | None, wait: str) -> None:
    db = f.deployment("ml", "db", f.pod_spec(gpus=1, node_selector=pinned("b")), replicas=2,
                      kind="StatefulSet")
    if strategy is not None:
        db["spec"]["updateStrategy"] = strategy
    code, report, err = cutover(tmp_path, [f.node("a-1", 8, pool="a"),
                                           f.node("b-1", 8, pool="b"), db])
    assert code == 0, err
    [moving] = [w for w in report["waves"] if w["workloads"]]
    for steps in (moving["steps"], moving["rollback"]):
        assert [s for s in steps if "statefulset/db" in s] == [wait]


def test_an_on_delete_statefulsets_pods_are_deleted_in_ordinal_order_after_the_replace(
        tmp_path: Path) -> None:
    """Its controller gives the new template only to pods that are deleted; the drain deletes
    those on the wave's nodes, the runbook the others (each pod of the old revision, lowest
    ordinal first, each Ready before the next). A RollingUpdate one rolls by itself."""
    rolling = f.deployment("ml", "rolling", f.pod_spec(gpus=1, node_selector=pinned("b")),
                           replicas=2, kind="StatefulSet")
    manual = f.deployment("ml", "manual", f.pod_spec(gpus=1, node_selector=pinned("b")),
                          replicas=2, kind="StatefulSet")
    manual["spec"]["updateStrategy"] = {"type": "OnDelete"}
    manual["spec"]["ordinals"] = {"start": 3}
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), rolling, manual]
    code, report, err = cutover(tmp_path, objects)
    assert code == 0, err
    for wave in report["waves"]:
        for steps in (wave["steps"], wave["rollback"]):
            commands = [s.split("   #")[0] for s in steps]
            deletes = [(i, c) for i, c in enumerate(commands) if "kubectl delete pod" in c]
            touched = [c.split("kubectl delete pod ")[1].split()[0] for _, c in deletes]
            if not any(w["name"] == "manual" for w in wave["workloads"]):
                assert touched == []
                continue
            replace = next(i for i, c in enumerate(commands) if c.startswith("kubectl replace")
                           and "/replace/" in c)
            assert touched == ["manual-3", "manual-4"]
            assert all(i > replace for i, _ in deletes)
            for index, command in deletes:
                pod = command.split("kubectl delete pod ")[1].split()[0]
                assert command.startswith(f'test "$(kubectl get pod {pod} -n ml ')
                assert commands[index + 1] == (
                    f"kubectl wait --for=create pod/{pod} -n ml --timeout=10m && kubectl wait "
                    f"--for=condition=Ready pod/{pod} -n ml --timeout=10m")
