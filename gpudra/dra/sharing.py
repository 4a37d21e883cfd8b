"""GPU sharing: what the device plugin grants and what the NVIDIA DRA driver can do instead.

k8s-device-plugin (`config.yaml`, `sharing.timeSlicing` / `sharing.mps`): each listed
resource is advertised `replicas` times per GPU (renamed `<name>.shared` with
`renameByDefault: true`). dra-driver-nvidia-gpu (api/nvidia.com/resource/v1beta1/sharing.go,
site/content/docs/reference/feature-gates.md, pkg/featuregates, cmd/gpu-kubelet-plugin
device_state.go, @ 9593204): a `GpuConfig`'s `sharing.strategy: TimeSlicing` sets only
`timeSlicingConfig.interval` (Default, Short, Medium, Long), behind the alpha gate
TimeSlicingSettings; `MPS` is a strategy of its own behind the alpha gate MPSSupport; several
claims get one GPU only with the alpha gate ConsumableShares and `--consumable-shares`
(`memory`, `unlimited` or a share count), which refuses MPS. There is no replica count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

NO_REPLICAS = ("the NVIDIA DRA driver has no replica count: its TimeSlicing strategy sets only "
               "an interval (gate TimeSlicingSettings), MPS needs the gate MPSSupport, and "
               "handing one GPU to several claims needs the alpha gate ConsumableShares with "
               "--consumable-shares, which does not work with MPS")

# Driver feature gates that cannot be on together, and gates that need another one
# (feature-gates.md; ValidateFeatureGates in pkg/featuregates/featuregates.go).
EXCLUSIVE_GATES = (("DynamicMIG", "PassthroughSupport"), ("DynamicMIG", "NVMLDeviceHealthCheck"),
                   ("DynamicMIG", "MPSSupport"), ("PassthroughSupport", "NVMLDeviceHealthCheck"),
                   ("MPSSupport", "NVMLDeviceHealthCheck"))
REQUIRED_GATES = (("DeviceMetadata", "PassthroughSupport"),
                  ("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"))


@dataclass(frozen=True, slots=True)
class SharedResource:
    """One resource a device-plugin sharing config multiplies."""

    strategy: str   # "timeSlicing" or "mps"
    resource: str
    replicas: int
    config_key: str  # the ConfigMap data key holding the config


def device_plugin_sharing(configmap: Mapping[str, Any]) -> list[SharedResource]:
    """The sharing a k8s-device-plugin config ConfigMap grants (any data key that holds one)."""
    found = []
    for key, text in _data(configmap):
        try:
            doc = yaml.safe_load(str(text))
        except yaml.YAMLError:
            continue
        sharing = doc.get("sharing") if isinstance(doc, Mapping) else None
        if not isinstance(sharing, Mapping):
            continue
        for strategy in ("timeSlicing", "mps"):
            block = sharing.get(strategy)
            resources = block.get("resources") if isinstance(block, Mapping) else None
            for entry in resources if isinstance(resources, list) else ():
                replicas = entry.get("replicas") if isinstance(entry, Mapping) else None
                if isinstance(replicas, int) and not isinstance(replicas, bool):
                    found.append(SharedResource(strategy, str(entry.get("name")), replicas,
                                                str(key)))
    return found


def _data(configmap: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    data = configmap.get("data")
    return iter(data.items()) if isinstance(data, Mapping) else iter(())
