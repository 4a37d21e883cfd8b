"""plan's per-node allocation (gpudra/plan/allocate.py) against the structured allocator the
scheduler runs (k8s.io/dynamic-resource-allocation v0.37.2 structured.NewAllocator/Allocate,
through the Go oracle), on randomised inventories of one node.

Each example is one pod's ResourceClaims on one node: full GPUs with pcieRoot/product/memory,
MIG devices that consume shared counters of their parent (partitionable devices), a GPU with
allowMultipleAllocations and a memory requestPolicy (consumable capacity), requests with
counts, allocationMode All, firstAvailable alternatives, selectors, capacity requests, and
matchAttribute/distinctAttribute constraints. Both sides get the same objects; they must agree
on whether the pod fits and, when it does, on exactly which device each request gets (the
allocator's answer is the first in its search order, which plan mirrors).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.dra.cel import engine_available
from gpudra.plan.allocate import Simulation
from gpudra.plan.demand import CHART_CLASSES, extract_demand
from gpudra.plan.engine import _expressions
from gpudra.plan.inventory import parse_inventory
from gpudra.plan.matching import Matcher
from gpudra.plan.node_search import MustFail
from gpudra.plan.resolve import resolve, resolved_for
from tests.oracle.client import Oracle

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

NODE = "n1"
DRIVER = "gpu.nvidia.com"
API = "resource.k8s.io/v1"
PCIE = "resource.kubernetes.io/pcieRoot"
PRODUCTS = ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")
PROFILES = {"1g.10gb": ("10Gi", 1), "2g.20gb": ("20Gi", 2), "3g.40gb": ("40Gi", 4)}
SELECTORS = (
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0',
    f'device.attributes["{DRIVER}"].productName == "{PRODUCTS[1]}"',
    f'device.attributes["{DRIVER}"].productName.startsWith("NVIDIA A")',
    f'device.attributes["{DRIVER}"].?profile.orValue("") == "1g.10gb"',
    f'has(device.attributes["{PCIE.split("/")[0]}"].pcieRoot)',
)

SETTINGS = settings(max_examples=250, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _classes() -> list[dict[str, Any]]:
    return [{"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
             "spec": {"selectors": [{"cel": {"expression": e}} for e in selectors]}}
            for name, selectors in CHART_CLASSES.items()]


# --- inventories ------------------------------------------------------------------------------

@st.composite
def inventories(draw) -> list[dict[str, Any]]:
    """The node's slices: GPUs (some partitioned into MIG devices with shared counters), and
    maybe one shareable GPU."""
    devices: list[dict[str, Any]] = []
    counter_sets: list[dict[str, Any]] = []
    for gpu in range(draw(st.integers(1, 5))):
        attributes: dict[str, Any] = {"type": {"string": "gpu"},
                                      "productName": {"string": draw(st.sampled_from(PRODUCTS))}}
        if draw(st.integers(0, 4)):
            attributes[PCIE] = {"string": f"root-{draw(st.integers(0, 1))}"}
        memory = draw(st.sampled_from(["40Gi", "80Gi"]))
        mig = draw(st.integers(0, 2)) == 0
        device: dict[str, Any] = {"name": f"gpu-{gpu}", "attributes": attributes,
                                  "capacity": {"memory": {"value": memory}}}
        if mig:  # the GPU and its MIG devices take from one counter set: partitionable
            counter_sets.append({"name": f"gpu-{gpu}-set", "counters": {
                "memory": {"value": memory}, "slices": {"value": "4"}}})
            device["consumesCounters"] = [{"counterSet": f"gpu-{gpu}-set", "counters": {
                "memory": {"value": memory}, "slices": {"value": "4"}}}]
        devices.append(device)
        if mig:
            for index, profile in enumerate(draw(st.lists(st.sampled_from(sorted(PROFILES)),
                                                          min_size=1, max_size=3))):
                mig_memory, slices = PROFILES[profile]
                devices.append({"name": f"gpu-{gpu}-mig-{index}", "attributes": {
                    **attributes, "type": {"string": "mig"}, "profile": {"string": profile}},
                    "capacity": {"memory": {"value": mig_memory}},
                    "consumesCounters": [{"counterSet": f"gpu-{gpu}-set", "counters": {
                        "memory": {"value": mig_memory}, "slices": {"value": str(slices)}}}]})
    if draw(st.booleans()):
        policy = draw(st.sampled_from([
            {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}},
            {"default": "20Gi", "validValues": ["20Gi", "40Gi"]},
            {"default": "80Gi"}]))
        devices.append({"name": "shared-gpu", "allowMultipleAllocations": True, "attributes": {
            "type": {"string": "gpu"}, "productName": {"string": PRODUCTS[0]},
            PCIE: {"string": "root-0"}},
            "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}})
    slices = [_slice("devices", devices, 2 if counter_sets else 1)]
    if counter_sets:
        slices.append(_slice("counters", [], 2, counter_sets))
    return slices


def _slice(name: str, devices: list, count: int, counters: list | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": NODE,
                            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": count}}
    if devices:
        spec["devices"] = devices
    if counters:
        spec["sharedCounters"] = counters
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-{name}"},
            "spec": spec}


# --- claims -------------------------------------------------------------------------------------

@st.composite
def exact(draw) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(
        ["gpu.nvidia.com", "gpu.nvidia.com", "mig.nvidia.com"]))}
    if draw(st.integers(0, 5)) == 0:
        request["allocationMode"] = "All"
    else:
        request["count"] = draw(st.sampled_from([1, 1, 1, 2, 3]))
    if draw(st.integers(0, 2)) == 0:
        request["selectors"] = [{"cel": {"expression": draw(st.sampled_from(SELECTORS))}}]
    if draw(st.integers(0, 4)) == 0 and request["deviceClassName"] == "gpu.nvidia.com":
        request["capacity"] = {"requests": {"memory": draw(st.sampled_from(
            ["5Gi", "10Gi", "30Gi", "40Gi"]))}}
    return request


@st.composite
def claims(draw) -> list[dict[str, Any]]:
    out = []
    for index in range(draw(st.sampled_from([1, 1, 2]))):
        requests = []
        for number in range(draw(st.integers(1, 2))):
            name = f"r{number}"
            if draw(st.integers(0, 3)) == 0:
                alternatives = draw(st.lists(exact(), min_size=1, max_size=3))
                requests.append({"name": name, "firstAvailable": [
                    {"name": f"s{i}", **a} for i, a in enumerate(alternatives)]})
            else:
                requests.append({"name": name, "exactly": draw(exact())})
        devices: dict[str, Any] = {"requests": requests}
        if draw(st.integers(0, 2)) == 0:
            attribute = draw(st.sampled_from([PCIE, f"{DRIVER}/productName"]))
            kind = draw(st.sampled_from(["matchAttribute", "matchAttribute", "distinctAttribute"]))
            constraint: dict[str, Any] = {kind: attribute}
            if len(requests) > 1 and draw(st.booleans()):
                constraint["requests"] = [requests[0]["name"]]
            devices["constraints"] = [constraint]
        out.append({"apiVersion": API, "kind": "ResourceClaim",
                    "metadata": {"name": f"claim-{index}", "namespace": "ml",
                                 "uid": f"uid-{index}"},
                    "spec": {"devices": devices}})
    return out


# --- both sides ---------------------------------------------------------------------------------

_MUST = re.compile(r"request (\S+): cannot add device (\S+) because a claim constraint")


def gpudra_allocation(slices: list[dict], claim_objects: list[dict]) -> Counter | tuple | None:
    """What plan allocates for one pod with these claims on the node: (claim, request,
    device) picks, None when the pod does not fit, or ("error", request, device) when the
    allocator would return an error (allocationMode All refused by a constraint)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "c"}], "resourceClaims": [
               {"name": f"c{i}", "resourceClaimName": c["metadata"]["name"]}
               for i, c in enumerate(claim_objects)]}}
    inventory = parse_inventory(slices)
    assert not inventory.problems, inventory.problems
    demand = extract_demand([*_classes(), *claim_objects, pod])
    matcher = Matcher(inventory.devices)
    matcher.precompile(_expressions(demand))
    resolved = resolve(demand, matcher)
    group = demand.workloads[0].groups[0]
    pod_claims = tuple(resolved_for(c, resolved) for c in group.claims)
    assert all(c is not None and not c.errors for c in pod_claims), pod_claims
    try:
        picks = Simulation(inventory)._allocate_on(NODE, pod_claims, set())
    except MustFail as failure:
        return ("error", *_MUST.search(failure.message or "").groups())
    if picks is None:
        return None
    return Counter((claim_objects[p.claim]["metadata"]["name"], p.request,
                    inventory.devices[p.device].name) for p in picks)


def kubernetes_allocation(oracle: Oracle, slices: list[dict], claim_objects: list[dict]
                          ) -> Counter | tuple | None:
    answer = oracle.allocate({"metadata": {"name": NODE}}, _classes(), slices, claim_objects)
    if answer["error"] is not None:
        found = _MUST.search(answer["error"])
        assert found, answer["error"]  # the only error these inputs may cause
        return ("error", *found.groups())
    if answer["results"] is None:
        return None
    return Counter((claim["metadata"]["name"], result["request"], result["device"])
                   for claim, allocation in zip(claim_objects, answer["results"])
                   for result in allocation["devices"]["results"])


@SETTINGS
@given(slices=inventories(), claim_objects=claims())
def test_plan_allocates_what_the_scheduler_allocates(slices: list[dict], claim_objects: list[dict],
                                                     oracle: Oracle) -> None:
    assert gpudra_allocation(slices, claim_objects) == \
        kubernetes_allocation(oracle, slices, claim_objects)
