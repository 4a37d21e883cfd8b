"""Paged lists against the fake API server: pages, continue, 410 restarts, scope, progress."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.cluster import ListProgress, ResourceType, RetryPolicy
from tests.cluster.conftest import (
    SMALL_PODS,
    USER,
    Sleeps,
    needs_tls,
    open_cluster,
    pod,
    state,
    wire,
)
from tests.fakeapi import FakeCluster

MANY_PODS = [pod(f"pod-{i:04d}", f"ns-{i % 7}") for i in range(1201)]


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objects]


@pytest.mark.parametrize("tls", [False, pytest.param(True, marks=needs_tls)],
                         ids=["http", "https"])
def test_pages_of_500_follow_continue_and_complete_the_objects(tls: bool) -> None:
    with FakeCluster(state(*MANY_PODS), tls=tls) as fake, \
            open_cluster(fake, all_namespaces=True) as cluster:
        pods = cluster.resource("", "pods")
        fake.clear_requests()
        listing = cluster.list(pods)
        pages = [page for page in listing]
    assert [len(page) for page in pages] == [500, 500, 201]
    objects = [o for page in pages for o in page]
    assert sorted(names(objects)) == sorted(names(MANY_PODS))  # each once
    # Filled in from PodList and the version asked for, first in each object.
    assert all(list(o)[:2] == ["apiVersion", "kind"] for o in objects)
    assert {(o["apiVersion"], o["kind"]) for o in objects} == {("v1", "Pod")}
    assert (listing.complete, listing.objects, listing.pages, listing.error) == (
        True, 1201, 3, None)
    requests = wire(fake)
    assert [(m, p, q.get("limit"), "continue" in q) for m, p, q, _ in requests] == [
        ("GET", "/api/v1/pods", "500", False), ("GET", "/api/v1/pods", "500", True),
        ("GET", "/api/v1/pods", "500", True)]


def test_custom_resource_items_keep_their_own_kind() -> None:
    crd = {"group": "example.com", "version": "v1alpha1", "plural": "widgets",
           "kind": "Widget", "namespaced": True}
    widget = {"apiVersion": "example.com/v1alpha1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "a"}, "spec": {"size": 3}}
    with FakeCluster(state(widget, crds=[crd]), tls=False) as fake, \
            open_cluster(fake, all_namespaces=True) as cluster:
        widgets = cluster.resource("example.com", "widgets")
        objects = list(cluster.list(widgets).items())
    assert objects == [{**widget, "metadata": objects[0]["metadata"]}]
    assert objects[0]["metadata"]["name"] == "w"


def test_cluster_scoped_kinds_from_a_named_group() -> None:
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": "gpu.nvidia.com"}}
    with FakeCluster(state(device_class), tls=False) as fake, \
            open_cluster(fake, namespace="ml") as cluster:
        classes = cluster.resource("resource.k8s.io", "deviceclasses")
        objects = list(cluster.list(classes).items())
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("resource.k8s.io/v1", "DeviceClass", "gpu.nvidia.com")]
    assert wire(fake)[-1][1] == "/apis/resource.k8s.io/v1/deviceclasses"  # no namespace


@pytest.mark.parametrize("options,list_namespace,expect_path,expect", [
    ({}, None, "/api/v1/namespaces/default/pods", []),  # the context's namespace
    ({"namespace": "c"}, None, "/api/v1/namespaces/c/pods", ["c/p3", "c/p4", "c/p5"]),
    ({"all_namespaces": True}, None, "/api/v1/pods", names(SMALL_PODS)),
    ({"namespace": "c"}, "a", "/api/v1/namespaces/a/pods", ["a/p0", "a/p1"]),
], ids=["context", "namespace", "all", "explicit"])
def test_namespace_scope(fake: FakeCluster, options: dict[str, Any], list_namespace: str | None,
                         expect_path: str, expect: list[str]) -> None:
    with open_cluster(fake, **options) as cluster:
        pods = cluster.resource("", "pods")
        listing = cluster.list(pods) if list_namespace is None else \
            cluster.list(pods, namespace=list_namespace)
        objects = list(listing.items())
    assert sorted(names(objects)) == sorted(expect)
    assert wire(fake)[-1][:2] == ("GET", expect_path)


def test_all_namespaces_explicitly(fake: FakeCluster) -> None:
    with open_cluster(fake, namespace="c") as cluster:
        objects = list(cluster.list(cluster.resource("", "pods"), namespace=None).items())
    assert len(objects) == len(SMALL_PODS)


def test_selectors_are_sent(fake: FakeCluster) -> None:
    with open_cluster(fake, all_namespaces=True) as cluster:
        pods = cluster.resource("", "pods")
        web = list(cluster.list(pods, label_selector="app=web").items())
        one = list(cluster.list(pods, field_selector="metadata.name=p2").items())
    assert sorted(names(web)) == ["a/p1", "c/p3", "c/p5"]
    assert names(one) == ["b/p2"]
    assert wire(fake)[-2][2] == {"limit": "500", "labelSelector": "app=web"}


def test_expired_continue_restarts_without_duplicates(fake: FakeCluster) -> None:
    fake.stop()
    progress: list[ListProgress] = []
    with FakeCluster(state(*SMALL_PODS, faults={"expire_continue_after": 1}), tls=False) as \
            expiring, open_cluster(expiring, all_namespaces=True, page_size=2) as cluster:
        listing = cluster.list(cluster.resource("", "pods"), on_page=progress.append)
        objects = list(listing.items())
        assert not cluster.errors
    assert names(objects) == names(SMALL_PODS)  # all once, in order
    assert (listing.complete, listing.restarts, listing.objects) == (True, 1, 6)
    statuses = [(("continue" in q), status) for _, path, q, status in wire(expiring)
                if path == "/api/v1/pods"]
    assert statuses == [(False, 200), (True, 200), (True, 410),  # restart from the beginning
                        (False, 200), (True, 200), (True, 200)]
    assert [(p.objects, p.restarts, p.done) for p in progress] == [
        (2, 0, False), (4, 0, False), (4, 1, False), (4, 1, False), (6, 1, True)]


def test_restarts_are_bounded_and_the_failure_recorded() -> None:
    policy = RetryPolicy(list_restarts=0)
    with FakeCluster(state(*SMALL_PODS, faults={"expire_continue_after": 1}), tls=False) as \
            fake, open_cluster(fake, all_namespaces=True, page_size=2, retry=policy) as cluster:
        listing = cluster.list(cluster.resource("", "pods"))
        objects = list(listing.items())
        errors = cluster.errors
    assert len(objects) == 4 and not listing.complete
    assert errors == (listing.error,)
    assert (errors[0].status, errors[0].reason, errors[0].objects_read) == (410, "Expired", 4)
    assert "restarted 0 times" in errors[0].message


def test_forbidden_type_is_recorded_and_the_others_are_read(fake: FakeCluster) -> None:
    fake.stop()
    deny = [{"verb": "list", "resource": "nodes"},
            {"verb": "list", "group": "", "resource": "pods", "namespace": "b"}]
    progress: list[ListProgress] = []
    with FakeCluster(state(*SMALL_PODS, deny=deny), tls=False) as denying, \
            open_cluster(denying, all_namespaces=True) as cluster:
        nodes = cluster.list(cluster.resource("", "nodes"), on_page=progress.append)
        assert list(nodes) == []
        pods = cluster.resource("", "pods")
        everywhere = cluster.list(pods)
        assert list(everywhere) == []  # a namespace denied: the cluster-wide list is denied
        in_a = list(cluster.list(pods, namespace="a").items())
        errors = cluster.errors
    assert names(in_a) == ["a/p0", "a/p1"]
    assert errors == (nodes.error, everywhere.error)
    assert [(e.verb, e.resource, e.group, e.namespace, e.status) for e in errors] == [
        ("list", "nodes", "", None, 403), ("list", "pods", "", None, 403)]
    assert str(errors[0]) == (
        f'cannot list nodes (cluster-wide): nodes is forbidden: User "{USER}" cannot list '
        f'resource "nodes" in API group "" at the cluster scope (403 Forbidden)')
    assert progress[-1].done and progress[-1].error == errors[0]


def test_forbidden_in_one_namespace_names_it(fake: FakeCluster) -> None:
    fake.stop()
    deny = [{"verb": "list", "group": "resource.k8s.io", "resource": "resourceclaims"}]
    with FakeCluster(state(deny=deny), tls=False) as denying, \
            open_cluster(denying, namespace="ml") as cluster:
        listing = cluster.list(cluster.resource("resource.k8s.io", "resourceclaims"))
        assert list(listing) == []
    error = listing.error
    assert error is not None and (error.namespace, error.subject, error.scope) == (
        "ml", "resourceclaims.resource.k8s.io", 'namespace "ml"')


def test_type_gone_since_discovery_is_skipped_quietly(fake: FakeCluster) -> None:
    gone = ResourceType("example.com", "v1", "gadgets", "Gadget", namespaced=True)
    with open_cluster(fake, all_namespaces=True) as cluster:
        listing = cluster.list(gone)
        assert list(listing) == []
        assert cluster.errors == ()
    assert (listing.not_served, listing.complete, listing.error) == (True, False, None)
    assert wire(fake)[-1][1:] == ("/apis/example.com/v1/gadgets", {"limit": "500"}, 404)


def test_progress_reports_each_page() -> None:
    progress: list[ListProgress] = []
    with FakeCluster(state(*MANY_PODS), tls=False) as fake, \
            open_cluster(fake, all_namespaces=True) as cluster:
        pods = cluster.resource("", "pods")
        for _ in cluster.list(pods, on_page=progress.append):
            pass
    assert [(p.objects, p.pages, p.remaining, p.expected_total, p.done) for p in progress] == [
        (500, 1, 701, 1201, False), (1000, 2, 201, 1201, False), (1201, 3, None, None, True)]
    assert {p.resource for p in progress} == {pods} and {p.namespace for p in progress} == {None}


def test_a_listing_is_read_once(fake: FakeCluster) -> None:
    with open_cluster(fake, all_namespaces=True) as cluster:
        listing = cluster.list(cluster.resource("", "pods"))
        list(listing)
        with pytest.raises(RuntimeError, match="already read"):
            list(listing)


def test_get_one_object(fake: FakeCluster) -> None:
    fake.stop()
    deny = [{"verb": "get", "resource": "nodes"}]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}}
    with FakeCluster(state(*SMALL_PODS, node, deny=deny), tls=False) as denying, \
            open_cluster(denying, namespace="a") as cluster:
        pods = cluster.resource("", "pods")
        found = cluster.get(pods, "p0")
        elsewhere = cluster.get(pods, "p2", namespace="b")
        missing = cluster.get(pods, "nope")
        denied = cluster.get(cluster.resource("", "nodes"), "gpu-1")
        errors = cluster.errors
    assert found is not None and (found["kind"], found["metadata"]["name"]) == ("Pod", "p0")
    assert elsewhere is not None and elsewhere["metadata"]["namespace"] == "b"
    assert missing is None and denied is None
    assert [(e.verb, e.resource, e.status) for e in errors] == [("get", "nodes", 403)]


def test_only_get_is_sent(sleeps: Sleeps) -> None:
    faults = {"expire_continue_after": 1,
              "errors": [{"path": "/api/v1/nodes", "status": 429, "count": 1,
                          "retry_after": 0}]}
    with FakeCluster(state(*MANY_PODS, faults=faults, deny=[{"resource": "limitranges"}]),
                     tls=False) as fake, \
            open_cluster(fake, sleeps, all_namespaces=True) as cluster:
        cluster.server_version()
        for group, name in [("", "pods"), ("", "nodes"), ("", "limitranges"),
                            ("apps", "deployments"), ("resource.k8s.io", "resourceslices")]:
            for _ in cluster.list(cluster.resource(group, name)):
                pass
        cluster.get(cluster.resource("", "pods"), "pod-0001", namespace="ns-1")
    assert len(fake.requests) > 10
    assert {r.method for r in fake.requests} == {"GET"}


def test_compressed_pages(sleeps: Sleeps) -> None:
    # The API server gzips answers above 128 KiB when asked; gpudra asks, as kubectl does.
    padded = [{**p, "metadata": {**p["metadata"], "annotations": {"note": "x" * 400}}}
              for p in MANY_PODS]
    with FakeCluster(state(*padded, compression=True), tls=False) as fake, \
            open_cluster(fake, sleeps, all_namespaces=True) as cluster:
        objects = list(cluster.list(cluster.resource("", "pods")).items())
    assert sorted(names(objects)) == sorted(names(MANY_PODS))
    assert objects[0]["metadata"]["annotations"]["note"] == "x" * 400
    pages = [r for r in fake.requests if r.path == "/api/v1/pods"]
    assert {r.headers["accept-encoding"] for r in pages} == {"gzip"}
    assert [r.content_encoding for r in pages] == ["gzip", "gzip", ""]  # 201 pods < 128 KiB
