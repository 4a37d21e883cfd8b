"""The report ConfigMap against the real API server (RBAC on): `gpudra rbac --report-configmap`
allows exactly the write `audit -o json=configmap:NAME` makes, the 1 MiB limit is the server's
to the byte, and deploy/'s manifests pass server-side dry-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudra.cluster import ClusterOptions
from gpudra.cluster.publish import CONFIGMAP_MAX_BYTES, ConfigMapTarget, write_report
from tests.controlplane.cluster import APIError, ControlPlane, Credentials
from tests.controlplane.test_live import gpudra

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


@pytest.fixture(scope="module")
def writer(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig for ServiceAccount gpudra/gpudra-writer, bound by what `gpudra rbac
    --report-configmap gpudra-report` prints; its context's namespace is gpudra."""
    home = tmp_path_factory.mktemp("writer")
    rbac = gpudra("rbac", "--name", "gpudra-writer", "--report-configmap", "gpudra-report",
                  cwd=home)
    assert rbac.returncode == 0, rbac.stderr
    applied = control_plane.kubectl("apply", "-f", "-", stdin=rbac.stdout)
    assert applied.returncode == 0, applied.stderr
    token = control_plane.service_account_token("gpudra", "gpudra-writer")
    return control_plane.write_kubeconfig(home / "writer.kubeconfig", Credentials(token=token),
                                          namespace="gpudra")


def test_the_role_allows_the_report_write_and_no_other(control_plane: ControlPlane,
                                                       writer: Path) -> None:
    path = "/api/v1/namespaces/gpudra/configmaps/gpudra-report"
    for attempt in ("created", "replaced"):
        result = gpudra("audit", "--kubeconfig", str(writer), "--fail-on", "never",
                        "-o", "json", "-o", "json=configmap:gpudra-report", cwd=writer.parent)
        assert result.returncode == 0, result.stderr
        assert f"{attempt} ConfigMap gpudra/gpudra-report" in result.stderr
        stored = control_plane.admin.get(path)
        assert json.loads(stored["data"]["report.json"]) == json.loads(result.stdout)
    # update is granted by name only: another ConfigMap that exists cannot be overwritten
    control_plane.admin.create("/api/v1/namespaces/gpudra/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "someone-elses"},
        "data": {"keep": "me"}})
    result = gpudra("audit", "--kubeconfig", str(writer), "-q", "--fail-on", "never",
                    "-o", "json=configmap:someone-elses", cwd=writer.parent)
    assert result.returncode == 3
    assert "refused to write ConfigMap gpudra/someone-elses (403 Forbidden)" in result.stderr
    assert control_plane.admin.get(
        "/api/v1/namespaces/gpudra/configmaps/someone-elses")["data"] == {"keep": "me"}


def test_the_limit_is_the_servers_and_gzip_goes_past_it(control_plane: ControlPlane,
                                                        writer: Path) -> None:
    create = "/api/v1/namespaces/gpudra/configmaps"

    def configmap(name: str, value: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                "data": {"a": value[:10], "b": value[10:]}}  # keys do not count

    at_limit = "x" * CONFIGMAP_MAX_BYTES
    control_plane.admin.create(create, configmap("at-limit", at_limit), dry_run=True)
    with pytest.raises(APIError) as refused:
        control_plane.admin.create(create, configmap("over", at_limit + "x"), dry_run=True)
    assert refused.value.code == 422
    # UTF-8 bytes count, not characters: 512 Ki two-byte characters are exactly the limit
    # (sent unescaped: \u00e9 escapes would pass the server's 3 MiB request limit first)
    options = ClusterOptions(kubeconfig=str(writer))
    two_byte = "é" * (CONFIGMAP_MAX_BYTES // 2)
    report = ConfigMapTarget(None, "gpudra-report")  # the one name the role may update
    assert write_report(options, report, two_byte).encoding == "json"
    path = "/api/v1/namespaces/gpudra/configmaps/gpudra-report"
    assert control_plane.admin.get(path)["data"] == {"report.json": two_byte}
    text = json.dumps([{"rule": "GPU101", "name": f"w{i}", "message": "x" * 80}
                       for i in range(12000)])
    written = write_report(options, report, text)
    assert written.encoding == "gzip" and written.namespace == "gpudra"
    assert set(control_plane.admin.get(path)["binaryData"]) == {"report.json.gz"}


def test_deploy_manifests_pass_server_side_dry_run(control_plane: ControlPlane,
                                                   writer: Path) -> None:
    result = control_plane.kubectl("apply", "--dry-run=server", "-f", str(DEPLOY / "rbac.yaml"),
                                   "-f", str(DEPLOY / "cronjob.yaml"))
    assert result.returncode == 0, result.stderr
    assert "cronjob.batch/gpudra-audit created (server dry run)" in result.stdout
