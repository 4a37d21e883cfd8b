"""Placement rules not covered by fixtures/cases.yaml: constraints, taints, feature gates,
ordering, search budget, shared claims across workloads, network-only inventories."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpudra.dra.cel import engine_available
from gpudra.plan import PlanOptions, parse_inventory, plan

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


def gpus(node: str, count: int, **extra: Any) -> dict[str, Any]:
    devices = []
    for i in range(count):
        device = {"name": f"gpu-{i}", "attributes": {
            "type": {"string": "gpu"}, "uuid": {"string": f"{node}-{i}"},
            "resource.kubernetes.io/pcieRoot": {"string": f"root-{i % 2}"}},
            "capacity": {"memory": {"value": "40Gi"}}}
        for key, value in extra.items():
            device[key] = value(i) if callable(value) else value
        devices.append(device)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-slice"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def template(name: str, request: dict[str, Any], constraints: list | None = None) -> dict:
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": request}]}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"}, "spec": {"spec": {"devices": devices}}}


def deployment(name: str, replicas: int, *claims: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "template": {"spec": {
                "resourceClaims": list(claims), "containers": [{"name": "c"}]}}}}


def uses(template_name: str) -> dict[str, str]:
    return {"name": "gpu", "resourceClaimTemplateName": template_name}


def result(objects: list, slices: list, **options: Any) -> dict[str, dict[str, Any]]:
    report = plan(objects, parse_inventory(slices), PlanOptions(**options))
    return {w.name: w for w in report.workloads}


def test_distinct_attribute() -> None:
    distinct = template("distinct", {"deviceClassName": "gpu.nvidia.com", "count": 2},
                        [{"distinctAttribute": "resource.kubernetes.io/pcieRoot"}])
    three = template("three", {"deviceClassName": "gpu.nvidia.com", "count": 3},
                     [{"distinctAttribute": "resource.kubernetes.io/pcieRoot"}])
    got = result([distinct, three, deployment("two", 2, uses("distinct")),
                  deployment("three", 1, uses("three"))], [gpus("n1", 4)])
    assert got["two"].satisfiable and got["two"].placement == {"n1": 2}
    assert got["three"].failure_kind == "no-fit"


def test_device_taints_need_tolerations() -> None:
    tainted = gpus("n1", 1, taints=[{"key": "maintenance", "value": "yes",
                                     "effect": "NoSchedule"}])
    plain = template("plain", {"deviceClassName": "gpu.nvidia.com"})
    tolerant = template("tolerant", {"deviceClassName": "gpu.nvidia.com", "tolerations": [
        {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]})
    got = result([plain, deployment("plain", 1, uses("plain"))], [tainted])
    assert got["plain"].failure_kind == "no-fit" and "device taints" in got["plain"].reason
    got = result([tolerant, deployment("tolerant", 1, uses("tolerant"))], [tainted])
    assert got["tolerant"].satisfiable
    got = result([plain, deployment("plain", 1, uses("plain"))], [tainted], device_taints=False)
    assert got["plain"].satisfiable


def test_consumable_capacity_gate_off() -> None:
    shared = gpus("n1", 1, allowMultipleAllocations=True)
    one = template("one", {"deviceClassName": "gpu.nvidia.com"})
    memory = template("memory", {"deviceClassName": "gpu.nvidia.com",
                                 "capacity": {"requests": {"memory": "10Gi"}}})
    objects = [one, memory, deployment("one", 2, uses("one"))]
    # a device without request policies: each allocation consumes all of it
    assert result(objects, [shared])["one"].failure_kind == "capacity"
    off = result(objects + [deployment("memory", 1, uses("memory"))], [shared],
                 consumable_capacity=False)
    assert off["one"].failure_kind == "capacity"  # allowMultipleAllocations ignored: exclusive
    assert "DRAConsumableCapacity feature is disabled" in off["memory"].reason


def test_partitionable_devices_gate_off() -> None:
    counters = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "c"}, "spec": {
                    "driver": "gpu.nvidia.com", "nodeName": "n1",
                    "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
                    "sharedCounters": [{"name": "set", "counters": {"slices": {"value": "8"}}}]}}
    devices = gpus("n1", 1, consumesCounters=[{"counterSet": "set",
                                               "counters": {"slices": {"value": "8"}}}])
    devices["spec"]["pool"]["resourceSliceCount"] = 2
    objects = [template("one", {"deviceClassName": "gpu.nvidia.com"}),
               deployment("one", 1, uses("one"))]
    assert result(objects, [counters, devices])["one"].satisfiable
    off = result(objects, [counters, devices], partitionable_devices=False)
    assert off["one"].failure_kind == "no-fit"


def test_order_scarcest_first_or_input() -> None:
    wide = template("wide", {"deviceClassName": "gpu.nvidia.com", "count": 2})
    narrow = template("narrow", {"deviceClassName": "gpu.nvidia.com", "selectors": [
        {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].uuid == "n1-0"'}}]})
    objects = [wide, narrow, deployment("a-wide", 1, uses("wide")),
               deployment("b-narrow", 1, uses("narrow"))]
    scarcest = result(objects, [gpus("n1", 2)])
    assert scarcest["b-narrow"].satisfiable and scarcest["a-wide"].failure_kind == "competition"
    in_order = result(objects, [gpus("n1", 2)], order="input")
    assert in_order["a-wide"].satisfiable and in_order["b-narrow"].failure_kind == "competition"


def test_search_budget() -> None:
    # 8 devices, pairs that must share an attribute no two devices share: many combinations.
    hard = template("hard", {"deviceClassName": "gpu.nvidia.com", "count": 4},
                    [{"matchAttribute": "gpu.nvidia.com/uuid"}])
    got = result([hard, deployment("hard", 1, uses("hard"))], [gpus("n1", 8)], search_budget=5)
    assert got["hard"].failure_kind == "budget"
    got = result([hard, deployment("hard", 1, uses("hard"))], [gpus("n1", 8)])
    assert got["hard"].failure_kind == "no-fit"


def test_a_shared_claim_pins_every_pod_that_uses_it() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "shared", "namespace": "ml"},
             "spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    own = template("own", {"deviceClassName": "gpu.nvidia.com", "count": 2})
    shared = {"name": "shared", "resourceClaimName": "shared"}
    first = deployment("a-first", 1, shared)
    second = deployment("b-second", 1, shared, {"name": "own", "resourceClaimTemplateName": "own"})
    got = result([claim, own, first, second], [gpus("n1", 2), gpus("n2", 4)], order="input")
    # the shared claim went to n1 (first fit); the second workload must follow it there,
    # where only one device is left for its own two.
    assert got["a-first"].placement == {"n1": 1}
    assert got["b-second"].failure_kind == "competition"


def test_network_only_inventory_and_empty_daemonset() -> None:
    network = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": "net"},
               "spec": {"driver": "gpu.nvidia.com", "allNodes": True,
                        "pool": {"name": "net", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}}
    one = template("one", {"deviceClassName": "gpu.nvidia.com"})
    daemon = {"apiVersion": "apps/v1", "kind": "DaemonSet",
              "metadata": {"name": "probe", "namespace": "ml"},
              "spec": {"template": {"spec": {"nodeSelector": {"role": "gpu"},
                                             "resourceClaims": [uses("one")],
                                             "containers": [{"name": "c"}]}}}}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "cpu", "labels": {"role": "cpu"}}}
    got = result([one, deployment("one", 1, uses("one"))], [network])
    assert got["one"].satisfiable and got["one"].requests[0].network_devices == 1
    got = result([one, daemon], [network, node])
    assert got["probe"].satisfiable and got["probe"].pods == 0
    assert "no node is eligible" in got["probe"].warnings[0]


def test_report_json_shape() -> None:
    one = template("one", {"deviceClassName": "gpu.nvidia.com"})
    report = plan([one, deployment("one", 3, uses("one"))], parse_inventory([gpus("n1", 2)]))
    data = report.to_json()
    assert list(data) == ["workloads", "devices", "summary", "unconverted", "problems", "notes"]
    (workload_,) = data["workloads"]
    assert list(workload_)[:6] == ["kind", "name", "namespace", "satisfiable", "reason",
                                   "requests"]
    assert list(workload_["requests"][0])[:4] == ["name", "count", "matching_devices", "nodes"]
    assert workload_["satisfiable"] is False and workload_["failure_kind"] == "capacity"
    assert data["devices"]["by_node"]["n1"] == {"total": 2, "matched": 2, "stranded": 0,
                                                "unknown": 0, "allocated": 2, "predicted": 0}
    assert data["summary"]["unsatisfiable"] == 1
    assert yaml.safe_load(yaml.safe_dump(data)) == data  # plain data only


def test_node_selector_against_known_labels() -> None:
    one = template("one", {"deviceClassName": "gpu.nvidia.com"})
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"pool": "a"}}}
    picky = deployment("picky", 1, uses("one"))
    picky["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "b"}
    got = result([one, picky], [gpus("n1", 1), node])
    assert got["picky"].failure_kind == "no-node"
    assert got["picky"].reason == "0 of 1 pod placed; no known node matches the pod's " \
                                  "nodeSelector (pool=b)"
    picky["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    assert result([one, picky], [gpus("n1", 1), node])["picky"].satisfiable


def test_all_mode_constraint_violation_is_an_error_as_in_the_allocator() -> None:
    """allocationMode All with matchAttribute on devices that differ: the structured allocator
    returns "claim ml/…, request gpu: cannot add device gpu.nvidia.com/n1/gpu-1 because a claim
    constraint would not be satisfied" (an error that aborts scheduling, found by the Go
    oracle, tests/oracle/test_allocate_oracle.py), not "does not fit"."""
    every = template("every", {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
                     [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}])
    got = result([every, deployment("every", 1, uses("every"))], [gpus("n1", 2), gpus("n2", 1)])
    assert got["every"].failure_kind == "error"
    assert ("request gpu: cannot add device gpu.nvidia.com/n1/gpu-1 because a claim constraint "
            "would not be satisfied") in got["every"].reason
    # one device, or devices that agree: no error
    assert result([every, deployment("every", 1, uses("every"))], [gpus("n1", 1)])[
        "every"].satisfiable
