"""`gpudra plan` end to end: trees (converted, or converted in memory), inventories from files,
from the tree and from a cluster, the JSON contract of the issue, formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.dra.cel import engine_available
from tests.fakeapi import FakeCluster

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")
FIXTURES = Path(__file__).parent / "fixtures"
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}
UNCONVERTED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: ml}
spec:
  replicas: 2
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
      - name: server
        image: vllm
        resources: {limits: {nvidia.com/gpu: 4}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: huge, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: t
        resources: {limits: {nvidia.com/gpu: 64}}
"""


def _plan(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["plan", *args], env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "apps.yaml").write_text(UNCONVERTED)
    return tmp_path


def test_unconverted_tree_is_converted_in_memory_and_planned(tree: Path) -> None:
    code, out, _ = _plan(str(tree), "--inventory", str(FIXTURES / "inventory-a100-h100.yaml"),
                         "-o", "json")
    report = json.loads(out)
    workloads = {w["name"]: w for w in report["workloads"]}
    for w in workloads.values():  # the contract
        assert {"kind", "name", "namespace", "satisfiable", "reason", "requests"} <= set(w)
        for r in w["requests"]:
            assert {"name", "count", "matching_devices", "nodes"} <= set(r)
    assert workloads["big"]["converted"] and workloads["big"]["satisfiable"]
    [request] = workloads["big"]["requests"]
    assert request["count"] == 4 and set(request["nodes"]) == {"node-h100"}
    assert not workloads["huge"]["satisfiable"] and workloads["huge"]["reason"]
    assert "devices" in report and code == 1
    assert not (tree / "apps.yaml").read_text() != UNCONVERTED, "plan never writes"


def test_inventory_predicted_from_nodes(tree: Path) -> None:
    code, out, _ = _plan(str(tree), "--inventory", str(FIXTURES / "nodes-gfd.yaml"), "-o", "json")
    report = json.loads(out)
    assert report["summary"]["inventory"] == "synthesised"
    assert report["devices"]["total"] > 0 and report["workloads"] and code in (0, 1)


@pytest.mark.parametrize("fmt", ["table", "markdown", "junit", "github"])
def test_formats(tree: Path, fmt: str) -> None:
    code, out, _ = _plan(str(tree), "--inventory", str(FIXTURES / "inventory-a100-h100.yaml"),
                         "-o", fmt)
    assert "huge" in out and code == 1


def test_no_inventory_and_no_cluster_is_one_line_exit_3(tree: Path) -> None:
    code, _, err = _plan(str(tree), "--kubeconfig", "/nonexistent/kubeconfig")
    assert code == 3 and len(err.strip().splitlines()) == 1


def _cluster_state() -> dict[str, Any]:
    docs = [d for name in ("inventory-a100-h100.yaml",)
            for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]
    return {"version": "1.34.2", "token": "t", "objects": docs + list(yaml.safe_load_all(
        UNCONVERTED))}


def test_cluster_mode_reads_workloads_and_devices_from_the_cluster() -> None:
    with FakeCluster(_cluster_state(), tls=False) as cluster:
        code, out, err = _plan("--kubeconfig", str(cluster.kubeconfig), "-o", "json")
        assert {r.method for r in cluster.requests} == {"GET"}
    report = json.loads(out)
    names = {w["name"]: w["satisfiable"] for w in report["workloads"]}
    assert names == {"big": True, "huge": False}, (names, err)
    assert report["summary"]["inventory"] == "cluster" and code == 1


def test_cluster_mode_without_connection_flags_uses_the_default_kubeconfig() -> None:
    # No --kubeconfig/--context/-n/--request-timeout: $KUBECONFIG, every namespace.
    with FakeCluster(_cluster_state(), tls=False) as cluster:
        result = CliRunner().invoke(app, ["plan", "-o", "json"],
                                    env={**ENV, "KUBECONFIG": str(cluster.kubeconfig)})
    report = json.loads(result.stdout)
    assert {w["name"] for w in report["workloads"]} == {"big", "huge"}
    assert report["summary"]["inventory"] == "cluster" and result.exit_code == 1


def test_bad_request_timeout_is_a_usage_error_even_with_an_inventory(tree: Path) -> None:
    code, _, err = _plan(str(tree), "--inventory", str(FIXTURES / "nodes-gfd.yaml"),
                         "--request-timeout", "bogus")
    assert code == 2 and "invalid duration 'bogus'" in err


def test_tree_with_devices_from_the_cluster(tree: Path) -> None:
    state = _cluster_state()
    state["objects"] = [o for o in state["objects"] if o["kind"] in ("ResourceSlice", "Node")]
    with FakeCluster(state, tls=False) as cluster:
        code, out, _ = _plan(str(tree), "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    report = json.loads(out)
    assert {w["name"] for w in report["workloads"]} == {"big", "huge"} and code == 1


def test_bad_consumable_shares_is_a_usage_error(tree: Path) -> None:
    code, _, err = _plan(str(tree), "--inventory", str(FIXTURES / "nodes-gfd.yaml"),
                         "--consumable-shares", "bogus")
    assert code == 2 and "consumable-shares" in err


def test_names_of_existing_templates_are_not_reused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: train, namespace: ml}\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    (tmp_path / "b.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: train-gpu, namespace: ml}\nspec:\n  spec:\n    devices:\n"
        "      requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 64}}]\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other, namespace: ml}\n"
        "spec:\n  template:\n    spec:\n      resourceClaims: [{name: gpu, "
        "resourceClaimTemplateName: train-gpu}]\n      containers:\n      - name: c\n"
        "        image: x\n        resources: {claims: [{name: gpu}]}\n")
    code, out, _ = _plan(str(tmp_path), "--inventory",
                         str(FIXTURES / "inventory-a100-h100.yaml"), "-o", "json")
    verdicts = {w["name"]: w["satisfiable"] for w in json.loads(out)["workloads"]}
    assert verdicts == {"train": True, "other": False}  # 64 GPUs nowhere; train's own 1 fits


BOUND_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: bound, namespace: ml}
spec:
  nodeName: node-h100
  containers:
  - name: main
    image: cuda
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_a_pod_the_scheduler_bound_is_planned_as_created_anew(tmp_path: Path) -> None:
    # Read from a cluster, spec.nodeName is where the scheduler put the pod: convert
    # --from-cluster drops it, and so does plan. Written in a file, it bypasses the scheduler
    # and convert blocks it (nothing would allocate its claims), so plan cannot prove it.
    state = _cluster_state()
    state["objects"] = [o for o in state["objects"] if o["kind"] in ("ResourceSlice", "Node")]
    state["objects"].append(yaml.safe_load(BOUND_POD))
    with FakeCluster(state, tls=False) as cluster:
        code, out, err = _plan("--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    report = json.loads(out)
    assert [(w["name"], w["converted"], w["satisfiable"]) for w in report["workloads"]] \
        == [("bound", True, True)], err
    assert not report["unconverted"] and code == 0
    (tmp_path / "pod.yaml").write_text(BOUND_POD)
    code, out, _ = _plan(str(tmp_path), "--inventory",
                         str(FIXTURES / "inventory-a100-h100.yaml"), "-o", "json")
    report = json.loads(out)
    assert not report["workloads"] and report["unconverted"] and code == 1


def test_nodes_per_request_are_a_sample_unless_full_matches(tmp_path: Path) -> None:
    """The report grows with the workloads, not with workloads x nodes: each request names
    the first 20 matching nodes and counts them all; --full-matches names every one, as a
    plan of a single workload does (a firstAvailable request's union the same way)."""
    slices = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": f"n{n:02d}"},
               "spec": {"driver": "gpu.nvidia.com", "nodeName": f"n{n:02d}",
                        "pool": {"name": f"n{n:02d}", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}}
              for n in range(30)]
    (tmp_path / "slices.yaml").write_text(yaml.safe_dump_all(slices))
    either = [{"name": "a", "deviceClassName": "gpu.nvidia.com", "count": 2},
              {"name": "b", "deviceClassName": "gpu.nvidia.com"}]
    workloads = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one", "namespace": "ml"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": either}]}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "app", "namespace": "ml"}, "spec": {"replicas": 1, "template": {"spec": {
             "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}],
             "containers": [{"name": "c"}]}}}}]
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "app.yaml").write_text(yaml.safe_dump_all(workloads))
    other = json.loads(json.dumps(workloads[1]))
    other["metadata"]["name"] = "other"
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "apps.yaml").write_text(yaml.safe_dump_all([*workloads, other]))
    names = [f"n{n:02d}" for n in range(30)]
    for tree, extra, listed in (("two", (), names[:20]), ("two", ("--full-matches",), names),
                                ("one", (), names)):
        code, out, _ = _plan(str(tmp_path / tree), "--inventory", str(tmp_path / "slices.yaml"),
                             "-o", "json", *extra)
        request = json.loads(out)["workloads"][0]["requests"][0]
        assert code == 0 and request["matching_devices"] == 30
        for shown in (request, *request["subrequests"]):
            assert shown["nodes"] == listed and shown["matching_nodes"] == 30


def test_a_tree_read_by_workers_while_the_inventory_is_read_plans_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import functools
    import multiprocessing

    import gpudra.plan.run as plan_run

    for i in range(40):
        (tmp_path / f"app-{i:02d}.yaml").write_text(UNCONVERTED.replace("name: big",
                                                                        f"name: big-{i}"))
    inventory = str(FIXTURES / "inventory-a100-h100.yaml")
    plain = _plan(str(tmp_path), "--inventory", inventory, "-o", "json")
    monkeypatch.setattr(plan_run, "FileSource",
                        functools.partial(plan_run.FileSource, pool_from=10))
    pooled = _plan(str(tmp_path), "--inventory", inventory, "-o", "json")
    strip = [json.loads(out) for _, out, _ in (plain, pooled)]
    for data in strip:
        data["summary"].pop("seconds")
    assert strip[0] == strip[1] and strip[0]["summary"]["workloads"] == 80
    assert plain[0] == pooled[0] and plain[2] == pooled[2]
    # An inventory that cannot be used ends the tree's workers with the usage error.
    empty = tmp_path / "no-inventory"
    empty.mkdir()
    before = set(multiprocessing.active_children())
    code, _, err = _plan(str(tmp_path), "--inventory", str(empty))
    assert code == 2 and "no YAML or JSON files found" in err
    assert not set(multiprocessing.active_children()) - before
