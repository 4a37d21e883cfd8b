"""Which resource names the device plugin serves: the same answer as classify gives, and names
outside `nvidia.com/` (cpu, memory: on every container of every pod) answered without
classifying them (issue 32: verify's and the audit's time on 100,000 pods)."""

from __future__ import annotations

from typing import Any

import pytest

import gpudra.k8s.gpu_use as gpu_use
from gpudra.k8s.devices import classify

# (name, served by the NVIDIA device plugin)
NAMES: list[tuple[Any, bool]] = [
    ("nvidia.com/gpu", True),
    ("nvidia.com/mig-1g.5gb", True),
    ("nvidia.com/mig-3g.20gb.shared", True),
    ("nvidia.com/gpu.shared", True),
    ("nvidia.com/other", False),
    ("amd.com/gpu", False),
    ("gpu.intel.com/i915", False),
    ("cpu", False),
    ("memory", False),
    ("ephemeral-storage", False),
    ("NVIDIA.COM/gpu", False),
    ("", False),
    (5, False),
    (None, False),
]


@pytest.mark.parametrize(("name", "served"), NAMES)
def test_the_answer_is_classifys(name: Any, served: bool) -> None:
    device = classify(name)
    assert gpu_use.is_device_plugin_resource(name) is served
    assert (device is not None and device.is_nvidia_device_plugin) is served


def test_names_outside_nvidia_are_not_classified(monkeypatch: pytest.MonkeyPatch) -> None:
    classified: list[Any] = []

    def counting(name: Any) -> Any:
        classified.append(name)
        return classify(name)

    monkeypatch.setattr(gpu_use, "classify", counting)
    for name, _ in NAMES:
        gpu_use.is_device_plugin_resource(name)
    assert classified == [n for n, _ in NAMES if isinstance(n, str) and n.startswith("nvidia.com/")]
