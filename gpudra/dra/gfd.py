"""GPU Feature Discovery node labels, and what each becomes under DRA.

Label names and value formats are from NVIDIA k8s-device-plugin v0.20 (internal/lm); the DRA
attribute names from the NVIDIA DRA driver v0.4.1. See docs/facts.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GFD_LABEL = re.compile(r"^nvidia\.com/(?:gpu\.|cuda\.|mig\.|mig-|mps\.|vgpu\.|gfd\.)")


@dataclass(frozen=True, slots=True)
class LabelMapping:
    label: str
    dra: str | None  # the DRA attribute/capacity that replaces it; None: no equivalent
    note: str


_EXACT: dict[str, LabelMapping] = {
    m.label: m
    for m in (
        LabelMapping("nvidia.com/gpu.product", "attribute productName",
                     'compare productName.replace(" ", "-") with the label value'),
        LabelMapping("nvidia.com/gpu.memory", "capacity memory",
                     'label is MiB, capacity is bytes: memory.compareTo(quantity("<N>Mi"))'),
        LabelMapping("nvidia.com/gpu.family", "attribute architecture",
                     'spelling differs: "ampere" -> "Ampere", "ada-lovelace" -> "Ada Lovelace"'),
        LabelMapping("nvidia.com/gpu.compute.major", "attribute cudaComputeCapability",
                     'a version: cudaComputeCapability.compareTo(semver("8.0.0"))'),
        LabelMapping("nvidia.com/gpu.compute.minor", "attribute cudaComputeCapability",
                     'a version: cudaComputeCapability.compareTo(semver("8.0.0"))'),
        LabelMapping("nvidia.com/gpu.count", None,
                     "the claim's count replaces it; drop it or keep it as a node selector"),
        LabelMapping("nvidia.com/gpu.present", None,
                     "implied by any GPU claim; the selector can go"),
        LabelMapping("nvidia.com/gpu.sharing-strategy", None,
                     "sharing is configured per claim under DRA (GpuConfig)"),
        LabelMapping("nvidia.com/gpu.replicas", None,
                     "time-slicing replicas have no DRA equivalent"),
        LabelMapping("nvidia.com/mig.strategy", None, "MIG devices are requested by class"),
        LabelMapping("nvidia.com/mig.capable", None, "request class mig.nvidia.com instead"),
    )
}
_PREFIXES = (
    ("nvidia.com/cuda.driver-version.", LabelMapping("", "attribute driverVersion",
                                                     'a version: driverVersion.compareTo(semver("550.0.0"))')),
    ("nvidia.com/cuda.driver.", LabelMapping("", "attribute driverVersion",
                                             'deprecated label; driverVersion.compareTo(semver(...))')),
    ("nvidia.com/cuda.runtime-version.", LabelMapping("", "attribute cudaDriverVersion",
                                                      "closest DRA attribute: cudaDriverVersion (a version)")),
    ("nvidia.com/cuda.runtime.", LabelMapping("", "attribute cudaDriverVersion",
                                              "closest DRA attribute: cudaDriverVersion (a version)")),
)


def is_gfd_label(key: object) -> bool:
    return isinstance(key, str) and _GFD_LABEL.match(key) is not None


def mapping_for(label: str) -> LabelMapping:
    """What a GFD label becomes; unknown GFD labels have no DRA equivalent."""
    if label in _EXACT:
        return _EXACT[label]
    for prefix, mapping in _PREFIXES:
        if label.startswith(prefix):
            return LabelMapping(label, mapping.dra, mapping.note)
    return LabelMapping(label, None, "no DRA attribute publishes this; keep it as a node selector")
