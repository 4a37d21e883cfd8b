"""GPU nodes as the NVIDIA stack presents them to the API server, without any hardware.

Two views of one machine: the device plugin's (a Node whose capacity has `nvidia.com/gpu` or
`nvidia.com/mig-<profile>`, labelled by GPU Feature Discovery) and the DRA driver's (the same
Node without those capacities, and a ResourceSlice from driver gpu.nvidia.com whose devices
carry the attributes and capacities the driver publishes: docs/facts.md, driver v25.x). The
DeviceClasses are the ones the driver's Helm chart installs.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "550.54.15"
CUDA_DRIVER_VERSION = "12.4"

DEVICE_CLASSES: list[dict[str, Any]] = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
     "spec": {"selectors": [{"cel": {"expression": (
         f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'")}}]}}
    for name, kind in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))
]
# The GPU Operator's RuntimeClass: pods that name it are refused at admission without it.
RUNTIME_CLASS = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                 "metadata": {"name": "nvidia"}, "handler": "nvidia"}


@dataclass(frozen=True)
class Product:
    name: str            # NVML's name, the productName attribute
    memory_mib: int      # NVML's total memory; GFD's nvidia.com/gpu.memory label
    architecture: str    # the architecture attribute
    compute: str         # CUDA compute capability, "8.0"
    brand: str = "Nvidia"

    @property
    def label(self) -> str:
        """GFD's nvidia.com/gpu.product: the name with spaces as dashes."""
        return self.name.replace(" ", "-")


A100_80GB = Product("NVIDIA A100-SXM4-80GB", 81920, "Ampere", "8.0")
A100_40GB = Product("NVIDIA A100-SXM4-40GB", 40960, "Ampere", "8.0")
H100_80GB = Product("NVIDIA H100 80GB HBM3", 81559, "Hopper", "9.0")
L4 = Product("NVIDIA L4", 23034, "Ada Lovelace", "8.9")

# Static MIG profiles of an A100-SXM4-80GB: (profile, MIG profile id, memory MiB, SMs).
MIG_PROFILES = {"1g.10gb": (19, 9856, 14), "1g.10gb+me": (20, 9856, 14),
                "2g.20gb": (14, 19968, 28), "3g.40gb": (9, 40192, 42)}


@dataclass(frozen=True)
class Machine:
    """One GPU node: its name, GPUs of one product, optional static MIG layout, extra labels."""

    name: str
    product: Product
    gpus: int
    mig: tuple[tuple[str, int], ...] = ()  # (profile, count) on GPU 0, which is then MIG-only
    labels: dict[str, str] = field(default_factory=dict)
    # Device-plugin time-slicing: each whole GPU advertised `replicas` times (1: not shared).
    # The DRA driver still publishes the physical GPUs.
    replicas: int = 1

    def gfd_labels(self) -> dict[str, str]:
        major, minor = self.product.compute.split(".")
        labels = {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": self.product.label,
            "nvidia.com/gpu.memory": str(self.product.memory_mib),
            "nvidia.com/gpu.count": str(self.gpus),
            "nvidia.com/gpu.family": self.product.architecture.lower().replace(" ", "-"),
            "nvidia.com/gpu.compute.major": major,
            "nvidia.com/gpu.compute.minor": minor,
            "nvidia.com/cuda.driver-version.full": DRIVER_VERSION,
            "nvidia.com/cuda.driver.major": DRIVER_VERSION.split(".")[0],
        }
        if self.mig:
            labels["nvidia.com/mig.strategy"] = "mixed"
        if self.replicas > 1:
            # GFD on a time-sliced node (resource not renamed): the replicas, the strategy,
            # and -SHARED after the product (docs/facts.md).
            labels["nvidia.com/gpu.replicas"] = str(self.replicas)
            labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
            labels["nvidia.com/gpu.product"] = f"{self.product.label}-SHARED"
        return {**labels, **self.labels}


def _node(name: str, labels: dict[str, str], extended: dict[str, str]) -> dict[str, Any]:
    resources = {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti",
                 **extended}
    return {"apiVersion": "v1", "kind": "Node",
            # The labels every kubelet sets on its Node, then GFD's.
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "kubernetes.io/arch": "amd64",
                                                  "kubernetes.io/os": "linux", **labels}},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "Test",
                                       "message": "no kubelet: a test made this node"}]}}


def device_plugin_capacity(machine: Machine) -> dict[str, str]:
    """The extended resources the device plugin (mixed MIG strategy) advertises for `machine`:
    a time-sliced GPU counts `replicas` times."""
    extended: dict[str, str] = {}
    whole = machine.gpus - (1 if machine.mig else 0)
    if whole:
        extended["nvidia.com/gpu"] = str(whole * machine.replicas)
    for profile, count in machine.mig:
        # The plugin turns the '+' of a profile into '.': 1g.10gb+me -> nvidia.com/mig-1g.10gb.me.
        extended[f"nvidia.com/mig-{profile.replace('+', '.')}"] = str(count)
    return extended


def device_plugin_node(machine: Machine, name: str) -> dict[str, Any]:
    """The Node as the device plugin (mixed MIG strategy) and GFD leave it."""
    return _node(name, machine.gfd_labels(), device_plugin_capacity(machine))


def dra_node(machine: Machine, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Node (no GPU capacity) and the ResourceSlice the DRA kubelet plugin publishes."""
    devices: list[dict[str, Any]] = []
    for index in range(machine.gpus):
        uuid = f"GPU-{zlib.crc32(f'{name}/{index}'.encode()):08x}-0000-0000-0000-000000000000"
        common = {
            "productName": {"string": machine.product.name},
            "brand": {"string": machine.product.brand},
            "architecture": {"string": machine.product.architecture},
            "cudaComputeCapability": {"version": f"{machine.product.compute}.0"},
            "driverVersion": {"version": DRIVER_VERSION},
            "cudaDriverVersion": {"version": f"{CUDA_DRIVER_VERSION}.0"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x10 + index:02x}:00.0"},
        }
        if index == 0 and machine.mig:
            start = 0
            for profile, count in machine.mig:
                profile_id, memory, sms = MIG_PROFILES[profile]
                for _ in range(count):
                    devices.append({
                        "name": f"gpu-{index}-mig-{profile.replace('.', '').replace('+', '')}"
                                f"-{profile_id}-{start}",
                        "attributes": {"type": {"string": "mig"},
                                       "uuid": {"string": f"MIG-{uuid[4:]}-{start}"},
                                       "parentUUID": {"string": uuid},
                                       "profile": {"string": profile}, **common},
                        "capacity": {"memory": {"value": f"{memory}Mi"},
                                     "multiprocessors": {"value": str(sms)}}})
                    start += 1
            continue
        devices.append({"name": f"gpu-{index}",
                        "attributes": {"type": {"string": "gpu"}, "uuid": {"string": uuid},
                                       **common},
                        "capacity": {"memory": {"value": f"{machine.product.memory_mib}Mi"}}})
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": f"{name}-{DRIVER}"},
              "spec": {"driver": DRIVER, "nodeName": name,
                       "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                       "devices": devices}}
    return _node(name, machine.gfd_labels(), {}), slice_


def granted_kind(attributes: dict[str, Any]) -> str:
    """What a DRA device is, in the words used to compare it with a device-plugin grant."""
    product = attributes["productName"]["string"]
    if attributes["type"]["string"] == "mig":
        return f"{product} MIG {attributes['profile']['string']}"
    return product


def device_plugin_kind(resource: str, product: Product) -> str | None:
    """The same words for a device-plugin resource on a node of `product` (None: not a GPU)."""
    if resource == "nvidia.com/gpu":
        return product.name
    if resource.startswith("nvidia.com/mig-"):
        profile = resource.removeprefix("nvidia.com/mig-")
        if profile.endswith(".me"):
            profile = profile.removesuffix(".me") + "+me"
        return f"{product.name} MIG {profile}"
    return None
