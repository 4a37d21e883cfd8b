"""GPU111: the device plugin's sharing config (time-slicing or MPS replicas), which DRA cannot
carry over one to one (gpudra.dra.sharing)."""

from __future__ import annotations

from gpudra.dra.sharing import NO_REPLICAS, device_plugin_sharing
from gpudra.model import Severity
from gpudra.objects import SourceObject
from gpudra.rules.base import AuditContext, Checker, rule

GPU111 = rule(
    "GPU111", "device-plugin-sharing-config", Severity.WARNING, "device requests",
    "A device-plugin config shares GPUs by time-slicing or MPS replicas.",
    """
The NVIDIA device plugin's config (a ConfigMap the plugin's DaemonSet mounts, or the GPU
Operator's `devicePlugin.config`) can advertise each GPU several times:

```yaml
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4        # every GPU is advertised as 4 nvidia.com/gpu
```

Pods that each ask `nvidia.com/gpu: 1` then share a GPU, without knowing it. The NVIDIA DRA
driver has no replica count. Its `GpuConfig` `sharing.strategy: TimeSlicing` only sets the
time-slice interval (alpha gate `TimeSlicingSettings`); `MPS` needs the alpha gate
`MPSSupport`; several claims get one GPU only with the alpha gate `ConsumableShares` and
`--consumable-shares` (`memory`, `unlimited` or a share count), which does not work with MPS.
Under DRA, pods that should share a GPU reference one ResourceClaim (they then run on one node).

The finding names the replicas the config grants, so the sharing can be carried over
deliberately: decide per workload between one shared claim, ConsumableShares, MPS, or a whole
GPU each (the device count the workloads really get grows by the replica factor).
""",
    "Decide the DRA sharing per workload: a shared ResourceClaim, ConsumableShares or MPS.",
)


class Sharing(Checker):
    rules = (GPU111,)

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        if obj.kind != "ConfigMap" or obj.group != "":
            return
        for shared in device_plugin_sharing(obj.data):
            ctx.emit(GPU111, obj,
                     f"device-plugin config {shared.config_key!r} advertises each GPU "
                     f"{shared.replicas} times as {shared.resource} ({shared.strategy}): "
                     f"{NO_REPLICAS}", path=("data", shared.config_key),
                     resource=shared.resource, quantity=shared.replicas)
