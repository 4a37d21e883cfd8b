"""`gpudra audit` with no path, end to end: the CLI, the real Kubernetes client and the fake
API server (tests/fakeapi) speaking the real protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.fakeapi import FakeCluster

STATE = Path(__file__).parent / "states" / "audit.yaml"


@pytest.fixture(scope="module")
def cluster() -> Any:
    with FakeCluster(STATE, tls=False) as fake:
        yield fake


def _audit(cluster: FakeCluster, *args: str) -> tuple[int, dict[str, Any], str]:
    cluster.clear_requests()
    result = CliRunner().invoke(app, ["audit", "--kubeconfig", str(cluster.kubeconfig),
                                      "-o", "json", *args],
                                env={"KUBECONFIG": "", "HOME": "/nonexistent"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


def _by(report: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == rule]


def test_workloads_are_reported_once_at_their_top_controller(cluster: FakeCluster) -> None:
    code, report, _ = _audit(cluster)
    gpu101 = {(f["kind"], f["namespace"], f["name"]): f for f in _by(report, "GPU101")}
    assert set(gpu101) == {("Deployment", "ml", "vllm"), ("Pod", "lab", "debug-gpu"),
                           ("CronJob", "ml", "nightly")}
    vllm = gpu101[("Deployment", "ml", "vllm")]
    assert vllm["source"] == "cluster" and vllm["file"] is None and vllm["line"] is None
    assert vllm["cluster"] == {"replicas": 2, "running_pods": 2, "nodes": ["gpu-1"],
                               "managed_by": "Helm release serving (namespace ml)",
                               "gpu_holders": [], "bridge_pods": 0,
                               "controller_gone": None}
    assert gpu101[("CronJob", "ml", "nightly")]["cluster"]["running_pods"] == 1
    assert gpu101[("CronJob", "ml", "nightly")]["cluster"]["nodes"] == ["gpu-2"]
    assert gpu101[("Pod", "lab", "debug-gpu")]["cluster"]["managed_by"] == "kubectl apply"


def test_cluster_only_findings(cluster: FakeCluster) -> None:
    _, report, _ = _audit(cluster)
    assert [f["name"] for f in _by(report, "GPU801")] == ["gpu-1"]
    assert [f["name"] for f in _by(report, "GPU802")] == ["nvidia-device-plugin-daemonset"]
    holders = {f["name"]: sorted(f["cluster"]["gpu_holders"]) for f in _by(report, "GPU803")}
    assert holders == {"gpu-1": ["lab/debug-gpu (2)", "ml/vllm-5d4f-a (1)", "ml/vllm-5d4f-b (1)"],
                       "gpu-2": ["ml/nightly-29000-x (4)"]}
    assert [f["name"] for f in _by(report, "GPU201")] == ["gpu-quota"]


def test_progress_summary_and_partial_read(cluster: FakeCluster) -> None:
    code, report, stderr = _audit(cluster)
    summary = report["summary"]
    assert summary["source"] == "cluster" and summary["objects_read"] > 15
    assert summary["files_scanned"] == 0
    assert (summary["gpu_workloads"], summary["on_dra"], summary["on_device_plugin"]) == (4, 1, 3)
    by_ns = {n["namespace"]: n for n in summary["namespaces"]}
    assert by_ns["search"]["percent_migrated"] == 100.0 and by_ns["ml"]["percent_migrated"] == 0
    # 403 on prometheusrules: reported with verb, resource and group; the rest was read
    [error] = report["errors"]
    assert error["object"] == "prometheusrules.monitoring.coreos.com (cluster-wide)"
    assert "cannot list" in error["message"] and "403" in error["message"]
    assert code == 3, "a partial audit must not pass"
    assert "prometheusrules.monitoring.coreos.com" in stderr


def test_only_get_requests_paged_at_500(cluster: FakeCluster) -> None:
    _audit(cluster)
    assert {r.method for r in cluster.requests} == {"GET"}
    lists = [r for r in cluster.requests if r.path == "/api/v1/pods"]
    assert lists and all(r.query.get("limit") == "500" for r in lists)


def test_namespace_scope(cluster: FakeCluster) -> None:
    _, report, _ = _audit(cluster, "-n", "search")
    assert {f["namespace"] for f in report["findings"] if f["kind"] not in
            ("Node", "DaemonSet")} <= {"search", None}
    assert report["summary"]["gpu_workloads"] == 1


@pytest.mark.parametrize(("context", "words"), [
    ("fake-unreachable", "cannot reach the cluster"),
    ("fake-expired", "rejected the credentials"),
    ("no-such-context", "no-such-context"),
])
def test_a_cluster_that_cannot_be_read_is_one_line_and_exit_3(cluster: FakeCluster, context: str,
                                                              words: str) -> None:
    result = CliRunner().invoke(app, ["audit", "--kubeconfig", str(cluster.kubeconfig),
                                      "--context", context],
                                env={"KUBECONFIG": "", "HOME": "/nonexistent"})
    assert result.exit_code == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpudra: error:") and words in lines[0], lines
    assert "Traceback" not in result.output


def test_paths_and_cluster_flags_do_not_mix(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["audit", str(tmp_path), "--context", "x"])
    assert result.exit_code == 2 and "cluster audits" in result.stderr


def test_convert_from_cluster_exports_clean_converted_manifests(cluster: FakeCluster,
                                                                tmp_path: Path) -> None:
    import yaml

    out = tmp_path / "exported"
    cluster.clear_requests()
    result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                      str(cluster.kubeconfig), "--output-dir", str(out),
                                      "-o", "json"],
                                env={"KUBECONFIG": "", "HOME": "/nonexistent"})
    # Export reads only workloads, claims and quotas: the 403 on prometheusrules does not
    # concern it, and everything converts.
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {(w["kind"], w["name"], w["strategy"]) for w in report["workloads"]} >= {
        ("Deployment", "vllm", "rewrite"), ("CronJob", "nightly", "rewrite"),
        ("ResourceQuota", "gpu-quota", "quota")}
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert files == ["lab/pod-debug-gpu.yaml", "ml/cronjob-nightly.yaml",
                     "ml/deployment-vllm.yaml",
                     "ml/resourcequota-gpu-quota.yaml", "search/deployment-embed.yaml",
                     "search/resourceclaimtemplate.resource.k8s.io-embed-gpu.yaml"]
    assert not any(r.path.endswith("/prometheusrules") for r in cluster.requests)
    docs = list(yaml.safe_load_all((out / "ml/deployment-vllm.yaml").read_text()))
    deployment, template = docs
    assert "status" not in deployment and "uid" not in deployment["metadata"]
    assert deployment["metadata"]["annotations"] == {"meta.helm.sh/release-name": "serving",
                                                     "meta.helm.sh/release-namespace": "ml"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "vllm-gpu"}]
    assert template["kind"] == "ResourceClaimTemplate"
    assert {r.method for r in cluster.requests} == {"GET"}


def test_convert_from_cluster_with_nothing_to_export(tmp_path: Path) -> None:
    state = {"version": "1.34.2", "token": "t", "objects": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"},
         "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
             "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c",
                                                                           "image": "x"}]}}}}]}
    with FakeCluster(state, tls=False) as fake:
        result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                          str(fake.kubeconfig), "--output-dir",
                                          str(tmp_path / "out")], env={"HOME": "/nonexistent"})
    assert result.exit_code == 0 and "no GPU workloads" in result.stderr


def test_convert_from_cluster_needs_an_empty_output_dir(cluster: FakeCluster,
                                                        tmp_path: Path) -> None:
    (tmp_path / "keep.yaml").write_text("a: 1\n")
    result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                      str(cluster.kubeconfig), "--output-dir", str(tmp_path)])
    assert result.exit_code == 2 and "new or empty directory" in result.stderr
    assert (tmp_path / "keep.yaml").read_text() == "a: 1\n"
