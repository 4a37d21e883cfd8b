"""Finding the cluster: kubeconfig files (kubectl's rules), contexts, exec plugins, in-cluster."""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cluster import (
    ClusterOptions,
    ContextNotFoundError,
    ExecPluginError,
    KubeconfigError,
    connect,
)
from tests.cluster.conftest import SMALL_PODS, TOKEN, needs_tls, open_cluster, state
from tests.fakeapi import FakeCluster
from tests.fakeapi.tls import tls_available

EXEC_API = "client.authentication.k8s.io/v1"
BAD_KUBECONFIGS = yaml.safe_load((Path(__file__).parent / "cases" / "bad_kubeconfigs.yaml")
                                 .read_text())


def kubeconfig(path: Path, *contexts: tuple[str, str, dict[str, Any]],
               current: str | None = None, namespace: str | None = None,
               cluster_extra: dict[str, Any] | None = None) -> Path:
    """A kubeconfig with one cluster/user/context per (name, server, user) entry."""
    document: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": f"{name}-cluster", "cluster": {"server": server,
                                                             **(cluster_extra or {})}}
                     for name, server, _ in contexts],
        "users": [{"name": f"{name}-user", "user": user} for name, _, user in contexts],
        "contexts": [{"name": name, "context": {"cluster": f"{name}-cluster",
                                                "user": f"{name}-user",
                                                **({"namespace": namespace} if namespace
                                                   else {})}}
                     for name, _, _ in contexts]}
    if current:
        document["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def two_fakes() -> Iterator[tuple[FakeCluster, FakeCluster]]:
    with FakeCluster(state(*SMALL_PODS[:2]), tls=False) as first, \
            FakeCluster(state(*SMALL_PODS[2:]), tls=False) as second:
        yield first, second


def pod_count(cluster: Any) -> int:
    return sum(len(page) for page in cluster.list(cluster.resource("", "pods"), namespace=None))


# --- KUBECONFIG and --kubeconfig ------------------------------------------------------------

def test_kubeconfig_with_two_files_merges_as_kubectl(two_fakes: tuple[FakeCluster, FakeCluster],
                                                     tmp_path: Path) -> None:
    first, second = two_fakes
    a = kubeconfig(tmp_path / "a" / "config", ("one", first.url, {"token": TOKEN}),
                   current="one")
    b = kubeconfig(tmp_path / "b" / "config", ("two", second.url, {"token": TOKEN}),
                   current="two")
    empty = tmp_path / "empty"
    empty.write_text("")
    listed = os.pathsep.join([str(a), str(tmp_path / "missing"), str(empty), str(b)])
    environ = {"KUBECONFIG": listed}
    # The first file's current-context wins (the official client's merger would take the last).
    with connect(ClusterOptions(), environ=environ) as cluster:
        assert (cluster.target.context, cluster.target.server) == ("one", first.url)
        assert cluster.target.kubeconfig == (str(a), str(b))  # missing and empty skipped
        assert pod_count(cluster) == 2
    # A context of the second file, with its cluster and user.
    with connect(ClusterOptions(context="two"), environ=environ) as cluster:
        assert (cluster.target.context, cluster.target.server) == ("two", second.url)
        assert pod_count(cluster) == 4
    assert second.requests and first.requests


def test_first_file_wins_for_a_name_defined_twice(two_fakes: tuple[FakeCluster, FakeCluster],
                                                  tmp_path: Path) -> None:
    first, _ = two_fakes
    good = kubeconfig(tmp_path / "good", ("one", first.url, {"token": TOKEN}), current="one")
    bad = kubeconfig(tmp_path / "bad", ("one", first.url, {"token": "wrong"}), current="one")
    environ = {"KUBECONFIG": os.pathsep.join([str(good), str(bad)])}
    with connect(ClusterOptions(), environ=environ) as cluster:
        assert pod_count(cluster) == 2


def test_explicit_kubeconfig_ignores_the_environment(two_fakes: tuple[FakeCluster, FakeCluster],
                                                     tmp_path: Path) -> None:
    first, second = two_fakes
    a = kubeconfig(tmp_path / "a", ("one", first.url, {"token": TOKEN}), current="one")
    b = kubeconfig(tmp_path / "b", ("two", second.url, {"token": TOKEN}), current="two")
    with connect(ClusterOptions(kubeconfig=str(b)), environ={"KUBECONFIG": str(a)}) as cluster:
        assert cluster.target.context == "two" and cluster.target.kubeconfig == (str(b),)


def test_home_kubeconfig_by_default(fake: FakeCluster, tmp_path: Path) -> None:
    target = tmp_path / ".kube" / "config"
    target.parent.mkdir()
    shutil.copy(fake.kubeconfig, target)
    with connect(ClusterOptions(), environ={"HOME": str(tmp_path)}) as cluster:
        assert cluster.target.kubeconfig == (str(target),) and pod_count(cluster) == 6


def test_namespace_comes_from_the_context_unless_given(fake: FakeCluster,
                                                       tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", ("one", fake.url, {"token": TOKEN}), current="one",
                      namespace="c")
    with connect(ClusterOptions(kubeconfig=str(path)), environ={}) as cluster:
        assert (cluster.target.namespace, cluster.target.list_namespace) == ("c", "c")
        assert len(list(cluster.list(cluster.resource("", "pods")).items())) == 3
    with connect(ClusterOptions(kubeconfig=str(path), namespace="a"), environ={}) as cluster:
        assert cluster.target.namespace == "a"
    with connect(ClusterOptions(kubeconfig=str(path), all_namespaces=True),
                 environ={}) as cluster:
        assert cluster.target.list_namespace is None


@pytest.mark.parametrize("case", BAD_KUBECONFIGS, ids=lambda case: case["id"])
def test_bad_kubeconfig(tmp_path: Path, case: dict[str, str]) -> None:
    path = tmp_path / "config"
    path.write_text(case["content"])
    with pytest.raises(KubeconfigError) as raised:
        connect(ClusterOptions(kubeconfig=str(path)), environ={})
    assert case["message"].format(path=path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_missing_explicit_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=f"cannot read kubeconfig {tmp_path}/nope: no "
                                              f"such file$"):
        connect(ClusterOptions(kubeconfig=str(tmp_path / "nope")), environ={})


def test_missing_context(fake: FakeCluster) -> None:
    with pytest.raises(ContextNotFoundError) as raised:
        open_cluster(fake, context="prod")
    assert str(raised.value) == (
        f'context "prod" not found in --kubeconfig {fake.kubeconfig} (contexts: fake, '
        f"fake-expired, fake-unreachable)")
    assert isinstance(raised.value, KubeconfigError)


def test_nothing_to_connect_to(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError) as raised:
        connect(ClusterOptions(), environ={"HOME": str(tmp_path)})
    assert str(raised.value) == (
        f"no cluster to connect to: KUBECONFIG is not set and {tmp_path}/.kube/config does not "
        f"exist, and gpudra is not running in a pod (pass --kubeconfig, or set KUBECONFIG)")
    with pytest.raises(KubeconfigError, match="none of the files in KUBECONFIG=/x:/y exists"):
        connect(ClusterOptions(), environ={"KUBECONFIG": "/x:/y"})


def test_kubeconfig_is_never_written(fake: FakeCluster) -> None:
    before = (fake.kubeconfig.read_bytes(), fake.kubeconfig.stat().st_mtime_ns)
    with open_cluster(fake) as cluster:
        pod_count(cluster)
    assert (fake.kubeconfig.read_bytes(), fake.kubeconfig.stat().st_mtime_ns) == before


# --- exec credential plugins ----------------------------------------------------------------

def exec_user(tmp_path: Path, script: str) -> dict[str, Any]:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(script)
    return {"exec": {"apiVersion": EXEC_API, "command": sys.executable,
                     "args": [str(plugin)], "interactiveMode": "Never"}}


def credential(token: str, expires: str | None = None) -> str:
    status: dict[str, Any] = {"token": token}
    if expires:
        status["expirationTimestamp"] = expires
    return json.dumps({"apiVersion": EXEC_API, "kind": "ExecCredential", "status": status})


def test_exec_plugin_token_is_used(fake: FakeCluster, tmp_path: Path) -> None:
    user = exec_user(tmp_path, f"import json, os, sys\n"
                               f"info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
                               f"assert info['kind'] == 'ExecCredential'\n"
                               f"print({credential(TOKEN)!r})\n")
    path = kubeconfig(tmp_path / "config", ("eks", fake.url, user), current="eks")
    before = path.read_bytes()
    with connect(ClusterOptions(kubeconfig=str(path)), environ={}) as cluster:
        assert pod_count(cluster) == 6
    assert path.read_bytes() == before


@pytest.mark.parametrize("script,message", [
    (("import sys\nsys.stderr.write('error: SSO session expired, run aws sso login\\n')\n"
      "sys.exit(1)\n"),
     "process returned 1. error: SSO session expired, run aws sso login"),
    ("print('not json')\n", "failed to decode process output"),
    (f"print({json.dumps({'apiVersion': EXEC_API, 'kind': 'ExecCredential', 'status': {}})!r})\n",
     "missing token or clientCertificateData field in plugin output"),
], ids=["exit-1", "not-json", "no-token"])
def test_exec_plugin_failure(fake: FakeCluster, tmp_path: Path, script: str,
                             message: str) -> None:
    path = kubeconfig(tmp_path / "config", ("eks", fake.url, exec_user(tmp_path, script)),
                      current="eks")
    with pytest.raises(ExecPluginError) as raised:
        connect(ClusterOptions(kubeconfig=str(path)), environ={})
    assert str(raised.value).startswith(f'the credential plugin "{sys.executable}" of context '
                                        f'"eks" failed: ')
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert fake.requests == []  # nothing sent without credentials


def test_exec_plugin_command_not_found(fake: FakeCluster, tmp_path: Path) -> None:
    user = {"exec": {"apiVersion": EXEC_API, "command": "gpudra-test-no-such-plugin"}}
    path = kubeconfig(tmp_path / "config", ("eks", fake.url, user), current="eks")
    with pytest.raises(ExecPluginError, match='the credential plugin "gpudra-test-no-such-'
                                              'plugin" of context "eks" failed: .*No such file'):
        connect(ClusterOptions(kubeconfig=str(path)), environ={})


def test_exec_plugin_failing_to_renew(fake: FakeCluster, tmp_path: Path) -> None:
    # An expired credential makes the client re-run the plugin before the next request.
    counter = tmp_path / "runs"
    user = exec_user(tmp_path, f"import pathlib, sys\n"
                               f"runs = pathlib.Path({str(counter)!r})\n"
                               f"if runs.exists():\n"
                               f"    sys.stderr.write('token renewal denied')\n"
                               f"    sys.exit(2)\n"
                               f"runs.write_text('1')\n"
                               f"print({credential(TOKEN, '2020-01-01T00:00:00Z')!r})\n")
    path = kubeconfig(tmp_path / "config", ("eks", fake.url, user), current="eks")
    cluster = connect(ClusterOptions(kubeconfig=str(path)), environ={})
    with cluster, pytest.raises(ExecPluginError) as raised:
        cluster.server_version()
    assert str(raised.value) == (f'the credential plugin "{sys.executable}" of context "eks" '
                                 f"failed to renew the token: process returned 2. token "
                                 f"renewal denied")


# --- in-cluster -----------------------------------------------------------------------------

@pytest.fixture
def pod_environment(tls_fake: FakeCluster, tmp_path: Path) -> tuple[dict[str, str], Path]:
    assert tls_fake.ca_file is not None
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(TOKEN)
    shutil.copy(tls_fake.ca_file, account / "ca.crt")
    (account / "namespace").write_text("c\n")
    host, port = tls_fake.url.removeprefix("https://").rsplit(":", 1)
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
               "HOME": str(tmp_path)}
    return environ, account


@needs_tls
def test_in_cluster_service_account(tls_fake: FakeCluster,
                                    pod_environment: tuple[dict[str, str], Path]) -> None:
    environ, account = pod_environment
    with connect(ClusterOptions(), environ=environ, service_account_dir=account) as cluster:
        target = cluster.target
        assert (target.in_cluster, target.context, target.server, target.namespace) == (
            True, None, tls_fake.url, "c")
        assert len(list(cluster.list(cluster.resource("", "pods")).items())) == 3
    assert target.describe() == f"the in-cluster service account ({tls_fake.url})"


@needs_tls
def test_in_cluster_problems(pod_environment: tuple[dict[str, str], Path]) -> None:
    environ, account = pod_environment
    with pytest.raises(ContextNotFoundError, match='context "x" not found: there is no '
                                                   'kubeconfig'):
        connect(ClusterOptions(context="x"), environ=environ, service_account_dir=account)
    (account / "token").unlink()
    with pytest.raises(KubeconfigError, match="cannot use the in-cluster service account .*: "
                                              "Service token file does not exist"):
        connect(ClusterOptions(), environ=environ, service_account_dir=account)


@pytest.mark.skipif(not tls_available(), reason="no openssl CLI for a TLS fake")
def test_kubeconfig_list_wins_over_in_cluster(fake: FakeCluster, tmp_path: Path,
                                              pod_environment: tuple[dict[str, str], Path]
                                              ) -> None:
    # kubernetes.config.load_config() would go in-cluster here: exists("a:b") is False.
    environ, account = pod_environment
    environ = {**environ, "KUBECONFIG": os.pathsep.join([str(fake.kubeconfig),
                                                         str(tmp_path / "other")])}
    with connect(ClusterOptions(), environ=environ, service_account_dir=account) as cluster:
        assert (cluster.target.in_cluster, cluster.target.server) == (False, fake.url)


@needs_tls
def test_insecure_skip_tls_verify_is_honoured_quietly(tls_fake: FakeCluster,
                                                      tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", ("lab", tls_fake.url, {"token": TOKEN}),
                      current="lab", cluster_extra={"insecure-skip-tls-verify": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with connect(ClusterOptions(kubeconfig=str(path)), environ={}) as cluster:
            assert pod_count(cluster) == 6
    assert [str(w.message) for w in caught] == []
