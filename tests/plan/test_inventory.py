"""ResourceSlice parsing: API versions, pools, capacities, counters, node placement."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.cel import Version
from gpudra.plan.inventory import Inventory, RequestPolicy, parse_inventory

FIXTURES = Path(__file__).parent / "fixtures"
GI, MI = 2**30, 2**20


def load(name: str) -> Inventory:
    return parse_inventory(list(yaml.safe_load_all((FIXTURES / name).read_text())))


def slice_(devices: list[dict[str, Any]], version: str = "v1", **spec: Any) -> dict[str, Any]:
    body = {"driver": "gpu.nvidia.com", "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": devices}
    body.update(spec)
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceSlice",
            "metadata": {"name": spec.get("name", "s1")}, "spec": body}


def test_versions_pools_and_order() -> None:
    inventory = load("inventory-a100-h100.yaml")
    names = [(d.node, d.name) for d in inventory.devices]
    # Pools sorted by name; the stale generation 2 of node-h100 (gpu-9) is ignored.
    assert names[:6] == [("node-a100", f"gpu-{i}") for i in range(4)] + [
        ("node-a100-40", "gpu-0"), ("node-a100-40", "gpu-1")]
    assert ("node-h100", "gpu-9") not in names
    assert len(inventory.devices) == 14 and not inventory.problems
    assert inventory.nodes == ("node-a100", "node-a100-40", "node-cpu", "node-h100")
    assert inventory.node_labels["node-cpu"]["node-role"] == "cpu"


def test_typed_values_and_domains() -> None:
    inventory = load("inventory-a100-h100.yaml")
    a100, beta1 = inventory.devices[0], inventory.devices[4]
    assert a100.qualified("gpu.nvidia.com/driverVersion") == Version(570, 124, 6)
    assert a100.qualified("resource.kubernetes.io/pcieRoot") == "pci0000:00"
    assert a100.qualified("other.example.com/pcieRoot") is None
    assert a100.capacity["memory"] == 80 * GI
    assert a100.by_domain["attributes"]["gpu.nvidia.com"]["productName"] == "NVIDIA A100-SXM4-80GB"
    assert a100.by_domain["attributes"]["resource.kubernetes.io"]["pciBusID"] == "0000:07:00.0"
    assert a100.by_domain["capacity"]["gpu.nvidia.com"]["memory"] == 80 * GI
    assert a100.device_type() == "gpu" and not a100.predicted
    # v1beta1 `basic:` wrapper
    assert beta1.qualified("gpu.nvidia.com/productName") == "NVIDIA A100-SXM4-40GB"
    assert beta1.capacity["memory"] == 40 * GI


def test_consumable_capacity_fields() -> None:
    inventory = load("inventory-consumable.yaml")
    shares4 = next(d for d in inventory.devices if d.node == "node-shares-4")
    assert shares4.allow_multiple_allocations
    assert shares4.request_policies["memory"] == RequestPolicy(
        Fraction(0), (), Fraction(0), Fraction(46068 * MI), Fraction(MI))
    assert shares4.request_policies["shares"] == RequestPolicy(
        Fraction(1), (), Fraction(1), Fraction(4), Fraction(1))
    assert shares4.capacity["shares"] == 4


def test_counters_network_devices_and_incomplete_pools() -> None:
    inventory = load("inventory-partitionable.yaml")
    assert inventory.counter_sets[("gpu.nvidia.com", "node-part", "gpu-0-counter-set")] == {
        "memorySlices": 8}
    whole = next(d for d in inventory.devices if d.name == "gpu-0" and d.node == "node-part")
    assert whole.consumes_counters[0].counter_set == "gpu-0-counter-set"
    assert whole.consumes_counters[0].counters == {"memorySlices": 8}
    links = [d for d in inventory.devices if d.driver == "fabric.example.com"]
    assert [d.node for d in links] == [None, None]
    assert links[0].label == "(network)/link-0"
    assert not any(d.node == "node-late" for d in inventory.devices)
    assert any("node-late is incomplete" in p for p in inventory.problems)


@pytest.mark.parametrize("device, problem", [
    ({"name": "d", "attributes": {"driverVersion": {"version": "570.124.06"}}},
     "'570.124.06' is not a semantic version"),
    ({"name": "d", "attributes": {"x": {}}}, "attribute 'x' has no int/bool/string/version value"),
    ({"name": "d", "attributes": {"x": {"int": "3"}}}, "is not an int"),
    ({"name": "d", "capacity": {"memory": {"value": "lots"}}},
     "capacity 'memory' is not a quantity"),
    ({"attributes": {}}, "no name"),
])
def test_bad_devices_are_reported_and_skipped(device: dict, problem: str) -> None:
    inventory = parse_inventory([slice_([device, {"name": "ok"}])])
    assert [d.name for d in inventory.devices] == ["ok"]
    assert len(inventory.problems) == 1 and problem in inventory.problems[0]


def test_lists_alpha_shapes_lists_and_per_device_nodes() -> None:
    listing = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "items": [
        slice_([{"name": "a", "basic": {"capacity": {"memory": "16Gi"},
                                        "attributes": {"ids": {"ints": [1, 2]}}}}],
               version="v1alpha3"),
        slice_([{"name": "b", "nodeName": "n7"}, {"name": "c", "allNodes": True}],
               name="s2", nodeName=None, pool={"name": "p2", "generation": 1,
                                               "resourceSliceCount": 1},
               perDeviceNodeSelection=True),
    ]}
    inventory = parse_inventory([listing])
    by_name = {d.name: d for d in inventory.devices}
    assert by_name["a"].capacity["memory"] == 16 * GI
    assert by_name["a"].attributes["ids"] == (1, 2)
    assert by_name["b"].node == "n7" and by_name["c"].node is None


def test_merge_keeps_allocator_order_and_marks_source() -> None:
    real = parse_inventory([slice_([{"name": "x"}], nodeName="b", pool={
        "name": "b", "generation": 1, "resourceSliceCount": 1})], source="cluster")
    other = parse_inventory([slice_([{"name": "y"}], nodeName="a", name="s0", pool={
        "name": "a", "generation": 1, "resourceSliceCount": 1})])
    merged = real.merged(other)
    assert [d.name for d in merged.devices] == ["y", "x"] and merged.source == "mixed"


def test_typed_lists_from_the_api_server_have_no_kind_per_item() -> None:
    item = slice_([{"name": "x"}])
    del item["kind"], item["apiVersion"]
    listing = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
               "metadata": {"resourceVersion": "1"}, "items": [item]}
    nodes = {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "n9"}}]}
    inventory = parse_inventory([listing, nodes])
    assert [d.name for d in inventory.devices] == ["x"] and "n9" in inventory.nodes


def _record(device: Any) -> list[Any]:
    """Every field of a device, mappings as their items in order (CEL maps iterate in it)."""
    import dataclasses

    values = [getattr(device, f.name) for f in dataclasses.fields(device)]
    values = [list(v.items()) if hasattr(v, "items") else v for v in values]
    view = device.by_domain
    return values + [[(d, list(names.items())) for d, names in view[kind].items()]
                     for kind in ("attributes", "capacity")]


def test_parsed_devices_equal_constructed_ones() -> None:
    """Parsing builds each device's record and CEL view in one pass, sharing capacities
    between devices that publish the same; the result is what Device(...) builds."""
    import dataclasses

    from gpudra.plan.inventory import Device

    names = [f.name for f in dataclasses.fields(Device) if f.init]
    overlapping = parse_inventory([slice_([{"name": f"gpu-{i}", "attributes": {
        "productName": {"string": "A"}, "gpu.nvidia.com/productName": {"string": "B"},
        "other.example.com/x": {"int": i}}, "capacity": {"memory": {"value": "1Gi"}}}
        for i in range(2)])]).devices
    devices = [d for fixture in ("inventory-a100-h100.yaml", "inventory-consumable.yaml",
                                 "inventory-mig.yaml", "inventory-partitionable.yaml")
               for d in load(fixture).devices] + list(overlapping)
    assert overlapping[0].by_domain["attributes"]["gpu.nvidia.com"] == {"productName": "B"}
    for device in devices:
        built = Device(**{n: getattr(device, n) for n in names})
        assert _record(device) == _record(built), device.name


def test_problems_come_in_pool_then_slice_order_and_only_for_slices_that_count() -> None:
    """Slices become devices as they are read (InventoryReader); what is reported is still
    decided per pool at the end: a slice without a driver first (in input order), then each
    pool by (driver, pool): its incompleteness, or its slices' bad devices by slice name. A
    superseded generation's bad device says nothing."""
    def named(name: str, pool: str, generation: int, count: int, bad: str) -> dict[str, Any]:
        data = slice_([{"name": "ok"}, {"name": bad, "attributes": {"x": {"nothing": 1}}}],
                      pool={"name": pool, "generation": generation, "resourceSliceCount": count})
        data["metadata"]["name"] = name
        return data

    nameless = slice_([{"name": "g"}], driver="")
    nameless["metadata"]["name"] = "no-driver"
    inventory = parse_inventory([
        named("b-2", "pool-b", 1, 2, "bad-b2"),
        named("old", "pool-b", 0, 1, "bad-old"),
        nameless,
        named("a-1", "pool-a", 3, 2, "bad-a1"),  # one of two slices: incomplete
        named("b-1", "pool-b", 1, 2, "bad-b1"),
    ])
    assert [p.split(":")[0] for p in inventory.problems] == [
        "ResourceSlice no-driver", "pool gpu.nvidia.com/pool-a is incomplete (1 of 2 slices of "
        "its newest generation)", "ResourceSlice b-1 device #1", "ResourceSlice b-2 device #1"]
    assert [(d.slice_name, d.name) for d in inventory.devices] == [("b-1", "ok"), ("b-2", "ok")]


def test_an_inventory_read_ends_in_the_oldest_generation_and_nothing_stays_frozen() -> None:
    """`plan --inventory` reads with the collector off; what it read then goes to the oldest
    generation, so that the collector's first pass afterwards does not scan it all (0.6 to
    0.8 s at 100,000 devices), and nothing is left frozen (frozen garbage is never freed)."""
    import gc

    from gpudra.plan.run import _inventory_files  # imported first: importing allocates

    gc.collect()  # every generation's count at zero: the collector's next pass is a young one
    errors: list = []
    inventory = _inventory_files([str(FIXTURES / "inventory-a100-h100.yaml")], errors, None)
    assert errors == [] and inventory is not None and inventory.devices
    assert gc.get_freeze_count() == 0
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert all(id(device) in oldest for device in inventory.devices)
