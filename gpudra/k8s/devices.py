"""Device-plugin resource names: which ones are NVIDIA GPUs, MIG slices, shared GPUs, others.

Names follow NVIDIA k8s-device-plugin v0.20 (docs/facts.md): `nvidia.com/gpu`;
`nvidia.com/mig-<profile>` under the mixed MIG strategy, where a `+` in the profile becomes
`.` (`1g.10gb+me` -> `nvidia.com/mig-1g.10gb.me`); a `.shared` suffix when time-slicing or MPS
renames shared resources.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

GPU = "nvidia.com/gpu"
# The most devices one node is believed to hold. A DRA driver publishes a node's devices in
# ResourceSlices of at most 128 devices each (ResourceSliceMaxDevices, docs/facts.md), and the
# NVIDIA driver publishes one per node; the largest GPU nodes hold 16 GPUs, 112 MIG devices
# at 7 per GPU. A node label or allocatable count above it (`nvidia.com/gpu.count:
# "10000000"`) would have plan and cutover predict millions of devices: it is refused.
MAX_NODE_DEVICES = 128
_MIG = re.compile(r"^nvidia\.com/mig-(?P<profile>(?:\d+c\.)?\d+g\.\d+gb(?:\.(?:me|gfx|all))*)"
                  r"(?P<shared>\.shared)?$")
# HAMi's vGPU scheduler reuses the nvidia.com/ prefix for slices of memory and compute.
HAMI_RESOURCES = frozenset({"nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                            "nvidia.com/gpucores", "nvidia.com/priority"})
OTHER_VENDORS = re.compile(r"^(?:amd\.com/gpu|gpu\.intel\.com/[\w.-]+|amd\.com/[\w.-]*gpu[\w.-]*)$")


class DeviceKind(enum.Enum):
    GPU = "gpu"
    MIG = "mig"
    SHARED = "shared"
    OTHER_NVIDIA = "other-nvidia"
    OTHER_VENDOR = "other-vendor"


@dataclass(frozen=True, slots=True)
class DeviceResource:
    name: str
    kind: DeviceKind
    mig_profile: str | None = None  # as the driver spells it: `1g.10gb`, `1g.10gb+me`

    @property
    def is_nvidia_device_plugin(self) -> bool:
        return self.kind in (DeviceKind.GPU, DeviceKind.MIG, DeviceKind.SHARED)


def classify(name: str) -> DeviceResource | None:
    """Classify a resource name; None for resources that are not devices (cpu, memory...)."""
    if not isinstance(name, str):
        return None
    if name == GPU:
        return DeviceResource(name, DeviceKind.GPU)
    if name.startswith("nvidia.com/"):
        mig = _MIG.match(name)
        if mig:
            profile = _driver_profile(mig.group("profile"))
            kind = DeviceKind.SHARED if mig.group("shared") else DeviceKind.MIG
            return DeviceResource(name, kind, profile)
        if name.endswith(".shared"):
            return DeviceResource(name, DeviceKind.SHARED)
        return DeviceResource(name, DeviceKind.OTHER_NVIDIA)
    if OTHER_VENDORS.match(name):
        return DeviceResource(name, DeviceKind.OTHER_VENDOR)
    return None


def _driver_profile(resource_profile: str) -> str:
    # The device plugin turns `+` into `.` in resource names; the DRA driver keeps `+`.
    head, _, tail = resource_profile.partition("gb.")
    return f"{head}gb+{tail}" if tail else resource_profile


DEVICE_NAME_PATTERN = (r"nvidia\.com/(?:gpu(?:\.shared)?|mig-(?:\d+c\.)?\d+g\.\d+gb"
                       r"(?:\.(?:me|gfx|all))*(?:\.shared)?)")
