"""Discovery against the fake API server: /version, served groups and versions, resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cluster import ClusterRequestError, ResourceType, ServerVersion
from tests.cluster.conftest import Sleeps, open_cluster, state, wire
from tests.fakeapi import FakeCluster

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "discovery.yaml").read_text())
FIND_CASES = [(case["server"], find) for case in CASES for find in case["finds"]]


@pytest.mark.parametrize("server,find", FIND_CASES,
                         ids=[f"{s['version']}-{'+'.join(s.get('runtime_config', []))}-"
                              f"{f['find'][1]}-{f['find'][2]}" for s, f in FIND_CASES])
def test_find_picks_the_served_version(server: dict[str, Any], find: dict[str, Any]) -> None:
    group, name, versions = find["find"]
    if isinstance(versions, list):
        versions = tuple(versions)
    with FakeCluster(state(**server), tls=False) as fake, open_cluster(fake) as cluster:
        found = cluster.resource(group, name, versions)
    assert (found.version if found else None) == find["expect"]
    if found:
        assert (found.group, found.name) == (group, name)


def test_version_and_groups(fake: FakeCluster) -> None:
    with open_cluster(fake) as cluster:
        version = cluster.server_version()
        groups = cluster.discovery.groups()
    assert version == ServerVersion(1, 34, 2, "v1.34.2", "linux/amd64")
    assert str(version) == "1.34.2" and version.at_least(1, 34) and not version.at_least(1, 35)
    assert groups[""].versions == ("v1",)
    assert groups["resource.k8s.io"].preferred == "v1"
    assert {"apps", "batch", "apiextensions.k8s.io"} <= set(groups)


def test_eks_style_minor_is_numeric() -> None:
    served = state(version="1.33.4", version_info={"minor": "33+",
                                                   "gitVersion": "v1.33.4-eks-1234abc"})
    with FakeCluster(served, tls=False) as fake, open_cluster(fake) as cluster:
        version = cluster.server_version()
    assert (version.major, version.minor, version.patch) == (1, 33, 4)
    assert version.git_version == "v1.33.4-eks-1234abc"


def test_resource_details_and_caching(fake: FakeCluster) -> None:
    with open_cluster(fake) as cluster:
        pods = cluster.resource("", "pods")
        nodes = cluster.resource("", "nodes")
        slices = cluster.resource("resource.k8s.io", "resourceslices")
        deployments = cluster.discovery.find_kind("apps", "Deployment")
        assert cluster.discovery.find_kind("apps", "Pod") is None
    assert pods is not None and nodes is not None and slices is not None
    assert (pods.kind, pods.namespaced, pods.short_names, pods.api_version) == (
        "Pod", True, ("po",), "v1")
    assert "list" in pods.verbs and pods.listable
    assert not nodes.namespaced and nodes.collection_path("ml") == "/api/v1/nodes"
    assert pods.collection_path("ml") == "/api/v1/namespaces/ml/pods"
    assert slices.qualified_name == "resourceslices.resource.k8s.io"
    assert slices.collection_path() == "/apis/resource.k8s.io/v1/resourceslices"
    assert deployments == ResourceType("apps", "v1", "deployments", "Deployment", True,
                                       deployments.verbs, ("deploy",))
    paths = [path for _, path, _, _ in wire(fake)]
    # Each discovery document once; only the groups asked about; no subresource entries.
    assert paths == ["/api", "/apis", "/api/v1", "/apis/resource.k8s.io/v1", "/apis/apps/v1"]


def test_unavailable_group_version_is_recorded_and_treated_as_unserved() -> None:
    # An aggregated API whose backend is down answers its discovery document with 503.
    faults = {"errors": [{"path": "/apis/batch/v1", "status": 503, "count": 100}]}
    sleeps = Sleeps()
    with FakeCluster(state(faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps) as cluster:
        assert cluster.resource("batch", "jobs") is None
        assert cluster.resource("apps", "deployments") is not None
        assert [e.verb for e in cluster.errors] == ["discover"]
        error = cluster.errors[0]
    assert (error.group, error.version, error.status, error.reason) == (
        "batch", "v1", 503, "ServiceUnavailable")
    assert str(error) == ("cannot discover batch/v1: the server is currently unable to handle "
                          "the request (503 ServiceUnavailable)")
    assert len(sleeps) == 4  # 5 attempts


def test_failing_api_list_is_an_exception(sleeps: Sleeps) -> None:
    faults = {"errors": [{"path": "/apis", "status": 500, "count": 100}]}
    with FakeCluster(state(faults=faults), tls=False) as fake, \
            open_cluster(fake, sleeps) as cluster, pytest.raises(ClusterRequestError) as raised:
        cluster.resource("apps", "deployments")
    assert raised.value.status == 500
    assert str(raised.value) == (
        f"the cluster at {fake.url} answered GET /apis with 500 InternalError after 5 "
        f"attempts: Internal error occurred: injected fault")
