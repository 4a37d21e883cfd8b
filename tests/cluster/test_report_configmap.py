"""`gpudra audit -o json=configmap:[NS/]NAME`: the report into a ConfigMap of the cluster
audited, created or replaced, gzipped in binaryData past 1 MiB, an error past that; against
the fake API server, which validates ConfigMap writes as kube-apiserver does."""

from __future__ import annotations

import base64
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.cluster import ClusterError, ClusterOptions
from gpudra.cluster.publish import (
    CONFIGMAP_MAX_BYTES,
    ConfigMapTarget,
    ReportTooLargeError,
    parse_target,
    payload,
    write_report,
)
from gpudra.errors import UsageError
from tests.fakeapi import FakeCluster

STATE = Path(__file__).parent / "states" / "midmigration.yaml"
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}


def _run(cluster: FakeCluster, *args: str) -> Any:
    result = CliRunner().invoke(app, ["audit", "--kubeconfig", str(cluster.kubeconfig),
                                      "--fail-on", "never", *args], env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def _configmap(cluster: FakeCluster, namespace: str, name: str) -> dict[str, Any]:
    entry = cluster.api.store.collection(cluster.api.registry.lookup("", "v1", "configmaps")) \
        .get(namespace, name)
    assert entry is not None, f"no ConfigMap {namespace}/{name}"
    return dict(entry.body)


def _writes(cluster: FakeCluster) -> list[tuple[str, str, int]]:
    return [(r.method, r.path, r.status) for r in cluster.requests if r.method != "GET"]


def test_created_then_replaced_and_the_same_json_as_stdout() -> None:
    with FakeCluster(STATE, tls=False) as cluster:
        first = _run(cluster, "-o", "json", "-o", "json=configmap:reports/gpudra-report")
        assert first.exit_code == 0, first.stderr
        assert "created ConfigMap reports/gpudra-report" in first.stderr
        stored = _configmap(cluster, "reports", "gpudra-report")
        assert json.loads(stored["data"]["report.json"]) == json.loads(first.stdout)
        meta = stored["metadata"]
        assert meta["annotations"]["gpudra.io/report-encoding"] == "json"
        assert meta["labels"]["app.kubernetes.io/name"] == "gpudra"
        created_rv = meta["resourceVersion"]
        cluster.clear_requests()
        again = _run(cluster, "-q", "-o", "json=configmap:reports/gpudra-report")
        assert again.exit_code == 0 and again.stdout == "" and again.stderr == ""
        assert _writes(cluster) == [
            ("PUT", "/api/v1/namespaces/reports/configmaps/gpudra-report", 200)]
        assert _configmap(cluster, "reports", "gpudra-report")["metadata"]["resourceVersion"] \
            != created_rv


def test_a_bare_name_goes_to_the_contexts_namespace_not_the_audits() -> None:
    with FakeCluster(STATE, tls=False) as cluster:  # its kubeconfig's namespace: default
        assert _run(cluster, "-q", "-n", "ml", "-o", "json=configmap:r").exit_code == 0
        assert _writes(cluster) == [("PUT", "/api/v1/namespaces/default/configmaps/r", 404),
                                    ("POST", "/api/v1/namespaces/default/configmaps", 201)]


def test_over_a_mebibyte_it_is_gzipped_into_binary_data() -> None:
    # 1.5 MiB of report-like JSON: over the limit as text, a fraction of it gzipped.
    text = json.dumps({"findings": [{"rule": "GPU101", "name": f"w{i}", "message": "x" * 80}
                                    for i in range(12000)]})
    assert len(text) > CONFIGMAP_MAX_BYTES
    with FakeCluster(STATE, tls=False) as cluster:
        written = write_report(ClusterOptions(kubeconfig=str(cluster.kubeconfig)),
                               ConfigMapTarget("gpudra", "big"), text)
        assert (written.encoding, written.created) == ("gzip", True)
        stored = _configmap(cluster, "gpudra", "big")
        assert "data" not in stored or not stored["data"]
        packed = base64.b64decode(stored["binaryData"]["report.json.gz"])
        assert gzip.decompress(packed).decode() == text
        assert written.stored_bytes == len(packed) < CONFIGMAP_MAX_BYTES
        # back under the limit: text again, and the gzipped key is gone (PUT replaces it all)
        write_report(ClusterOptions(kubeconfig=str(cluster.kubeconfig)),
                     ConfigMapTarget("gpudra", "big"), '{"findings": []}')
        stored = _configmap(cluster, "gpudra", "big")
        assert stored["data"] == {"report.json": '{"findings": []}'}
        assert not stored.get("binaryData")


def test_the_limit_is_the_api_servers_to_the_byte() -> None:
    at_limit = "é" * (CONFIGMAP_MAX_BYTES // 2)  # UTF-8 bytes count, not characters
    assert payload(at_limit).encoding == "json"
    assert payload(at_limit + "a").encoding == "gzip"
    incompressible = base64.b64encode(os.urandom(CONFIGMAP_MAX_BYTES)).decode()
    with pytest.raises(ReportTooLargeError, match=r"MiB gzipped\): more than the 1.00 MiB"):
        payload(incompressible)
    with FakeCluster(STATE, tls=False) as cluster:  # the fake refuses what the server would
        cluster_options = ClusterOptions(kubeconfig=str(cluster.kubeconfig))
        write_report(cluster_options, ConfigMapTarget("gpudra", "edge"), at_limit)
        assert _writes(cluster)[-1][2] == 201


def test_a_refused_write_is_exit_3_and_the_other_outputs_are_still_written(
        tmp_path: Path) -> None:
    state = {"token": "t0ken", "deny": [{"verb": "create", "resource": "configmaps"}],
             "objects": []}
    with FakeCluster(state, tls=False) as cluster:
        result = _run(cluster, "-o", f"json={tmp_path / 'r.json'}",
                      "-o", "json=configmap:gpudra/r")
    assert result.exit_code == 3
    assert "refused to write ConfigMap gpudra/r (403 Forbidden)" in result.stderr
    assert "gpudra rbac --report-configmap r" in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["findings"] == []


def test_an_unreachable_cluster_for_the_write_is_one_line() -> None:
    with FakeCluster(STATE, tls=False) as cluster:
        options = ClusterOptions(kubeconfig=str(cluster.kubeconfig), context="fake-unreachable")
        with pytest.raises(ClusterError, match=r"^cannot write ConfigMap gpudra/r: cannot reach the cluster"):
            write_report(options, ConfigMapTarget("gpudra", "r"), "{}")


@pytest.mark.parametrize("args, message", [
    (["-o", "sarif=configmap:r"], "a ConfigMap holds the JSON report only"),
    (["-o", "json=configmap:Not_A_Name"], "is no ConfigMap name"),
    (["-o", "json=configmap:bad_ns/r"], "is no namespace name"),
    (["--context", "fake", "--context", "fake-expired", "-o", "json=configmap:r"],
     "written to the one cluster audited"),
])
def test_usage_errors_come_before_the_audit(args: list[str], message: str) -> None:
    with FakeCluster(STATE, tls=False) as cluster:
        result = _run(cluster, *args)
        assert result.exit_code == 2 and message in result.stderr
        assert cluster.requests == []  # nothing was read


def test_file_audits_and_other_commands_take_no_configmap(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    result = CliRunner().invoke(app, ["audit", str(tmp_path), "-o", "json=configmap:r"])
    assert result.exit_code == 2 and "written to the one cluster audited" in result.stderr
    result = CliRunner().invoke(app, ["preflight", "--manifests", str(tmp_path),
                                      "-o", "json=configmap:r"])
    assert result.exit_code == 2 and "only gpudra audit writes ConfigMaps" in result.stderr


def test_target_names() -> None:
    assert parse_target("r") == ConfigMapTarget(None, "r")
    assert parse_target("ns/gpudra.report-1") == ConfigMapTarget("ns", "gpudra.report-1")
    for bad in ("", "ns/", "a/b/c", "UPPER", "x" * 254):
        with pytest.raises(UsageError):
            parse_target(bad)
