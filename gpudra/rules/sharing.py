"""GPU111: the device plugin's sharing config (time-slicing or MPS replicas), which DRA cannot
carry over one to one (gpudra.dra.sharing)."""

from __future__ import annotations

from gpudra.dra.sharing import NO_REPLICAS, device_plugin_sharing
from gpudra.results.model import Severity
from gpudra.k8s.objects import SourceObject, plural
from gpudra.rules.base import AuditContext, Checker, rule

GPU111 = rule(
    "GPU111", "device-plugin-sharing-config", Severity.WARNING, "device requests",
    "A device-plugin config shares GPUs by time-slicing or MPS replicas.",
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
                     f"{plural(shared.replicas, 'time')} as {shared.resource} "
                     f"({shared.strategy}): "
                     f"{NO_REPLICAS}", path=("data", shared.config_key),
                     resource=shared.resource, quantity=shared.replicas)
