"""What the NVIDIA DRA driver publishes on its devices: attributes, capacities, removals.

Source: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (`cmd/gpu-kubelet-plugin/deviceinfo.go`,
`partitions.go`, `nvlib.go`) and its older tags v25.3.x/v25.8.x/v25.12.0; see
docs/dra-reference.md section 7. The v0.5.0 line (main @ 95932046, 2026-08-07; the release tag
is not in the index) adds `resource.kubernetes.io/numaNode` (GPU, MIG, VFIO; replaces the VFIO
`numa` attribute), the `shares` capacity (driver gate ConsumableShares with
`--consumable-shares=<N>`) and, behind the FabricManagerPartitioning gate, `gpuModuleID` and
`partition<N>` (`deviceinfo.go`, `consumable_shares.go`).

Unqualified names live in CEL under the driver's domain
(`device.attributes["gpu.nvidia.com"].productName`); qualified standard names under their own
prefix (`device.attributes["resource.kubernetes.io"].pciBusID`).

A selector that reads a name the device does not carry is not a compile error (attributes are
dynamically typed) but a runtime `no such key` that aborts allocation, so this catalogue is what
lets gpudra catch it before the scheduler does.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

NVIDIA_DOMAIN = "gpu.nvidia.com"
STANDARD_DOMAIN = "resource.kubernetes.io"


class DeviceType(str, enum.Enum):
    """The driver's `type` attribute; each NVIDIA DeviceClass selects exactly one."""

    GPU = "gpu"
    MIG = "mig"
    VFIO = "vfio"


ALL_TYPES = frozenset(DeviceType)

# The chart's DeviceClasses and the device type each one's selector pins.
CLASS_DEVICE_TYPE: dict[str, DeviceType] = {
    "gpu.nvidia.com": DeviceType.GPU,
    "mig.nvidia.com": DeviceType.MIG,
    "vfio.gpu.nvidia.com": DeviceType.VFIO,
}


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    type: str  # CEL value type: string, int, bool, version
    device_types: frozenset[DeviceType]
    note: str = ""

    @property
    def is_version(self) -> bool:
        return self.type == "version"


@dataclass(frozen=True, slots=True)
class Capacity:
    name: str
    device_types: frozenset[DeviceType]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Removed:
    """An attribute older driver releases published and current ones do not."""

    name: str
    last_release: str  # the last driver release line that published it
    removed_in: str
    replacement: str | None = None  # a CEL reference to use instead


def _types(*names: DeviceType) -> frozenset[DeviceType]:
    return frozenset(names)


_GPU_MIG = _types(DeviceType.GPU, DeviceType.MIG)

NVIDIA_ATTRIBUTES: dict[str, Attribute] = {a.name: a for a in (
    Attribute("type", "string", ALL_TYPES, '"gpu", "mig" or "vfio"'),
    Attribute("uuid", "string", ALL_TYPES, "GPU-… or MIG-… (static MIG only)"),
    Attribute("productName", "string", ALL_TYPES, 'raw NVML name, e.g. "NVIDIA A100-SXM4-80GB"'),
    Attribute("brand", "string", _GPU_MIG),
    Attribute("architecture", "string", _GPU_MIG, '"Ampere", "Hopper", "Ada Lovelace", …'),
    Attribute("cudaComputeCapability", "version", _GPU_MIG, "8.0 is published as 8.0.0"),
    Attribute("driverVersion", "version", _GPU_MIG),
    Attribute("cudaDriverVersion", "version", _GPU_MIG),
    Attribute("addressingMode", "string", _GPU_MIG, "ATS/HMM/None, since v25.12.0, optional"),
    Attribute("parentUUID", "string", _types(DeviceType.MIG)),
    Attribute("profile", "string", _types(DeviceType.MIG), 'e.g. "1g.10gb", "1g.10gb+me"'),
    Attribute("deviceID", "string", _types(DeviceType.VFIO)),
    Attribute("vendorID", "string", _types(DeviceType.VFIO)),
    Attribute("iommuFDEnabled", "bool", _types(DeviceType.VFIO)),
    Attribute("gpuModuleID", "int", _types(DeviceType.GPU, DeviceType.VFIO),
              "v0.5.0+, driver gate FabricManagerPartitioning"),
)}

# Qualified standard attributes (KEP-4381 / deviceattribute), as the NVIDIA driver sets them.
STANDARD_ATTRIBUTES: dict[str, Attribute] = {a.name: a for a in (
    Attribute("pciBusID", "string", ALL_TYPES, "since v25.12.0"),
    Attribute("pcieRoot", "string", ALL_TYPES, "only when it can be resolved"),
    Attribute("numaNode", "int", ALL_TYPES,
              "v0.5.0+ (KEP-6072), only when known; an `ints` list with DRAListTypeAttributes"),
)}

# With the driver's DynamicMIG gate a full GPU carries the MIG capacities too, so the GPU type is
# listed for them: a capacity check per class would be wrong on such nodes.
NVIDIA_CAPACITIES: dict[str, Capacity] = {c.name: c for c in (
    Capacity("memory", _GPU_MIG, "bytes (BinarySI)"),
    *(Capacity(name, _GPU_MIG) for name in (
        "multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")),
    Capacity("addressableMemory", _types(DeviceType.VFIO)),
    Capacity("shares", _GPU_MIG,
             "v0.5.0+, driver gate ConsumableShares, --consumable-shares=<N>"),
)}
_MEMORY_SLICE = re.compile(r"memorySlice\d+")
_PARTITION = re.compile(r"partition\d+")

REMOVED_ATTRIBUTES: dict[str, Removed] = {r.name: r for r in (
    Removed("index", "v25.3.x", "v25.8.0"),
    Removed("minor", "v25.3.x", "v25.8.0"),
    Removed("parentIndex", "v25.3.x", "v25.8.0", 'device.attributes["gpu.nvidia.com"].parentUUID'),
    Removed("pcieBusID", "v25.8.x", "v25.12.0", 'device.attributes["resource.kubernetes.io"].pciBusID'),
    Removed("numa", "v0.4.x", "v0.5.0", 'device.attributes["resource.kubernetes.io"].numaNode'),
)}


def is_capacity(name: str) -> bool:
    return name in NVIDIA_CAPACITIES or _MEMORY_SLICE.fullmatch(name) is not None


def capacity_types(name: str) -> frozenset[DeviceType]:
    if name in NVIDIA_CAPACITIES:
        return NVIDIA_CAPACITIES[name].device_types
    return _GPU_MIG if _MEMORY_SLICE.fullmatch(name) else frozenset()


def attribute(domain: str, name: str) -> Attribute | None:
    """The catalogue entry for a CEL reference `device.attributes[domain].name`, if any."""
    if domain == NVIDIA_DOMAIN:
        if _PARTITION.fullmatch(name):
            return Attribute(name, "int", _types(DeviceType.GPU, DeviceType.VFIO),
                             "v0.5.0+, driver gate FabricManagerPartitioning")
        return NVIDIA_ATTRIBUTES.get(name)
    if domain == STANDARD_DOMAIN:
        return STANDARD_ATTRIBUTES.get(name)
    return None


def is_version_attribute(domain: str, name: str) -> bool:
    entry = attribute(domain, name)
    return entry is not None and entry.is_version


def attribute_problem(domain: str, name: str, device_type: DeviceType | None = None) -> str | None:
    """Why `device.attributes[domain].name` fails on NVIDIA devices, or None when it is fine.

    `device_type` narrows the check when the request's class pins one type of device.
    """
    if domain == STANDARD_DOMAIN:
        return _standard_attribute_problem(name)
    if domain != NVIDIA_DOMAIN:
        return None
    if name in REMOVED_ATTRIBUTES:
        return _removed_message(REMOVED_ATTRIBUTES[name])
    if name in STANDARD_ATTRIBUTES:
        return (f"{name} is a standard attribute published under {STANDARD_DOMAIN}: "
                f'device.attributes["{STANDARD_DOMAIN}"].{name}')
    if is_capacity(name):
        return (f'{name} is a capacity, not an attribute: device.capacity["{NVIDIA_DOMAIN}"].'
                f'{name} (a quantity; compare with .compareTo(quantity("16Gi")) >= 0)')
    entry = attribute(domain, name)
    if entry is None:
        return (f"{NVIDIA_DOMAIN} publishes no attribute {name!r} "
                f"(attributes: {', '.join(sorted(NVIDIA_ATTRIBUTES))})")
    if device_type is not None and device_type not in entry.device_types:
        return (f"attribute {name!r} is published only for "
                f"{'/'.join(sorted(t.value for t in entry.device_types))} devices, "
                f"not for the {device_type.value} devices this class selects")
    return None


def capacity_problem(domain: str, name: str, device_type: DeviceType | None = None) -> str | None:
    """Why `device.capacity[domain].name` fails on NVIDIA devices, or None when it is fine."""
    if domain == STANDARD_DOMAIN:
        return (f"{STANDARD_DOMAIN} defines no capacities "
                f"(the NVIDIA driver publishes them under {NVIDIA_DOMAIN})")
    if domain != NVIDIA_DOMAIN:
        return None
    if not is_capacity(name):
        if name in NVIDIA_ATTRIBUTES or name in REMOVED_ATTRIBUTES or name in STANDARD_ATTRIBUTES:
            return f"{name} is an attribute, not a capacity: read it from device.attributes[...]"
        return (f"{NVIDIA_DOMAIN} publishes no capacity {name!r} "
                f"(capacities: {', '.join(sorted(NVIDIA_CAPACITIES))}, memorySlice<N>)")
    types = capacity_types(name)
    if device_type is not None and device_type not in types:
        return (f"capacity {name!r} is published only for "
                f"{'/'.join(sorted(t.value for t in types))} devices, "
                f"not for the {device_type.value} devices this class selects")
    return None


def _standard_attribute_problem(name: str) -> str | None:
    if name in STANDARD_ATTRIBUTES:
        return None
    if name.lower() in ("pcibusid", "pciebusid"):
        return f'the standard attribute is spelled pciBusID: device.attributes["{STANDARD_DOMAIN}"].pciBusID'
    if name.lower() in ("numa", "numanode"):
        return (f'the standard attribute is spelled numaNode (KEP-6072; the driver\'s VFIO '
                f'`numa` is gone since v0.5.0): device.attributes["{STANDARD_DOMAIN}"].numaNode')
    return (f"the NVIDIA driver publishes no {STANDARD_DOMAIN} attribute {name!r} "
            f"(only {', '.join(sorted(STANDARD_ATTRIBUTES))})")


def _removed_message(entry: Removed) -> str:
    text = (f"attribute {entry.name!r} was removed from the NVIDIA DRA driver in "
            f"{entry.removed_in} (last published by {entry.last_release}); selectors on it fail "
            "at runtime with `no such key`")
    if entry.replacement:
        text += f": use {entry.replacement}"
    return text
