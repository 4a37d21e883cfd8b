"""Devices built like the NVIDIA DRA driver's, in API form (ResourceSlice device entries), and
every selector gpudra writes or lints, for comparing gpudra with the oracle.

Devices come from three places: tests/plan/fixtures/reference-devices.yaml (the documented
examples), one device per NVIDIA device type carrying every attribute and capacity
gpudra/dra/attributes.py lists for it, and the GPUs of tests/dra/test_selectors.py (GFD label
boundaries). A test feeds the same API form to both sides: gpudra through parse_inventory,
the oracle as is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gpudra.dra.attributes import (
    NVIDIA_ATTRIBUTES,
    NVIDIA_CAPACITIES,
    NVIDIA_DOMAIN,
    STANDARD_ATTRIBUTES,
    STANDARD_DOMAIN,
    DeviceType,
)
from gpudra.dra.cel import Version
from tests.dra.test_selectors import GPUS

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "plan" / "fixtures"
ROOT = TESTS.parent

# One value per catalogue name, as the driver would publish it (dra-reference section 7).
_SAMPLE_ATTRIBUTES: dict[str, Any] = {
    "type": None, "uuid": "GPU-5a1c2f4e", "productName": "NVIDIA H100 80GB HBM3",
    "brand": "Nvidia", "architecture": "Hopper", "cudaComputeCapability": "9.0.0",
    "driverVersion": "570.124.6", "cudaDriverVersion": "12.8.0", "addressingMode": "HMM",
    "parentUUID": "GPU-5a1c2f4e", "profile": "1g.10gb", "deviceID": "0x2330",
    "vendorID": "0x10de", "iommuFDEnabled": False, "gpuModuleID": 3,
    "pciBusID": "0000:07:00.0", "pcieRoot": "pci0000:00", "numaNode": 1,
}
_SAMPLE_CAPACITIES = {"memory": "80Gi", "multiprocessors": "132", "copyEngines": "7",
                      "decoders": "7", "encoders": "0", "jpegEngines": "7", "ofaEngines": "1",
                      "addressableMemory": "80Gi", "shares": "100"}
_TYPED = {"string": "string", "int": "int", "bool": "bool", "version": "version"}


def typed(kind: str, value: Any) -> dict[str, Any]:
    return {_TYPED[kind]: value}


def catalogue_devices() -> list[dict[str, Any]]:
    """A device per NVIDIA device type with every attribute and capacity the catalogue lists
    for that type (the MIG device's memory is a slice: 10Gi)."""
    out = []
    for device_type in DeviceType:
        attributes: dict[str, Any] = {}
        for name, entry in NVIDIA_ATTRIBUTES.items():
            if device_type in entry.device_types:
                value = device_type.value if name == "type" else _SAMPLE_ATTRIBUTES[name]
                attributes[name] = typed(entry.type, value)
        for name, entry in STANDARD_ATTRIBUTES.items():
            if device_type in entry.device_types:
                attributes[f"{STANDARD_DOMAIN}/{name}"] = typed(entry.type,
                                                                 _SAMPLE_ATTRIBUTES[name])
        capacity = {name: {"value": _SAMPLE_CAPACITIES[name]}
                    for name, entry in NVIDIA_CAPACITIES.items()
                    if device_type in entry.device_types}
        if device_type is DeviceType.MIG:
            capacity["memory"] = {"value": "10Gi"}
            capacity["memorySlice0"] = {"value": "1"}
        out.append({"name": f"catalogue-{device_type.value}", "attributes": attributes,
                    "capacity": capacity})
    return out


def reference_devices() -> list[dict[str, Any]]:
    slices = yaml.safe_load_all((FIXTURES / "reference-devices.yaml").read_text(encoding="utf-8"))
    return [device for s in slices for device in s["spec"].get("devices", [])]


def from_cel_form(name: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """A device in gpudra's CEL input form ({domain: {name: value}}) -> API form."""
    driver = device.get("driver", NVIDIA_DOMAIN)
    attributes = {}
    for domain, names in (device.get("attributes") or {}).items():
        for key, value in names.items():
            qualified = key if domain == driver else f"{domain}/{key}"
            attributes[qualified] = _api_value(value)
    capacity = {(key if domain == driver else f"{domain}/{key}"): {"value": str(value)}
                for domain, names in (device.get("capacity") or {}).items()
                for key, value in names.items()}
    return {"name": name, "attributes": attributes, "capacity": capacity}


def _api_value(value: Any) -> dict[str, Any]:
    if isinstance(value, Version):
        return {"version": str(value)}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def selector_test_devices() -> list[dict[str, Any]]:
    return [from_cel_form(f"gfd-{name}", gpu.device()) for name, gpu in GPUS.items()]


def all_devices() -> list[dict[str, Any]]:
    devices = reference_devices() + catalogue_devices() + selector_test_devices()
    assert len({d["name"] for d in devices}) == len(devices)
    return devices


def slice_of(devices: Iterable[Mapping[str, Any]], node: str = "node1",
             driver: str = NVIDIA_DOMAIN) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}}


def oracle_device(device: Mapping[str, Any], driver: str = NVIDIA_DOMAIN) -> dict[str, Any]:
    """What the oracle's cel op takes: the device's attributes and capacity with its driver."""
    out = {"driver": driver, "attributes": device.get("attributes") or {},
           "capacity": device.get("capacity") or {}}
    if "allowMultipleAllocations" in device:
        out["allowMultipleAllocations"] = device["allowMultipleAllocations"]
    return out


# --- selectors ---------------------------------------------------------------------------------

def cel_expressions(value: Any) -> Iterator[str]:
    """Every ``cel.expression`` string inside parsed YAML."""
    if isinstance(value, Mapping):
        cel = value.get("cel")
        if isinstance(cel, Mapping) and isinstance(cel.get("expression"), str):
            yield cel["expression"]
        for child in value.values():
            yield from cel_expressions(child)
    elif isinstance(value, list):
        for child in value:
            yield from cel_expressions(child)


def _yaml_expressions(text: str) -> Iterator[str]:
    try:
        for doc in yaml.safe_load_all(text):
            yield from cel_expressions(doc)
    except yaml.YAMLError:
        return


_FENCE = re.compile(r"^```ya?ml\n(.*?)^```", re.M | re.S)
_SPAN = re.compile(r"`(device\.[^`]+)`")


def doc_expressions() -> Iterator[str]:
    """Selectors in the docs: YAML examples and inline code that is a whole expression."""
    for path in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for block in _FENCE.findall(text):
            yield from _yaml_expressions(block)
        yield from _SPAN.findall(text)


def golden_expressions() -> Iterator[str]:
    """Selectors convert wrote into the golden after/ trees."""
    for path in sorted((TESTS / "convert" / "golden").glob("*/after/**/*")):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json"):
            yield from _yaml_expressions(path.read_text(encoding="utf-8-sig"))


def rule_case_expressions() -> Iterator[str]:
    """Selectors in the rule cases: what the audit lints (GPU605/GPU606 and others)."""
    for path in sorted((TESTS / "rules" / "cases").glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")).get("cases", []):
            manifest = case.get("manifest")
            if isinstance(manifest, str):
                yield from _yaml_expressions(manifest)


def reference_expressions() -> Iterator[str]:
    for case in yaml.safe_load((FIXTURES / "reference-selectors.yaml").read_text(encoding="utf-8")):
        yield case["expression"]
