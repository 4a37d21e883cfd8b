"""`plan` on objects listed from a (fake) API server: the cluster path, plain JSON lists.

Uses the project's fake API server (tests/fakeapi, FakeCluster); skipped where it is not in the
tree. Lists are read the way the cluster source does: GET with limit/continue paging, JSON
bodies, ``*List`` objects with ``items``; plan takes them as they come.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.cel import engine_available
from gpudra.plan import parse_inventory, plan, synthesize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
fakeapi = pytest.importorskip("fakeapi", reason="the fake API server (tests/fakeapi) is not here")
pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

FIXTURES = Path(__file__).parent / "fixtures"
TOKEN = "plan-test-token"
PATHS = {
    "resourceslices": "/apis/resource.k8s.io/v1/resourceslices",
    "nodes": "/api/v1/nodes",
    "deviceclasses": "/apis/resource.k8s.io/v1/deviceclasses",
    "resourceclaimtemplates": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
    "resourceclaims": "/apis/resource.k8s.io/v1/resourceclaims",
    "deployments": "/apis/apps/v1/deployments",
    "daemonsets": "/apis/apps/v1/daemonsets",
    "jobs": "/apis/batch/v1/jobs",
    "pods": "/api/v1/pods",
}


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def list_all(url: str, path: str) -> list[dict[str, Any]]:
    """Every page of a list (limit=2 forces paging), as the lists the API returns."""
    pages, token = [], ""
    while True:
        query = f"?limit=2{'&continue=' + token if token else ''}"
        request = urllib.request.Request(url + path + query, headers={
            "Authorization": f"Bearer {TOKEN}", "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            page = json.loads(response.read())
        pages.append(page)
        token = page.get("metadata", {}).get("continue") or ""
        if not token:
            return pages


@pytest.fixture(scope="module")
def cluster_objects() -> dict[str, list[dict[str, Any]]]:
    inventory = documents("inventory-a100-h100.yaml")
    workloads = [d for d in documents("workloads-gpu.yaml")
                 if d["kind"] != "Pod" and d["metadata"]["name"] != "everywhere"]
    classes = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "gpu.nvidia.com"}, "spec": {"selectors": [{"cel": {
                    "expression": "device.driver == 'gpu.nvidia.com' && "
                                  "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}]
    state = {"version": "1.36.2", "token": TOKEN, "objects": inventory + workloads + classes}
    with fakeapi.FakeCluster(state, tls=False) as cluster:
        listed = {name: list_all(cluster.url, path) for name, path in PATHS.items()}
        assert {r.method for r in cluster.requests} == {"GET"}
    return listed


def test_plan_from_cluster_lists(cluster_objects) -> None:
    inventory = parse_inventory(cluster_objects["resourceslices"] + cluster_objects["nodes"],
                                source="cluster")
    assert len(inventory.devices) == 14 and inventory.source == "cluster"
    objects = [page for name, pages in cluster_objects.items() if name != "resourceslices"
               for page in pages]
    report = plan(objects, inventory)
    got = {w.name: w for w in report.workloads}
    assert set(got) == {"a100-trainer", "h100-sweep", "gpu-probe"}
    assert got["a100-trainer"].satisfiable and got["a100-trainer"].placement == {"node-a100": 2}
    assert got["h100-sweep"].failure_kind == "capacity"
    assert got["gpu-probe"].satisfiable and got["gpu-probe"].pods == 3
    assert report.inventory_source == "cluster"


def test_prediction_from_cluster_nodes(cluster_objects) -> None:
    # The Node objects carry no GFD labels: nothing to predict, and that is not an error.
    inventory = synthesize(cluster_objects["nodes"])
    assert inventory.devices == () and len(inventory.nodes) == 4
