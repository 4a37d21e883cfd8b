"""The scheduling oracle: what Kubernetes gives a workload before and after gpudra converts it.

Each golden case's before/ tree runs on nodes that advertise `nvidia.com/gpu` (device plugin,
GFD labels); its after/ tree on twins of those nodes that publish the same GPUs as a DRA
ResourceSlice. The real controllers create the pods (and, from the templates, their claims),
the real scheduler binds them and allocates the claims. What each GPU pod got is then put in the
same words on both sides: bound or not, the product of its node, and per container the kinds of
device it holds (product, or product and MIG profile). The two must agree.

The device plugin's grant per container is its limit on the node it was bound to; a DRA
container's is every device of the claims (or claim requests) it names.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane.cluster import APIError, ControlPlane
from tests.controlplane.nvidia import (
    A100_40GB,
    A100_80GB,
    H100_80GB,
    L4,
    Machine,
    Product,
    device_plugin_kind,
    device_plugin_node,
    dra_node,
    granted_kind,
)

GOLDEN = Path(__file__).resolve().parents[1] / "convert" / "golden"
# One machine of each kind; zones for the gfd-placement case's zone term.
MACHINES = [
    Machine("a100", A100_80GB, 8, labels={"topology.kubernetes.io/zone": "us-east-1a"}),
    Machine("a100-40", A100_40GB, 4, labels={"topology.kubernetes.io/zone": "us-east-1a"}),
    Machine("h100", H100_80GB, 8, labels={"topology.kubernetes.io/zone": "us-east-1b"}),
    Machine("l4", L4, 4, labels={"topology.kubernetes.io/zone": "us-east-1c"}),
    Machine("a100-mig", A100_80GB, 4, mig=(("1g.10gb+me", 1), ("1g.10gb", 6)),
            labels={"topology.kubernetes.io/zone": "us-east-1a"}),
]
# Cases whose workloads are built-in kinds the controller manager runs (CronJobs wait for
# their schedule; custom resources have no controller here).
CASES = ["example-job", "two-gpu-containers", "init-container", "mig", "gfd-placement",
         "deployment-requests-limits", "keep-node-selectors", "user-selectors",
         "add-toleration", "target-1-33", "target-1-32"]
# Cases whose conversion narrows placement on purpose, and the machines still meant to fit:
# user-selectors adds --product "NVIDIA H100", --min-memory 40Gi and a compute-capability floor.
NARROWED = {"user-selectors": {"h100"}}
SLOT_LABEL = "gpudra-test/slot"
VERBOSE = bool(__import__("os").environ.get("GPUDRA_ORACLE_VERBOSE"))
SETTLE = 8.0     # seconds with no change after which a pod still unbound is taken as unbound
DEADLINE = 120.0  # every case at once (the worlds fixture)
WORKLOAD_KINDS = {"Pod", "Job", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"}


def _objects(root: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(root.rglob("*.yaml")):
        found += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8-sig"))
                  if isinstance(d, dict) and "kind" in d]
    return found


def _pinned(obj: dict[str, Any], slot: str) -> dict[str, Any]:
    """`obj` in namespace `slot`, its pods held to the one node labelled with that slot. The
    same pin goes on both sides; it is the harness's, not part of what is compared."""
    obj = json.loads(json.dumps(obj))
    obj.setdefault("metadata", {})["namespace"] = slot
    spec = obj["spec"] if obj["kind"] == "Pod" else obj.get("spec", {}).get("template", {}).get(
        "spec")
    if spec is not None:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), SLOT_LABEL: slot}
        spec["tolerations"] = [*(spec.get("tolerations") or []),
                               {"key": SLOT_LABEL, "operator": "Equal", "value": slot,
                                "effect": "NoSchedule"}]
    return obj


def _slot_node(node: dict[str, Any], slot: str) -> dict[str, Any]:
    """The node of one slot: labelled for its pods, tainted against every other test's."""
    node["metadata"]["labels"][SLOT_LABEL] = slot
    node.setdefault("spec", {})["taints"] = [
        {"key": SLOT_LABEL, "value": slot, "effect": "NoSchedule"}]
    return node


def _create_world(plane: ControlPlane, case: str, world: str) -> dict[str, Machine]:
    """Each workload of the tree put alone on one machine of each kind (so workloads of a case
    never compete for a node); the slots made, each with its machine."""
    tree = GOLDEN / case / ("before" if world == "dp" else "after")
    objects = _objects(tree)
    workloads = [o for o in objects if o["kind"] in WORKLOAD_KINDS]
    others = [o for o in objects if o["kind"] not in WORKLOAD_KINDS]
    slots: dict[str, Machine] = {}
    for index, workload in enumerate(workloads):
        for machine in MACHINES:
            slot = f"{case}-{world}-{machine.name}-{index}"
            slots[slot] = machine
            if world == "dp":
                node = device_plugin_node(machine, slot)
            else:
                node, slice_ = dra_node(machine, slot)
                plane.admin.create("/apis/resource.k8s.io/v1/resourceslices", slice_)
            plane.create_node(_slot_node(node, slot))
            plane.ensure_namespace(slot)
            for obj in [*others, workload]:
                obj = _pinned(obj, slot)
                plane.admin.create(plane.object_path(obj).rpartition("/")[0], obj)
    return slots


def _grants(plane: ControlPlane, slots: dict[str, Machine],
            pods: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The GPU pods' grants per machine kind."""
    grants: dict[str, list[dict[str, Any]]] = {m.name: [] for m in MACHINES}
    for slot, machine in slots.items():
        grants[machine.name] += [_grant(plane, pod, machine.product) for pod in pods[slot]]
    return {name: sorted(found, key=repr) for name, found in grants.items()}


@pytest.fixture(scope="module")
def worlds(control_plane: ControlPlane) -> dict[tuple[str, str], Any]:
    """Every case in both worlds, created at once and settled together: each slot has its own
    node and namespace, so the cases cannot meet, and the waits overlap instead of adding up.
    (case, world) -> its grants, or the APIError that stopped its creation."""
    created: dict[tuple[str, str], dict[str, Machine] | APIError] = {}
    for case in CASES:
        for world in ("dp", "dra"):
            try:
                created[(case, world)] = _create_world(control_plane, case, world)
            except APIError as error:
                created[(case, world)] = error
    every_slot = {slot: machine for slots in created.values() if isinstance(slots, dict)
                  for slot, machine in slots.items()}
    pods = _settle(control_plane, every_slot)
    return {key: slots if isinstance(slots, APIError) else _grants(control_plane, slots, pods)
            for key, slots in created.items()}


def _gpu_pod(pod: dict[str, Any]) -> bool:
    spec = pod["spec"]
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    return bool(spec.get("resourceClaims")) or any(
        key.startswith("nvidia.com/") for c in containers
        for key in (c.get("resources", {}).get("limits") or {}))


def _settle(plane: ControlPlane, slots: dict[str, Machine]) -> dict[str, list[dict[str, Any]]]:
    """Wait until every GPU pod is bound, or nothing has changed for SETTLE seconds."""
    start = last_change = time.monotonic()
    seen: Any = None
    while True:
        pods: dict[str, list[dict[str, Any]]] = {slot: [] for slot in slots}
        for pod in plane.admin.get("/api/v1/pods")["items"]:
            if pod["metadata"]["namespace"] in pods and _gpu_pod(pod):
                pods[pod["metadata"]["namespace"]].append(pod)
        state = sorted((p["metadata"]["namespace"], p["metadata"]["name"],
                        _scheduled(p), p["spec"].get("nodeName"))
                       for found in pods.values() for p in found)
        now = time.monotonic()
        if state != seen:
            seen, last_change = state, now
        if all(pods.values()) and all(node for *_, node in state):
            return pods
        judged = all(verdict for _, _, verdict, _ in state)
        if (all(pods.values()) and judged and now - last_change > SETTLE) \
                or now - start > DEADLINE:
            return pods


def _scheduled(pod: dict[str, Any]) -> str:
    """The scheduler's last verdict on a pod ('' before its first attempt)."""
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return f"{condition['status']} {condition.get('message', '')}"
    return ""


def _grant(plane: ControlPlane, pod: dict[str, Any], product: Product) -> dict[str, Any]:
    spec, node = pod["spec"], pod["spec"].get("nodeName")
    containers = spec.get("initContainers", []) + spec.get("containers", [])
    held: dict[str, Counter[str]] = {}
    if node is None:
        return {"bound": False, "containers": {}, **({"why": _scheduled(pod)} if VERBOSE else {})}
    claims = _claims(plane, pod)
    for container in containers:
        got: Counter[str] = Counter()
        resources = container.get("resources", {})
        for resource, count in (resources.get("limits") or {}).items():
            kind = device_plugin_kind(resource, product)
            if kind:
                got[kind] += int(count)
        for reference in resources.get("claims") or []:
            for request, kind in claims.get(reference["name"], []):
                if reference.get("request") in (None, request.split("/")[0]):
                    got[kind] += 1
        if got:
            held[container["name"]] = got
    return {"bound": True,
            "containers": {name: dict(sorted(c.items())) for name, c in held.items()}}


def _claims(plane: ControlPlane, pod: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Pod claim name -> (request, device kind) of each allocated device."""
    namespace = pod["metadata"]["namespace"]
    generated = {s["name"]: s.get("resourceClaimName")
                 for s in pod.get("status", {}).get("resourceClaimStatuses", [])}
    slices = {(s["spec"]["pool"]["name"], d["name"]): d["attributes"]
              for s in plane.admin.get("/apis/resource.k8s.io/v1/resourceslices")["items"]
              for d in s["spec"].get("devices", [])}
    result: dict[str, list[tuple[str, str]]] = {}
    for entry in pod["spec"].get("resourceClaims", []):
        claim_name = entry.get("resourceClaimName") or generated.get(entry["name"])
        if not claim_name:
            continue
        claim = plane.admin.get(
            f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{claim_name}")
        allocation = claim.get("status", {}).get("allocation", {})
        result[entry["name"]] = [
            (r["request"], granted_kind(slices[(r["pool"], r["device"])]))
            for r in allocation.get("devices", {}).get("results", [])]
    return result


@pytest.mark.parametrize("case", CASES)
def test_converted_workload_gets_what_it_had(worlds: dict[tuple[str, str], Any],
                                             case: str) -> None:
    device_plugin, dra = worlds[(case, "dp")], worlds[(case, "dra")]
    for world, found in (("before", device_plugin), ("after", dra)):
        assert not isinstance(found, APIError), f"{case}: {world}/ was refused: {found}"
    assert any(g["bound"] for grants in device_plugin.values() for g in grants), \
        f"{case}: the original fits no machine of the inventory: {device_plugin}"
    if case in NARROWED:
        device_plugin = {machine: grants if machine in NARROWED[case]
                         else [{"bound": False, "containers": {}} for _ in grants]
                         for machine, grants in device_plugin.items()}
    assert dra == device_plugin


def test_the_oracle_reads_what_was_allocated(control_plane: ControlPlane) -> None:
    """The control: a claim on the MIG class on a node whose only GPU is partitioned reads as
    one MIG device of that profile, not as a whole GPU; and one the node cannot serve reads as
    unbound."""
    machine = Machine("ctl", A100_80GB, 1, mig=(("1g.10gb", 7),))
    node, slice_ = dra_node(machine, "control")
    control_plane.create_node(_slot_node(node, "control"))
    control_plane.admin.create("/apis/resource.k8s.io/v1/resourceslices", slice_)
    control_plane.ensure_namespace("control")
    for name, device_class in (("mig", "mig.nvidia.com"), ("whole", "gpu.nvidia.com")):
        template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": name, "namespace": "control"},
                    "spec": {"spec": {"devices": {"requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": name}],
                        "containers": [{"name": "c", "image": "x",
                                        "resources": {"claims": [{"name": "gpu"}]}}]}}
        control_plane.admin.create(
            "/apis/resource.k8s.io/v1/namespaces/control/resourceclaimtemplates", template)
        control_plane.admin.create("/api/v1/namespaces/control/pods", _pinned(pod, "control"))
    pods = _settle(control_plane, {"control": machine})["control"]
    grants = {p["metadata"]["name"]: _grant(control_plane, p, A100_80GB) for p in pods}
    assert grants == {"mig": {"bound": True,
                              "containers": {"c": {f"{A100_80GB.name} MIG 1g.10gb": 1}}},
                      "whole": {"bound": False, "containers": {}}}
