"""Fixtures for the cluster access layer: fake API servers and connections to them.

Connections get an empty environment (no KUBECONFIG, no HOME, no in-cluster variables) unless
a test passes one, and a `sleep` that records instead of waiting, so retries are fast and
their waits can be asserted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpudra.cluster import Cluster, ClusterOptions, connect
from tests.fakeapi import FakeCluster
from tests.fakeapi.tls import tls_available

TOKEN = "t0ken"
USER = "system:serviceaccount:gpudra:auditor"

needs_tls = pytest.mark.skipif(not tls_available(), reason="no openssl CLI for a TLS fake")


def pod(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def state(*objects: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"token": TOKEN, "user": USER, "objects": list(objects), **extra}


SMALL_PODS = [pod(f"p{i}", ns, app="web" if i % 2 else "ml")
              for i, ns in enumerate(["a", "a", "b", "c", "c", "c"])]


class Sleeps(list):
    """A sleep() that records the seconds asked for and returns at once."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def open_cluster(cluster: FakeCluster, sleeps: Sleeps | None = None,
                 environ: dict[str, str] | None = None, **options: Any) -> Cluster:
    options.setdefault("kubeconfig", str(cluster.kubeconfig))
    return connect(ClusterOptions(**options), environ={} if environ is None else environ,
                   sleep=sleeps if sleeps is not None else Sleeps())


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeCluster]:
    """A plain-HTTP fake with the state of the `state` marker (default: SMALL_PODS)."""
    marker = request.node.get_closest_marker("state")
    data = marker.args[0] if marker else state(*SMALL_PODS)
    with FakeCluster(data, tls=False) as running:
        yield running


@pytest.fixture(scope="module")
def tls_fake() -> Iterator[FakeCluster]:
    if not tls_available():
        pytest.skip("no openssl CLI for a TLS fake")
    with FakeCluster(state(*SMALL_PODS)) as running:
        yield running


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "state(data): the fake API server state for `fake`")


def wire(cluster: FakeCluster) -> list[tuple[str, str, dict[str, str], int]]:
    """The requests as (method, path, query, status)."""
    return [(r.method, r.path, dict(r.query), r.status) for r in cluster.requests]


def kubeconfig_text(path: Path) -> bytes:
    return path.read_bytes()
