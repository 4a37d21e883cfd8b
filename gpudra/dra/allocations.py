"""Claims in use whose devices their driver no longer publishes.

When a node goes back from the DRA driver to the device plugin (a wave rolled back, or its
label removed before its claim pods were drained) the driver's kubelet plugin stops and the
node's ResourceSlice goes, but a claim allocated there keeps its allocation, and the pod using
it keeps the GPU, while the device plugin hands the same GPUs out again. What is found here is
that claim: allocated, reserved for a pod, with a device that no slice of its driver publishes.

Facts (docs/facts.md): a claim is allocated when `status.allocation.devices.results[]`
(`driver`, `pool`, `device`) is set, and `status.reservedFor[]` names the pods that use it.
For a device of a node-local slice the scheduler's allocator restricts the allocation to that
node with the one term `matchFields: [{key: metadata.name, operator: In, values: [node]}]` in
`status.allocation.nodeSelector`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.dra.emit import NVIDIA_DRIVER
from gpudra.k8s.objects import as_mapping, dig

DeviceId = tuple[str, str]  # (pool, device)


@dataclass(frozen=True, slots=True)
class UnpublishedAllocation:
    """One device of a claim in use that its driver no longer publishes."""

    claim: str               # namespace/name
    device: str              # pool/device
    node: str | None         # the node the allocation is bound to, when it is bound to one
    users: tuple[str, ...]   # the pods the claim is reserved for (names)


def published_devices(slices: Iterable[Mapping[str, Any]],
                      driver: str = NVIDIA_DRIVER) -> frozenset[DeviceId]:
    """(pool, device) of every device `driver`'s slices publish."""
    found: set[DeviceId] = set()
    for obj in slices:
        spec = as_mapping(obj.get("spec"))
        if spec.get("driver") != driver:
            continue
        pool = str(dig(spec, "pool", "name") or "")
        devices = spec.get("devices")
        for device in devices if isinstance(devices, list) else ():
            name = as_mapping(device).get("name")
            if isinstance(name, str) and name:
                found.add((pool, name))
    return frozenset(found)


def unpublished_allocations(claims: Iterable[Mapping[str, Any]],
                            slices: Iterable[Mapping[str, Any]],
                            driver: str = NVIDIA_DRIVER) -> tuple[UnpublishedAllocation, ...]:
    """Devices of `driver` held by claims in use (reserved for a pod) that no slice publishes,
    in claim order."""
    published = published_devices(slices, driver)
    found = []
    for claim in claims:
        users = tuple(str(as_mapping(r).get("name") or "")
                      for r in _list(dig(claim, "status", "reservedFor")))
        if not users:
            continue  # allocated but used by no pod: nothing holds the GPU
        allocation = as_mapping(dig(claim, "status", "allocation"))
        node = allocation_node(allocation)
        name = f"{dig(claim, 'metadata', 'namespace') or ''}/{dig(claim, 'metadata', 'name') or ''}"
        for result in _list(dig(allocation, "devices", "results")):
            result = as_mapping(result)
            if result.get("driver") != driver:
                continue
            device = (str(result.get("pool") or ""), str(result.get("device") or ""))
            if device not in published:
                found.append(UnpublishedAllocation(name, "/".join(device), node, users))
    return tuple(found)


def allocation_node(allocation: Mapping[str, Any]) -> str | None:
    """The node an allocation is bound to: its node selector's one `metadata.name In [node]`
    field requirement, as the allocator writes it for node-local devices; None otherwise."""
    terms = _list(dig(allocation, "nodeSelector", "nodeSelectorTerms"))
    if len(terms) != 1:
        return None
    for requirement in _list(as_mapping(terms[0]).get("matchFields")):
        requirement = as_mapping(requirement)
        values = _list(requirement.get("values"))
        if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In" \
                and len(values) == 1 and isinstance(values[0], str):
            return values[0]
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
