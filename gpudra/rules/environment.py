"""GPU4xx: environment variables that fight CDI device injection."""

from __future__ import annotations

from gpudra.gpu_use import ContainerUse
from gpudra.model import Severity
from gpudra.objects import SourceObject
from gpudra.rules.base import AuditContext, Checker, rule

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

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        for pod in ctx.gpu_use(obj).pods:
            for container in pod.containers:
                self._container(obj, container, ctx)

    @staticmethod
    def _container(obj: SourceObject, use: ContainerUse, ctx: AuditContext) -> None:
        container = use.container
        gpu = use.uses_gpus
        for var in use.env:
            shown = "" if var.value is None else str(var.value)
            path = container.path + ("env", var.index)
            if var.name == "NVIDIA_VISIBLE_DEVICES" and (gpu or shown.lower() not in _DISABLED):
                detail = ("fights CDI injection" if gpu else
                          "exposes GPUs to a container that requests none")
                ctx.emit("GPU401", obj, f"container {container.name!r} sets NVIDIA_VISIBLE_DEVICES"
                         f"={shown!r}: {detail}", path=path, container=container.name)
            elif var.name == "NVIDIA_DRIVER_CAPABILITIES" and gpu:
                ctx.emit("GPU402", obj, f"container {container.name!r} sets "
                         f"NVIDIA_DRIVER_CAPABILITIES={shown!r}: check it under CDI",
                         path=path, container=container.name)
