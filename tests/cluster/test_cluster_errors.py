"""Failure modes against the fake API server: each maps to one exception or one record."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cluster import (
    ClusterRequestError,
    ClusterTimeoutError,
    ClusterUnreachableError,
    CredentialsRejectedError,
    RetryPolicy,
)
from gpudra.errors import GpudraError
from tests.cluster.conftest import SMALL_PODS, Sleeps, needs_tls, open_cluster, state, wire
from tests.fakeapi import EXPIRED_CONTEXT, UNREACHABLE_CONTEXT, FakeCluster

PODS = "/api/v1/pods"


def list_pods(cluster: Any) -> tuple[list[dict[str, Any]], Any]:
    listing = cluster.list(cluster.resource("", "pods"), namespace=None)
    return list(listing.items()), listing


def pod_statuses(fake: FakeCluster) -> list[int]:
    return [status for _, path, _, status in wire(fake) if path == PODS]


# --- whole-cluster failures: exceptions ---------------------------------------------------

def test_rejected_token_is_the_credentials_error(fake: FakeCluster, sleeps: Sleeps) -> None:
    with open_cluster(fake, sleeps, context=EXPIRED_CONTEXT) as cluster:
        with pytest.raises(CredentialsRejectedError) as raised:
            cluster.server_version()  # a bad token is 401 even where anonymous may read
    assert str(raised.value) == (
        f'the cluster rejected the credentials of context "{EXPIRED_CONTEXT}" (401 '
        f"Unauthorized): the token may have expired; log in again or check the user of that "
        f"context")
    assert isinstance(raised.value, GpudraError) and sleeps == []  # 401 is not retried
    assert [status for *_, status in wire(fake)] == [401]


def test_connection_refused_is_the_unreachable_error(fake: FakeCluster, sleeps: Sleeps) -> None:
    with open_cluster(fake, sleeps, context=UNREACHABLE_CONTEXT) as cluster:
        server = cluster.target.server
        with pytest.raises(ClusterUnreachableError) as raised:
            cluster.server_version()
    assert str(raised.value) == (f'cannot reach the cluster at {server} (context '
                                 f'"{UNREACHABLE_CONTEXT}"): connection refused')
    assert raised.value.problem == "connection refused" and sleeps == []


@needs_tls
def test_unknown_certificate_authority_is_a_tls_error(tls_fake: FakeCluster,
                                                      tmp_path: Path) -> None:
    document = yaml.safe_load(tls_fake.kubeconfig.read_text())
    del document["clusters"][0]["cluster"]["certificate-authority-data"]  # system CAs only
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump(document))
    with open_cluster(tls_fake, kubeconfig=str(kubeconfig)) as cluster:
        with pytest.raises(ClusterUnreachableError) as raised:
            cluster.server_version()
    assert str(raised.value) == (
        f'cannot reach the cluster at {tls_fake.url} (context "fake"): TLS error: certificate '
        f"verify failed: unable to get local issuer certificate")


@needs_tls
def test_https_to_a_plain_http_server_says_so(fake: FakeCluster, tls_fake: FakeCluster,
                                              tmp_path: Path) -> None:
    document = yaml.safe_load(tls_fake.kubeconfig.read_text())
    document["clusters"][0]["cluster"]["server"] = fake.url.replace("http:", "https:")
    document["users"][0]["user"]["token"] = fake.state.token
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump(document))
    with open_cluster(fake, kubeconfig=str(kubeconfig)) as cluster:
        with pytest.raises(ClusterUnreachableError, match="TLS error: wrong version number "
                                                          r"\(does the server speak plain HTTP"):
            cluster.server_version()


def test_request_timeout() -> None:
    faults = {"delays": [{"path": PODS, "seconds": 3}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, request_timeout=0.3) as cluster:
        with pytest.raises(ClusterTimeoutError) as raised:
            list_pods(cluster)
    assert str(raised.value) == (
        f'the cluster at {fake.url} did not answer GET {PODS} within 0.3 s (context "fake"); '
        f"a slow or overloaded API server, or raise --request-timeout")
    assert isinstance(raised.value, ClusterUnreachableError)


def test_slow_answer_within_the_timeout_is_fine() -> None:
    faults = {"delays": [{"path": PODS, "seconds": 0.2}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, request_timeout=5) as cluster:
        objects, listing = list_pods(cluster)
    assert len(objects) == 6 and listing.complete


# --- retries --------------------------------------------------------------------------------

@pytest.mark.parametrize("status,retry_after,waits", [
    (429, 1, [1.0, 1.0]),  # Retry-After honoured, whatever the backoff would be
    (503, 2, [2.0, 2.0]),
    (429, 0, [0.0, 0.0]),
    (503, 120, [30.0, 30.0]),  # cut to RetryPolicy.max_retry_after
])
def test_throttled_then_served(status: int, retry_after: int, waits: list[float],
                               sleeps: Sleeps) -> None:
    faults = {"errors": [{"path": PODS, "status": status, "count": 2,
                          "retry_after": retry_after}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps) as cluster:
        objects, listing = list_pods(cluster)
        assert cluster.errors == ()
    assert len(objects) == 6 and listing.complete
    assert pod_statuses(fake) == [status, status, 200]  # no hidden urllib3 retries
    assert sleeps == waits


@pytest.mark.parametrize("status", [500, 502, 504])
def test_server_errors_back_off_exponentially(status: int, sleeps: Sleeps) -> None:
    faults = {"errors": [{"path": PODS, "status": status, "count": 3}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps) as cluster:
        objects, _ = list_pods(cluster)
    assert len(objects) == 6 and pod_statuses(fake) == [status] * 3 + [200]
    # 0.5 s doubling, each scaled by a jitter in [0.5, 1]
    assert [0.25 <= sleeps[0] <= 0.5, 0.5 <= sleeps[1] <= 1.0, 1.0 <= sleeps[2] <= 2.0] == [
        True] * 3


@pytest.mark.parametrize("status,retry_after,reason,message", [
    (503, 1, "ServiceUnavailable", "the server is currently unable to handle the request"),
    (429, 1, "TooManyRequests", "Too many requests, please try again later."),
    (500, None, "InternalError", "Internal error occurred: injected fault"),
])
def test_giving_up_after_the_bound_records_the_error(status: int, retry_after: int | None,
                                                     reason: str, message: str,
                                                     sleeps: Sleeps) -> None:
    faults = {"errors": [{"path": PODS, "status": status, "count": 100,
                          "retry_after": retry_after}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps, retry=RetryPolicy(attempts=3)) as cluster:
        objects, listing = list_pods(cluster)
        nodes = list(cluster.list(cluster.resource("", "nodes")).items())  # the rest goes on
        errors = cluster.errors
    assert objects == [] and nodes == [] and not listing.complete
    assert pod_statuses(fake) == [status] * 3 and len(sleeps) == 2
    assert errors == (listing.error,)
    assert (errors[0].status, errors[0].reason, errors[0].message) == (status, reason, message)
    assert str(errors[0]) == f"cannot list pods (cluster-wide): {message} ({status} {reason})"


def test_reset_connection_is_retried(sleeps: Sleeps) -> None:
    faults = {"resets": [{"path": PODS, "count": 2}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps) as cluster:
        objects, _ = list_pods(cluster)
    assert len(objects) == 6 and pod_statuses(fake) == [0, 0, 200] and len(sleeps) == 2


@needs_tls
def test_resets_beyond_the_bound_are_the_unreachable_error(sleeps: Sleeps) -> None:
    faults = {"resets": [{"path": PODS, "count": 100}]}
    with FakeCluster(state(*SMALL_PODS, faults=faults)) as fake, \
            open_cluster(fake, sleeps) as cluster, pytest.raises(ClusterUnreachableError) as raised:
        list_pods(cluster)
    assert pod_statuses(fake) == [0] * 5 and len(sleeps) == 4
    assert str(raised.value).startswith(f'cannot reach the cluster at {fake.url} (context '
                                        f'"fake"): ')
    assert raised.value.problem in ("the connection was reset (connection reset by peer)",
                                    "the server closed the connection without an answer")


def test_bad_request_is_not_retried(fake: FakeCluster, sleeps: Sleeps) -> None:
    with open_cluster(fake, sleeps) as cluster:
        listing = cluster.list(cluster.resource("", "pods"), label_selector="a=b=c")
        assert list(listing) == []
    assert sleeps == [] and listing.error is not None and listing.error.status == 400
    assert "unable to parse requirement" in listing.error.message


def test_status_error_without_a_status_body(fake: FakeCluster) -> None:
    # /openapi/v2 is not served by the fake: a 404 answered as a Status; the message is kept.
    with open_cluster(fake) as cluster, pytest.raises(ClusterRequestError) as raised:
        cluster._transport.get("/openapi/v2")
    assert (raised.value.status, raised.value.reason, raised.value.server_message) == (
        404, "NotFound", "the server could not find the requested resource")


def test_token_in_kubeconfig_is_sent_as_bearer(fake: FakeCluster) -> None:
    with open_cluster(fake) as cluster:
        cluster.resource("", "pods")
    assert {r.headers.get("authorization") for r in fake.requests} == {"Bearer <redacted>"}
    assert {r.headers.get("accept") for r in fake.requests} == {"application/json"}
    assert all(r.headers["user-agent"].startswith("gpudra/") for r in fake.requests)


def test_ca_data_round_trip_is_not_needed_for_plain_http(fake: FakeCluster) -> None:
    document = yaml.safe_load(fake.kubeconfig.read_text())
    assert "certificate-authority-data" not in document["clusters"][0]["cluster"]
    assert base64  # imported for the TLS tests above


# --- credentials in a server URL never reach a message ----------------------------------

def _with_userinfo(fake: FakeCluster, tmp_path: Path, server: str | None = None) -> Path:
    """The fake's kubeconfig with `admin:SECRET@` in the current context's server URL."""
    document = yaml.safe_load(fake.kubeconfig.read_text())
    for entry in document["clusters"]:
        url = server or entry["cluster"]["server"]
        scheme, _, rest = url.partition("://")
        entry["cluster"]["server"] = f"{scheme}://admin:SECRET@{rest}"
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump(document))
    return kubeconfig


@pytest.mark.parametrize("command", [["audit"], ["preflight"], ["plan"],
                                     ["convert", "--from-cluster", "--output-dir", "out"]])
def test_server_credentials_are_redacted_in_errors(fake: FakeCluster, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   command: list[str]) -> None:
    from typer.testing import CliRunner

    from gpudra.cli import app

    monkeypatch.chdir(tmp_path)
    kubeconfig = _with_userinfo(fake, tmp_path, "http://127.0.0.1:9")  # nothing listens
    result = CliRunner().invoke(app, [*command, "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 3
    assert "cannot reach the cluster at http://***@127.0.0.1:9" in result.output
    assert "SECRET" not in result.output


def test_redacted_keeps_everything_but_the_userinfo() -> None:
    from gpudra.cluster.records import redacted

    assert redacted("https://admin:s3cr@t@api.example.com:6443/k8s") == \
        "https://***@api.example.com:6443/k8s"
    assert redacted("https://token@10.0.0.1") == "https://***@10.0.0.1"
    assert redacted("https://api.example.com:6443") == "https://api.example.com:6443"


def test_an_invalid_server_url_is_shown_without_credentials(tmp_path: Path) -> None:
    from gpudra.cluster.errors import KubeconfigError
    from gpudra.cluster.kubeconfig import choose_context, find_kubeconfig

    config = tmp_path / "config"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "ftp://admin:SECRET@host"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    with pytest.raises(KubeconfigError) as raised:
        choose_context(find_kubeconfig(str(config), {}), None)
    assert "SECRET" not in str(raised.value) and "ftp://***@host" in str(raised.value)
