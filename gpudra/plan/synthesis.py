"""Predict the devices the NVIDIA DRA driver will publish, from today's Node objects.

So a team can plan before installing the driver: GPU Feature Discovery labels and the device
plugin's ``status.allocatable`` say which GPUs (and MIG devices) a node has; this module turns
them into :class:`~gpudra.plan.inventory.Device` records shaped like the driver's, every one
marked ``predicted=True``, with the names that could not be predicted in ``Device.unknown``.

Sources:

* Labels: NVIDIA/k8s-device-plugin @ v0.20.0 (1b826acc6af3), ``internal/lm/resource.go``
  (product = the sanitised NVML name: characters outside ``[A-Za-z0-9-_. ]`` removed, whitespace
  runs turned into ``-``; ``-MIG-<profile>`` appended for MIG devices and ``-SHARED`` for
  replicated resources that are not renamed; ``memory`` in MiB; ``family`` from the compute
  capability), ``internal/lm/mig-strategy.go`` (``single``: MIG devices are labelled as
  ``nvidia.com/gpu.*``, ``gpu.count`` is the number of MIG devices; ``mixed``:
  ``nvidia.com/mig-<profile>.{count,memory,multiprocessors,engines.*,slices.*,product}``, while
  ``nvidia.com/gpu.count`` counts every physical GPU of the product, MIG-enabled or not),
  ``internal/resource/nvml-mig-device.go`` (MIG attribute label names). Resource names with a
  ``+`` in the profile use ``.`` instead (``nvidia.com/mig-1g.10gb.me`` for ``1g.10gb+me``).
* Devices: kubernetes-sigs/dra-driver-nvidia-gpu (main @ 95932046, 2026-08-07, the v0.5.0
  line; v0.4.1 for everything that did not change), ``cmd/gpu-kubelet-plugin/deviceinfo.go``
  (full-GPU attributes; ``resource.kubernetes.io/numaNode``), ``mig.go`` (MIG attributes and
  capacities, memory = MemorySizeMB x 2^20), ``nvlib.go`` (a MIG-enabled GPU is not published
  itself, only its static MIG devices), ``consumable_shares.go`` (``--consumable-shares``:
  ``allowMultipleAllocations`` and ``memory``/``shares`` request policies).

What is lossy or unknown (and how it shows):

* ``productName`` is guessed from the sanitised label. A few NVML names are known exactly (the
  table below, names seen in public sources); otherwise the vendor prefix dash becomes a space
  (``NVIDIA-L40S`` -> ``NVIDIA L40S``) and other dashes stay, which may be wrong (``NVIDIA A100
  80GB PCIe`` is labelled ``NVIDIA-A100-80GB-PCIe``). ``productName.replace(" ", "-") == label``
  (what ``gpudra convert`` writes) holds either way. Guesses are listed in the notes.
* ``memory`` = label MiB x 2^20: GFD floors the byte count, so this is a lower bound (< 1 MiB).
* ``brand``, ``uuid``, ``parentUUID``, the PCI attributes, ``numaNode``, ``addressingMode``
  and MIG ``memorySlice<N>`` cannot be derived from labels: they are in ``Device.unknown``, and a
  selector that reads them gets "unknown", not a runtime error.
* Mixed MIG without ``status.allocatable``: the number of full (non-MIG) GPUs is unknown and 0
  is assumed. MIG-to-parent assignment is unknown (no ``parentUUID``), so ``matchAttribute`` on
  it cannot be checked for predicted devices.
* VFIO devices (driver gate ``PassthroughSupport``) and DynamicMIG partitions are not predicted.
* ``--consumable-shares`` is a driver flag, invisible from nodes: pass ``consumable_shares`` to
  model it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from gpudra.k8s.devices import MAX_NODE_DEVICES
from gpudra.dra.attributes import NVIDIA_DOMAIN, STANDARD_DOMAIN
from gpudra.dra.cel_values import Version
from gpudra.dra.mig_memory import usable_mib
from gpudra.dra.selectors import DRIVER_ARCHITECTURES
from gpudra.k8s.objects import as_mapping, expand_lists, plural
from gpudra.plan.inventory import Device, Inventory, RequestPolicy
from gpudra.k8s.quantity import parse_quantity

MIB = 2**20
# The most devices one plan predicts from labels: twice the largest fleet gpudra is measured
# on (100,000 devices, benchmarks/README), about 150 MB of devices. Each node's count is
# bounded already (gpudra.k8s.devices.MAX_NODE_DEVICES, by the typed reader); this bounds what a
# file of many small Node objects can ask for (10,000 of them at 128 devices would be 1.28
# million devices, gigabytes).
MAX_PREDICTED_DEVICES = 200_000
GPU_LABEL = "nvidia.com/gpu."
_MIXED_COUNT = re.compile(r"^nvidia\.com/mig-(.+)\.count$")
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(.+)$")
_SINGLE_PRODUCT = re.compile(r"^(?P<model>.+)-MIG-(?P<profile>[^-]+)$")
_PROFILE = re.compile(r"^((?:\d+c\.)?\d+g\.\d+gb)(?:\.(.+))?$")

# Raw NVML product names seen in public sources (dra-reference sections 1.3 and 8, GFD label
# dumps, cloud GPU catalogues); the label is sanitise(name).
KNOWN_PRODUCTS = ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
                  "NVIDIA A100-PCIE-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
                  "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA L4", "NVIDIA L40S", "NVIDIA A10G",
                  "Tesla T4", "NVIDIA B200", "NVIDIA GeForce RTX 4090")

# What the driver publishes that labels cannot tell (unqualified = the driver's domain).
_GPU_UNKNOWN = frozenset({"uuid", "brand", "addressingMode",
                          f"{STANDARD_DOMAIN}/pciBusID", f"{STANDARD_DOMAIN}/pcieRoot",
                          f"{STANDARD_DOMAIN}/numaNode"})
_MIG_UNKNOWN = _GPU_UNKNOWN | {"parentUUID"}
_MIG_CAPACITY_LABELS = {"memory": "memory", "multiprocessors": "multiprocessors",
                        "copyEngines": "engines.copy", "decoders": "engines.decoder",
                        "encoders": "engines.encoder", "jpegEngines": "engines.jpeg",
                        "ofaEngines": "engines.ofa"}


@dataclass(frozen=True, slots=True)
class Shares:
    """The driver's ``--consumable-shares`` value: "memory", "unlimited" or a share count."""

    mode: str  # "memory" | "unlimited" | "count"
    count: int = 0

    @classmethod
    def parse(cls, value: str | int | None) -> Shares | None:
        if value in (None, "", "disabled"):
            return None
        if value in ("memory", "unlimited"):
            return cls(str(value))
        try:
            count = int(value)
        except (TypeError, ValueError):
            count = 0
        if count <= 0:
            raise ValueError(f"--consumable-shares must be 'disabled', 'memory', 'unlimited' or "
                             f"a positive integer, not {value!r}")
        return cls("count", count)


def sanitise(name: str) -> str:
    """GFD's product label for an NVML name (k8s-device-plugin internal/lm/resource.go)."""
    kept = re.sub(r"[^A-Za-z0-9\-_. ]", "", name)
    return "-".join(kept.split())


_BY_LABEL = {sanitise(name): name for name in KNOWN_PRODUCTS}


def product_name(label: str) -> tuple[str, bool]:
    """(NVML name, exact?) for a GFD product label."""
    if label in _BY_LABEL:
        return _BY_LABEL[label], True
    for vendor in ("NVIDIA-", "Tesla-", "Quadro-"):
        if label.startswith(vendor):
            return vendor[:-1] + " " + label[len(vendor):], False
    return label, False


def mig_profile(resource_form: str) -> str:
    """``1g.10gb.me`` (resource/label form) -> ``1g.10gb+me`` (NVML profile)."""
    match = _PROFILE.match(resource_form)
    if match and match.group(2):
        return f"{match.group(1)}+{match.group(2)}"
    return resource_form


def synthesize(nodes: Iterable[Mapping[str, Any]],
               consumable_shares: Shares | str | int | None = None,
               limit: int = MAX_PREDICTED_DEVICES) -> Inventory:
    """Predicted devices for every Node object in `nodes` (plain dicts; other kinds ignored).
    Nodes without GPU labels or allocatable GPUs yield no devices. Nodes whose devices would
    pass `limit` are not predicted (a problem of the inventory names them)."""
    return assemble(predict_nodes(nodes, consumable_shares), limit)


@dataclass(frozen=True, slots=True)
class NodePrediction:
    """What one Node object predicts: its devices, its labels and its notes. A caller that
    plans many subsets of one fleet (cutover's waves) predicts each node once and assembles
    the subsets."""

    name: str
    labels: Mapping[str, str]
    devices: tuple[Device, ...]
    notes: tuple[str, ...]      # each "node NAME: ..."
    unknown: frozenset[str]     # the unknown names of its devices, as the notes give them


def predict_nodes(nodes: Iterable[Mapping[str, Any]],
                  consumable_shares: Shares | str | int | None = None) -> list[NodePrediction]:
    """One prediction per Node object with a name, in input order (other kinds ignored);
    `consumable_shares` parsed already (a command's request), or as the driver's flag says it."""
    shares = consumable_shares if isinstance(consumable_shares, Shares) else \
        Shares.parse(consumable_shares)
    out: list[NodePrediction] = []
    for node, _ in expand_lists(nodes):
        if node.get("kind") != "Node":
            continue
        metadata = as_mapping(node.get("metadata"))
        name = metadata.get("name")
        if not isinstance(name, str):
            continue
        labels = {str(k): str(v) for k, v in as_mapping(metadata.get("labels")).items()}
        allocatable = {str(k): v for k, v in
                       as_mapping(as_mapping(node.get("status")).get("allocatable")).items()}
        found, node_notes = _node_devices(name, labels, allocatable, shares)
        out.append(NodePrediction(name, labels, tuple(found),
                                  tuple(f"node {name}: {n}" for n in node_notes),
                                  _unknown_names(found)))
    return out


def assemble(predictions: Iterable[NodePrediction], limit: int = MAX_PREDICTED_DEVICES
             ) -> Inventory:
    """The inventory of these nodes' predictions, in their order; nodes whose devices would
    pass `limit` left out (a problem names them)."""
    devices: list[Device] = []
    labels_by_node: dict[str, Mapping[str, str]] = {}
    notes: list[str] = []
    left_out: list[str] = []
    unknown: set[str] = set()
    for prediction in predictions:
        labels_by_node[prediction.name] = prediction.labels
        if len(devices) + len(prediction.devices) > limit:
            left_out.append(prediction.name)
            continue
        devices.extend(prediction.devices)
        notes.extend(prediction.notes)
        unknown |= prediction.unknown
    if devices:
        notes.append(_unknown_summary(unknown))
    problems = (f"{plural(len(left_out), 'node')} not predicted ({', '.join(left_out[:5])}"
                f"{', ...' if len(left_out) > 5 else ''}): their devices would pass "
                f"{limit:,} predicted devices, the most one plan predicts",) if left_out else ()
    return Inventory(tuple(devices), node_labels=labels_by_node, source="synthesised",
                     problems=problems, notes=tuple(notes))


@dataclass(frozen=True, slots=True)
class _Common:
    """What a node's labels say about its GPU model (shared by its GPUs and MIG devices)."""

    attributes: Mapping[str, Any]
    unknown: frozenset[str]
    notes: tuple[str, ...]


def _node_devices(node: str, labels: Mapping[str, str], allocatable: Mapping[str, Any],
                  shares: Shares | None) -> tuple[list[Device], list[str]]:
    product = labels.get(GPU_LABEL + "product")
    mig_allocatable = {m.group(1): v for k, v in allocatable.items()
                       if (m := _MIG_RESOURCE.match(k)) and not k.endswith(".shared")}
    gpu_allocatable = _count(allocatable.get("nvidia.com/gpu",
                                             allocatable.get("nvidia.com/gpu.shared")))
    mixed = {m.group(1) for k in labels if (m := _MIXED_COUNT.match(k))} | set(mig_allocatable)
    if product is None and gpu_allocatable is None and not mixed:
        return [], []
    notes: list[str] = []
    replicas = _count(labels.get(GPU_LABEL + "replicas")) or 1
    if product and product.endswith("-SHARED"):
        product = product[: -len("-SHARED")]
        notes.append("GPUs are shared (time-slicing/MPS replicas): under DRA, sharing is "
                     "configured per claim; one device is predicted per physical GPU")
    single = _SINGLE_PRODUCT.match(product or "")
    model_label = single.group("model") if single else product
    common = _common(labels, model_label)
    devices: list[Device] = []
    if single:
        profile = single.group("profile")
        if profile == "INVALID":
            notes.append("GFD reports an invalid single-strategy MIG layout: no devices predicted")
            return [], notes
        count = _count(labels.get(GPU_LABEL + "count"))
        if count is None and gpu_allocatable is not None:
            count = gpu_allocatable // replicas
        if _too_many(count or 0, notes):
            return [], notes
        devices += _mig_devices(node, mig_profile(profile), count or 0, labels, GPU_LABEL,
                                common, shares)
        return devices, notes + list(common.notes)
    full = _full_gpu_count(labels, gpu_allocatable, replicas, bool(mixed), notes,
                           bool(mig_allocatable))
    if _too_many(full, notes):
        return [], notes
    if full:
        first = _gpu(node, 0, labels, common, shares)
        devices += [first, *(_renamed(first, f"gpu-{index}") for index in range(1, full))]
    for resource_form in sorted(mixed):
        prefix = f"nvidia.com/mig-{resource_form}."
        count = _count(labels.get(prefix + "count"))
        if count is None:
            count = _count(mig_allocatable.get(resource_form)) or 0
        if _too_many(count, notes):
            return [], notes
        mig_common = common
        mig_product = labels.get(prefix + "product")
        parent = _SINGLE_PRODUCT.match(mig_product or "")
        if model_label is None and parent:
            mig_common = _common(labels, parent.group("model"))
            # The MIG devices are named from their own product label: say so when it is a guess.
            notes.extend(n for n in mig_common.notes if n not in notes)
        devices += _mig_devices(node, mig_profile(resource_form), count, labels, prefix,
                                mig_common, shares)
    return devices, notes + list(common.notes)


def _too_many(count: int, notes: list[str]) -> bool:
    """A count no node holds (the typed readers refuse such nodes; this guards every other
    caller): the node gets no devices instead of millions."""
    if count <= MAX_NODE_DEVICES:
        return False
    notes.append(f"{plural(count, 'device')} is more than a node holds (at most "
                 f"{MAX_NODE_DEVICES}): no devices predicted")
    return True


def _full_gpu_count(labels: Mapping[str, str], allocatable: int | None, replicas: int,
                    mixed: bool, notes: list[str], mig_advertised: bool = False) -> int:
    if mixed:
        # gpu.count counts MIG-enabled GPUs too; allocatable nvidia.com/gpu only full ones.
        if allocatable is not None:
            return allocatable // replicas
        if mig_advertised:
            # The device plugin advertises MIG devices and no nvidia.com/gpu: every GPU is in
            # MIG mode, none is full (issue 36, item 5: the note below said allocatable was
            # missing while it was set).
            return 0
        notes.append("mixed MIG without status.allocatable: the number of full (non-MIG) GPUs "
                     "is unknown; 0 assumed")
        return 0
    count = _count(labels.get(GPU_LABEL + "count"))
    if count is not None:
        return count
    if allocatable is not None:
        return allocatable // replicas
    return 0


def _common(labels: Mapping[str, str], model_label: str | None) -> _Common:
    attributes: dict[str, Any] = {}
    unknown: set[str] = set()
    own_notes: list[str] = []
    if model_label:
        name, exact = product_name(model_label)
        attributes["productName"] = name
        if not exact:
            own_notes.append(f"productName guessed from label {model_label!r} as {name!r} "
                             "(sanitised labels lose spaces and punctuation)")
    else:
        unknown.add("productName")
        own_notes.append("no nvidia.com/gpu.product label: productName unknown")
    family = labels.get(GPU_LABEL + "family")
    if family is not None and family in DRIVER_ARCHITECTURES:
        attributes["architecture"] = DRIVER_ARCHITECTURES[family]
    else:
        unknown.add("architecture")
    major, minor = labels.get(GPU_LABEL + "compute.major"), labels.get(GPU_LABEL + "compute.minor")
    _version(attributes, unknown, "cudaComputeCapability", (major, minor, "0"))
    driver_full = labels.get("nvidia.com/cuda.driver-version.full")
    driver = ((driver_full.split(".") + ["0", "0"])[:3] if driver_full else
              [_label(labels, "driver-version", "driver", part)
               for part in (("major", "major"), ("minor", "minor"), ("revision", "rev"))])
    _version(attributes, unknown, "driverVersion", tuple(driver))
    runtime = [_label(labels, "runtime-version", "runtime", (part, part))
               for part in ("major", "minor")]
    _version(attributes, unknown, "cudaDriverVersion", (*runtime, "0"))
    return _Common(MappingProxyType(attributes), frozenset(unknown), tuple(own_notes))


def _label(labels: Mapping[str, str], new: str, deprecated: str,
           part: tuple[str, str]) -> str | None:
    """``nvidia.com/cuda.<new>.<part>``, else the deprecated ``nvidia.com/cuda.<deprecated>.``"""
    return labels.get(f"nvidia.com/cuda.{new}.{part[0]}",
                      labels.get(f"nvidia.com/cuda.{deprecated}.{part[1]}"))


def _version(attributes: dict[str, Any], unknown: set[str], name: str,
             parts: tuple[str | None, ...]) -> None:
    """Version attributes as the driver stores them: semver with leading zeros dropped."""
    try:
        attributes[name] = Version(*(int(p) for p in parts))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        unknown.add(name)


def _gpu(node: str, index: int, labels: Mapping[str, str], common: _Common,
         shares: Shares | None) -> Device:
    attributes = {"type": "gpu", **common.attributes}
    unknown = set(_GPU_UNKNOWN | common.unknown)
    capacity: dict[str, Fraction] = {}
    memory = _count(labels.get(GPU_LABEL + "memory"))
    if memory:
        capacity["memory"] = Fraction(memory * MIB)
    else:
        unknown.add("memory")
    return _device(node, f"gpu-{index}", attributes, capacity, unknown, shares)


def _mig_devices(node: str, profile: str, count: int, labels: Mapping[str, str], prefix: str,
                 common: _Common, shares: Shares | None) -> list[Device]:
    attributes = {"type": "mig", "profile": profile, **common.attributes}
    unknown = set(_MIG_UNKNOWN | common.unknown) | {"memorySlice*"}
    capacity: dict[str, Fraction] = {}
    for capacity_name, label in _MIG_CAPACITY_LABELS.items():
        value = _count(labels.get(prefix + label))
        if value is None and capacity_name == "memory":
            # No memory label: the usable figure NVML gives the profile on this GPU (below the
            # nominal size in its name), where it is known.
            value = usable_mib(profile, str(common.attributes.get("productName") or "") or None)
        if value is None:
            unknown.add(capacity_name)
        else:
            capacity[capacity_name] = Fraction(value * MIB if capacity_name == "memory" else value)
    slug = re.sub(r"[^a-z0-9-]", "", profile.lower().replace("+", "-"))
    if count <= 0:
        return []
    first = _device(node, f"gpu-mig-{slug}-0", attributes, capacity, unknown, shares)
    return [first, *(_renamed(first, f"gpu-mig-{slug}-{k}") for k in range(1, count))]


def _renamed(device: Device, name: str) -> Device:
    """`device` under another name, sharing its (immutable) mappings: a node's GPUs, or its
    MIG devices of one profile, differ only in name, and a fleet has 100,000s of them."""
    renamed = object.__new__(Device)
    renamed.__dict__.update(device.__dict__, name=name)
    return renamed


def _device(node: str, name: str, attributes: Mapping[str, Any], capacity: dict[str, Fraction],
            unknown: set[str], shares: Shares | None) -> Device:
    policies: dict[str, RequestPolicy] = {}
    multiple = False
    if shares is not None:
        multiple = True
        if "memory" in capacity:
            memory = capacity["memory"] // MIB * MIB
            capacity["memory"] = Fraction(memory)
            if shares.mode == "memory":
                policies["memory"] = RequestPolicy(Fraction(memory), (), Fraction(MIB),
                                                   Fraction(memory), Fraction(MIB))
            else:
                policies["memory"] = RequestPolicy(Fraction(0), (), Fraction(0),
                                                   Fraction(memory), Fraction(MIB))
            if shares.mode == "count":
                capacity["shares"] = Fraction(shares.count)
                policies["shares"] = RequestPolicy(Fraction(1), (), Fraction(1),
                                                   Fraction(shares.count), Fraction(1))
    qualified_unknown = frozenset(n if "/" in n else f"{NVIDIA_DOMAIN}/{n}" for n in unknown)
    return Device(NVIDIA_DOMAIN, node, name, node, MappingProxyType(dict(attributes)),
                  MappingProxyType(capacity), multiple, MappingProxyType(policies),
                  predicted=True, unknown=qualified_unknown, slice_name=f"{node}-predicted")


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    parsed = parse_quantity(str(value).strip())
    if parsed is None or parsed.denominator != 1 or parsed < 0:
        return None
    return int(parsed)


def _unknown_names(devices: Iterable[Device]) -> frozenset[str]:
    return frozenset(n.rpartition("/")[2] if n.startswith(NVIDIA_DOMAIN + "/") else n
                     for d in devices for n in d.unknown)


def _unknown_summary(names: Iterable[str]) -> str:
    return ("not predictable from node labels (selectors reading them are reported as "
            "unknown on predicted devices): " + ", ".join(sorted(names)))
