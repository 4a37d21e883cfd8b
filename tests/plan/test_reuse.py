"""The placement's reuse between pods of one shape (feasible nodes, nodes known to be full,
empty-cluster answers, all keyed by the claims' content rather than by which workload they
belong to) must not change a single result: the whole report with reuse equals the report of
the plain path, where every pod searches every node from scratch.

Randomised inventories of a few nodes (exclusive GPUs, shareable GPUs with consumable memory,
partitioned GPUs with shared counters, tainted GPUs, a network-attached pool, Node labels) and
workloads drawn from a small pool of claim specs, so that many workloads share a shape:
counts, selectors, allocationMode All, firstAvailable, capacity requests, tolerations,
matchAttribute/distinctAttribute, shared ResourceClaims, nodeSelectors and DaemonSets.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.dra.cel import engine_available
from gpudra.plan import PlanOptions, parse_inventory, plan
from gpudra.plan.allocate import Simulation
from gpudra.plan.demand import extract_demand
from gpudra.plan.matching import Matcher
from gpudra.plan.resolve import resolve

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

API = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
NUMA = "resource.kubernetes.io/numaNode"
PRODUCTS = ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA L4")
SELECTORS = (
    f'device.attributes["{DRIVER}"].productName == "{PRODUCTS[1]}"',
    f'device.attributes["{DRIVER}"].productName.startsWith("NVIDIA A")',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
)
SETTINGS = settings(max_examples=60, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def inventories(draw) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 5))):
        node = f"node-{n}"
        devices: list[dict[str, Any]] = []
        counters: list[dict[str, Any]] = []
        for g in range(draw(st.integers(0, 4))):
            device: dict[str, Any] = {"name": f"gpu-{g}", "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": draw(st.sampled_from(PRODUCTS))},
                NUMA: {"int": draw(st.integers(0, 1))}},
                "capacity": {"memory": {"value": draw(st.sampled_from(["24Gi", "80Gi"]))}}}
            kind = draw(st.sampled_from(["plain", "plain", "shared", "partitioned", "tainted"]))
            if kind == "shared":
                device["allowMultipleAllocations"] = True
                device["capacity"]["memory"]["requestPolicy"] = {
                    "default": "10Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
            elif kind == "partitioned":
                counters.append({"name": f"set-{g}", "counters": {"slices": {"value": "4"}}})
                device["consumesCounters"] = [{"counterSet": f"set-{g}", "counters": {
                    "slices": {"value": str(draw(st.sampled_from([2, 4])))}}}]
                devices.append({**device, "name": f"gpu-{g}-half", "consumesCounters": [
                    {"counterSet": f"set-{g}", "counters": {"slices": {"value": "2"}}}]})
            elif kind == "tainted":
                device["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
            devices.append(device)
        spec: dict[str, Any] = {"driver": DRIVER, "nodeName": node, "devices": devices,
                                "pool": {"name": node, "generation": 1,
                                         "resourceSliceCount": 1}}
        if counters:
            spec["sharedCounters"] = counters
        objects.append({"apiVersion": API, "kind": "ResourceSlice",
                        "metadata": {"name": f"{node}-slice"}, "spec": spec})
        if draw(st.booleans()):
            objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": node, "labels": {"zone": draw(st.sampled_from(["a", "b"]))}}})
    if draw(st.booleans()):
        objects.append({"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "net"},
                        "spec": {"driver": DRIVER, "allNodes": True,
                                 "pool": {"name": "net", "generation": 1,
                                          "resourceSliceCount": 1},
                                 "devices": [{"name": f"net-{i}", "attributes": {
                                     "type": {"string": "gpu"},
                                     "productName": {"string": PRODUCTS[2]}}}
                                     for i in range(draw(st.integers(1, 2)))]}})
    return objects


@st.composite
def exactly(draw) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": DRIVER}
    if draw(st.integers(0, 5)) == 0:
        request["allocationMode"] = "All"
    else:
        request["count"] = draw(st.integers(1, 3))
    chosen = draw(st.lists(st.sampled_from(SELECTORS), max_size=2, unique=True))
    if chosen:
        request["selectors"] = [{"cel": {"expression": e}} for e in chosen]
    if draw(st.integers(0, 3)) == 0:
        request["capacity"] = {"requests": {"memory": draw(st.sampled_from(["8Gi", "30Gi"]))}}
    if draw(st.integers(0, 2)) == 0:
        request["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
    return request


@st.composite
def claim_specs(draw) -> dict[str, Any]:
    requests = []
    for r in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 3)) == 0:
            requests.append({"name": f"r{r}", "firstAvailable": [
                {"name": f"s{i}", **draw(exactly())} for i in range(2)]})
        else:
            requests.append({"name": f"r{r}", "exactly": draw(exactly())})
    devices: dict[str, Any] = {"requests": requests}
    constraint = draw(st.sampled_from([None, "matchAttribute", "distinctAttribute"]))
    if constraint:
        devices["constraints"] = [{constraint: NUMA}]
    return {"devices": devices}


@st.composite
def demands(draw) -> list[dict[str, Any]]:
    specs = draw(st.lists(claim_specs(), min_size=1, max_size=3))
    objects: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        objects.append({"apiVersion": API, "kind": "ResourceClaimTemplate",
                        "metadata": {"name": f"t{i}", "namespace": "ml"}, "spec": {"spec": spec}})
        objects.append({"apiVersion": API, "kind": "ResourceClaim",
                        "metadata": {"name": f"c{i}", "namespace": "ml"}, "spec": spec})
    for w in range(draw(st.integers(1, 8))):
        spec_index = draw(st.integers(0, len(specs) - 1))
        source = ({"resourceClaimName": f"c{spec_index}"} if draw(st.integers(0, 5)) == 0
                  else {"resourceClaimTemplateName": f"t{spec_index}"})
        pod: dict[str, Any] = {"resourceClaims": [{"name": "gpu", **source}],
                               "containers": [{"name": "c"}]}
        if draw(st.integers(0, 3)) == 0:
            pod["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
        daemon = draw(st.integers(0, 6)) == 0
        spec: dict[str, Any] = {"template": {"spec": pod}}
        if not daemon:
            spec["replicas"] = draw(st.integers(0, 4))
        objects.append({"apiVersion": "apps/v1", "kind": "DaemonSet" if daemon else "Deployment",
                        "metadata": {"name": f"w{w}", "namespace": "ml"}, "spec": spec})
    return objects


@SETTINGS
@given(inventory=inventories(), demand=demands(), order=st.sampled_from(["scarcest", "input"]))
def test_reuse_changes_no_result(inventory: list, demand: list, order: str) -> None:
    devices = parse_inventory(inventory)
    reused = plan(demand, devices, PlanOptions(order=order)).to_json()
    plain = plan(demand, devices, PlanOptions(order=order, reuse=False)).to_json()
    for report in (reused, plain):
        del report["summary"]["seconds"]
    assert reused == plain


@SETTINGS
@given(inventory=inventories(), demand=demands())
def test_grouping_equal_devices_changes_no_result(inventory: list, demand: list) -> None:
    """Devices that agree on every value the selectors read are judged once per group, and a
    selection's devices per node are put together from each group's (resolve); judged device
    by device instead, every placement, count and node list is the same. Only how many CEL
    programs ran may differ."""
    devices = parse_inventory(inventory)
    grouped = plan(demand, devices, PlanOptions()).to_json()
    single = plan(demand, devices, PlanOptions(memoise=False)).to_json()
    for report in (grouped, single):
        for counter in ("seconds", "selector_results", "cel_evaluations"):
            del report["summary"][counter]
    assert grouped == single
    assert _resolved(demand, devices, memoise=True)[1] == \
        _resolved(demand, devices, memoise=False)[1]


def test_a_selection_of_several_groups_is_split_per_node_as_device_by_device() -> None:
    """Two products on each of two nodes, one selector matching both: two groups, and the
    devices of each node in index order, as a walk of every device gives them."""
    inventory = [{"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": node},
                  "spec": {"driver": DRIVER, "nodeName": node,
                           "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                           "devices": [{"name": f"gpu-{g}", "attributes": {
                               "type": {"string": "gpu"},
                               "productName": {"string": ("NVIDIA A100", "NVIDIA A30")[g % 2]}}}
                               for g in range(4)]}}
                 for node in ("node-a", "node-b")]
    claim = {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": DRIVER, "selectors": [{"cel": {"expression": SELECTORS[1]}}]}}]}}
    objects = [{"apiVersion": API, "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"}, "spec": claim},
               {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
                         "containers": [{"name": "c", "image": "x", "resources": {
                             "claims": [{"name": "gpu"}]}}]}}]
    devices = parse_inventory(inventory)
    parts, grouped = _resolved(objects, devices, memoise=True)
    assert parts == [2]
    assert grouped == _resolved(objects, devices, memoise=False)[1]
    (by_node, *_), = grouped
    assert by_node == {"node-a": (0, 1, 2, 3), "node-b": (4, 5, 6, 7)}


def _resolved(objects: list, devices: Any, memoise: bool) -> tuple[list[int | None], list]:
    """Per resolved alternative: how many groups of equal devices its selection is made of
    (None: judged device by device), and its devices per node, network-attached devices,
    nodes, most and fewest on one node."""
    demand = extract_demand(objects)
    matcher = Matcher(devices.devices, memoise=memoise)
    matcher.precompile([*SELECTORS, *(e for c in demand.classes.values() for e in c.selectors)])
    parts: list[int | None] = []
    splits = []
    for claim in resolve(demand, matcher).values():
        for request in claim.requests:
            for alt in request.alternatives:
                selected = alt.selected.parts
                parts.append(None if selected is None else len(selected))
                splits.append((dict(alt.by_node), alt.network, alt.nodes, alt.widest,
                               alt.narrowest))
    return parts, splits


def test_pods_of_one_shape_in_different_workloads_share_the_search(monkeypatch) -> None:
    """Three workloads whose claims have equal content (each its own template): two GPUs on
    distinct NUMA nodes per pod, which only node n5 has (n0-n4 have free GPUs, all on NUMA
    node 0, so only a search rules them out). With reuse the second and third workloads go
    straight to n5; placements are the plain path's."""
    def node(n: int) -> dict[str, Any]:
        return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"n{n}"},
                "spec": {"driver": DRIVER, "nodeName": f"n{n}",
                         "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": f"gpu-{g}", "attributes": {
                             "type": {"string": "gpu"},
                             NUMA: {"int": g % 2 if n == 5 else 0}}} for g in range(4)]}}

    objects: list[dict[str, Any]] = []
    for w in range(3):
        objects.append({"apiVersion": API, "kind": "ResourceClaimTemplate",
                        "metadata": {"name": f"t{w}", "namespace": "ml"},
                        "spec": {"spec": {"devices": {
                            "requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
                                                                     "count": 2}}],
                            "constraints": [{"distinctAttribute": NUMA}]}}}})
        objects.append({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": f"w{w}", "namespace": "ml"},
                        "spec": {"replicas": 1, "template": {"spec": {
                            "resourceClaims": [{"name": "gpu",
                                                "resourceClaimTemplateName": f"t{w}"}],
                            "containers": [{"name": "c"}]}}}})
    inventory = parse_inventory([node(n) for n in range(6)])
    searched: list[str] = []
    original = Simulation._allocate_on

    def counting(self: Simulation, node_name: str, *args: Any) -> Any:
        searched.append(node_name)
        return original(self, node_name, *args)

    monkeypatch.setattr(Simulation, "_allocate_on", counting)
    reused = plan(objects, inventory)
    reused_searches, searched[:] = list(searched), []
    plain = plan(objects, inventory, PlanOptions(reuse=False))
    assert [w.placement for w in reused.workloads] == [{"n5": 1}, {"n5": 1}, {}]
    assert reused.workloads[2].failure_kind == "competition"
    assert [w.to_json() for w in plain.workloads] == [w.to_json() for w in reused.workloads]
    # reuse: n0-n5 for the first pod, n5 for the second, none for the third (n5 is full by
    # the free-device count; n0-n4 are known not to fit); then n0-n5 twice on an empty
    # cluster ("would it fit" and "how many fit alone"). Plain: n0-n5, n0-n5, n0-n4, the same.
    assert reused_searches == [f"n{n}" for n in range(6)] + ["n5"] + [
        f"n{n}" for n in range(6)] * 2
    assert len(searched) == 6 + 6 + 5 + 6 + 6


def _feasible_by_definition(claims: Any, eligible: tuple[str, ...]) -> tuple[str, ...]:
    """Eligible nodes where every request has an alternative with at least `needed` matching
    devices on the node plus network-attached ones: counted device by device."""
    def enough(alt: Any, node: str) -> bool:
        return len(alt.by_node.get(node, ())) + len(alt.network) >= alt.request.needed

    return tuple(node for node in eligible
                 if all(any(enough(alt, node) for alt in request.alternatives)
                        for claim in claims for request in claim.requests))


@SETTINGS
@given(inventory=inventories(), demand=demands(), reuse=st.booleans())
def test_feasible_nodes_are_those_with_enough_matching_devices(
        inventory: list, demand: list, reuse: bool) -> None:
    """The feasibility shared per selection and count (and the shortcut when every node is
    eligible) gives what counting each eligible node's matching devices gives."""
    from gpudra.plan.allocate import SimulationOptions
    from gpudra.plan.demand import extract_demand
    from gpudra.plan.matching import Matcher
    from gpudra.plan.resolve import resolve, resolved_for, unresolved

    devices = parse_inventory(inventory)
    workloads = extract_demand(demand)
    claims = resolve(workloads, Matcher(devices.devices))
    simulation = Simulation(devices, SimulationOptions(reuse=reuse))
    for workload in workloads.workloads:
        for group in workload.groups:
            eligible = simulation.eligible_nodes(group.node_selector)
            resolved = [resolved_for(c, claims) or unresolved(c) for c in group.claims]
            shape = (simulation._shape(resolved), id(eligible))
            assert simulation._feasible_nodes(shape, resolved, eligible) == \
                _feasible_by_definition(resolved, eligible)
