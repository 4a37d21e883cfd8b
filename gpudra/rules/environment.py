"""GPU4xx: environment variables that fight CDI device injection."""

from __future__ import annotations

from collections.abc import Mapping

from gpudra.devices import uses_nvidia_devices
from gpudra.model import Severity
from gpudra.objects import ManifestObject
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.workloads import ContainerRef

CATEGORY = "environment"

GPU401 = rule(
    "GPU401", "nvidia-visible-devices-env", Severity.WARNING, CATEGORY,
    "Container sets NVIDIA_VISIBLE_DEVICES.",
    """
With the device plugin (and the legacy NVIDIA runtime hook) `NVIDIA_VISIBLE_DEVICES` decides
which GPUs a container sees; `all` in a container without a GPU request even exposes every GPU of
the node. With DRA the runtime injects exactly the allocated devices through CDI, and a
hard-coded value either fights that injection or exposes GPUs the scheduler never allocated.
`gpudra convert` removes it from converted containers.
""",
    "Remove it; CDI decides which devices the container sees.",
)

GPU402 = rule(
    "GPU402", "nvidia-driver-capabilities-env", Severity.WARNING, CATEGORY,
    "GPU container sets NVIDIA_DRIVER_CAPABILITIES.",
    """
Driver capabilities (compute, utility, graphics, video...) are read by the NVIDIA container
runtime hook. Under CDI the DRA driver's generated spec decides which driver libraries are
mounted, so this variable may silently stop having an effect. Check that the workload still gets
the libraries it needs (for example video encode) after migration.
""",
    "Check the workload's driver libraries under CDI; drop the variable if unneeded.",
)

_DISABLED = {"void", "none", ""}


class EnvironmentVars(Checker):
    rules = (GPU401, GPU402)

    def check_object(self, obj: ManifestObject, ctx: AuditContext) -> None:
        for spec in ctx.pod_specs(obj):
            for container in spec.containers:
                self._container(obj, container, ctx)

    @staticmethod
    def _container(obj: ManifestObject, container: ContainerRef, ctx: AuditContext) -> None:
        env = container.data.get("env")
        if not isinstance(env, list):
            return
        gpu = _requests_gpu(container)
        for i, var in enumerate(env):
            if not isinstance(var, Mapping):
                continue
            name, value = var.get("name"), var.get("value")
            shown = "" if value is None else str(value)
            path = container.path + ("env", i)
            if name == "NVIDIA_VISIBLE_DEVICES" and (gpu or shown.lower() not in _DISABLED):
                detail = ("fights CDI injection" if gpu else
                          "exposes GPUs to a container that requests none")
                ctx.emit("GPU401", obj, f"container {container.name!r} sets NVIDIA_VISIBLE_DEVICES"
                         f"={shown!r}: {detail}", path=path, container=container.name)
            elif name == "NVIDIA_DRIVER_CAPABILITIES" and gpu:
                ctx.emit("GPU402", obj, f"container {container.name!r} sets "
                         f"NVIDIA_DRIVER_CAPABILITIES={shown!r}: check it under CDI",
                         path=path, container=container.name)


def _requests_gpu(container: ContainerRef) -> bool:
    resources = container.data.get("resources")
    return isinstance(resources, Mapping) and (bool(resources.get("claims"))
                                               or uses_nvidia_devices(resources))
