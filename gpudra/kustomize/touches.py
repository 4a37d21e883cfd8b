"""Which container of its target a patch gives a device-plugin request, and how.

A strategic-merge patch names containers by `name` inside the pod specs of a partial object;
a JSON6902 operation names them by list index in a JSON pointer. Both are resolved against the
target object (as the base has it), so audit can tell a count change from a new GPU, and
convert can move the count onto the claim the container got.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpudra.k8s.devices import DeviceResource, classify
from gpudra.k8s.gpu_use import device_keys
from gpudra.k8s.objects import PathT
from gpudra.kustomize.build import Resource
from gpudra.kustomize.patches import Patch, PatchDoc, device_ops
from gpudra.k8s.quantity import parse_device_count
from gpudra.k8s.workloads import ContainerRef, PodSpecRef, WorkloadTable

_LISTS = ("containers", "initContainers", "sidecars", "ephemeralContainers")


@dataclass(frozen=True)
class Touch:
    """One device-plugin key a patch sets (or removes) on its target."""

    resource: DeviceResource
    raw: Any                      # the value the patch writes (None: removed or moved)
    section: str | None           # limits | requests (None when the shape is unknown)
    patch_path: PathT             # where in the patch document (JSON6902: (op index, ...))
    line: int
    pod: PathT | None = None      # pod spec path in the target
    container: ContainerRef | None = None  # the target's container; None: the patch adds one
    container_name: str | None = None
    op: str | None = None         # JSON6902 operation; None for strategic merge
    shape: str | None = None      # why gpudra cannot place it, if it cannot

    @property
    def count(self) -> int | None:
        return parse_device_count(self.raw).value if self.raw is not None else None


def touches(patch: Patch, doc: PatchDoc, target: Resource | None,
            target_data: Mapping[str, Any] | None, table: WorkloadTable) -> list[Touch]:
    if patch.json6902:
        return _json_touches(patch, doc, target, target_data, table)
    return _merge_touches(patch, doc, target, target_data, table)


def _target_specs(target: Resource | None, data: Mapping[str, Any] | None,
                  table: WorkloadTable) -> dict[PathT, PodSpecRef]:
    if target is None or data is None:
        return {}
    return {spec.path: spec for spec in table.pod_specs(target.group, target.kind, data)}


def _merge_touches(patch: Patch, doc: PatchDoc, target: Resource | None,
                   target_data: Mapping[str, Any] | None, table: WorkloadTable) -> list[Touch]:
    data = doc.data if isinstance(doc.data, Mapping) else {}
    group = str(data.get("apiVersion") or "").rpartition("/")[0]
    kind = str(data.get("kind") or (target.kind if target else ""))
    base_specs = _target_specs(target, target_data, table)
    found: list[Touch] = []
    covered: set[PathT] = set()
    for spec in table.pod_specs(group, kind, data):
        base = base_specs.get(spec.path)
        for ref in spec.containers:
            resources = ref.data.get("resources")
            if not isinstance(resources, Mapping):
                continue
            list_key = next((p for p in ref.path[len(spec.path):] if p in _LISTS), None)
            original = _by_name(base, list_key, ref.name) if base is not None else None
            for section in ("limits", "requests"):
                values = resources.get(section)
                for key, raw in values.items() if isinstance(values, Mapping) else ():
                    device = classify(key)
                    if device is None or not str(key).startswith("nvidia.com/"):
                        continue
                    path = ref.path + ("resources", section, key)
                    covered.add(path)
                    found.append(Touch(device, raw, section, path, patch.line_of(doc, path),
                                       spec.path, original, ref.name))
    for path, key, raw in device_keys(data):
        device = classify(key)  # never None: device_keys yields device-plugin resources
        if path not in covered and device is not None:
            found.append(Touch(device, raw, None, path, patch.line_of(doc, path),
                               shape="a device request outside any container"))
    return found


def _by_name(spec: PodSpecRef, list_key: str | None, name: str | None) -> ContainerRef | None:
    for ref in spec.containers:
        if ref.name == name and list_key in ref.path[len(spec.path):]:
            return ref
    return None


def _json_touches(patch: Patch, doc: PatchDoc, target: Resource | None,
                  target_data: Mapping[str, Any] | None, table: WorkloadTable) -> list[Touch]:
    base_specs = _target_specs(target, target_data, table)
    found: list[Touch] = []
    for op in device_ops(doc.data):
        line = patch.line_of(doc, (op.index, "path"))
        raw = op.value if op.op in ("add", "replace") else None
        touch = Touch(op.resource, raw, None, (op.index,), line, op=op.op)
        pod = next((p for p in sorted(base_specs, key=len, reverse=True)
                    if op.path[: len(p)] == p), None)
        rest = op.path[len(pod):] if pod is not None else ()
        if pod is None or len(rest) != 5 or rest[0] not in _LISTS or \
                not isinstance(rest[1], int) or rest[2] != "resources":
            found.append(replace(touch, shape="an operation on a path gpudra does not map to "
                                              "a container's resources"))
            continue
        spec = base_specs[pod]
        container = next((c for c in spec.containers if c.path == pod + rest[:2]), None)
        found.append(replace(touch, pod=pod, container=container, section=rest[3],
                             container_name=container.name if container else None,
                             shape=None if op.whole else "an operation that writes a whole "
                                                          "resources block"))
    return found
