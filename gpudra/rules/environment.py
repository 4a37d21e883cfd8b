"""GPU4xx: environment variables that fight CDI device injection."""

from __future__ import annotations

from gpudra.k8s.gpu_use import HIDDEN, ContainerUse
from gpudra.results.model import Severity
from gpudra.k8s.objects import SourceObject
from gpudra.rules.base import AuditContext, Checker, rule

CATEGORY = "environment"

GPU401 = rule(
    "GPU401", "nvidia-visible-devices-env", Severity.WARNING, CATEGORY,
    "Container sets NVIDIA_VISIBLE_DEVICES.",
    "Remove it; CDI decides which devices the container sees.",
)

GPU402 = rule(
    "GPU402", "nvidia-driver-capabilities-env", Severity.WARNING, CATEGORY,
    "GPU container sets NVIDIA_DRIVER_CAPABILITIES.",
    "Check the workload's driver libraries under CDI; drop the variable if unneeded.",
)

GPU403 = rule(
    "GPU403", "gpu-monitor-needs-admin-access", Severity.WARNING, CATEGORY,
    "A DaemonSet container sees every GPU through NVIDIA_VISIBLE_DEVICES without requesting "
    "one: under DRA it needs an admin-access claim.",
    "Give the DaemonSet an admin-access claim (gpudra convert --admin-access) and label its "
    "namespace resource.kubernetes.io/admin-access=true.",
)


class EnvironmentVars(Checker):
    rules = (GPU401, GPU402, GPU403)

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        for pod in ctx.gpu_use(obj).pods:
            for container in pod.containers:
                self._container(obj, container, ctx)
                if obj.kind == "DaemonSet" and container.sees_unrequested_gpus:
                    var = next(v for v in container.env if v.name == "NVIDIA_VISIBLE_DEVICES")
                    ctx.emit(GPU403, obj,
                             f"container {container.container.name!r} sees every GPU of its node "
                             f"(NVIDIA_VISIBLE_DEVICES={var.value!r}) without requesting one: "
                             "under DRA it needs a claim with adminAccess: true and "
                             "allocationMode: All, in a namespace labelled "
                             "resource.kubernetes.io/admin-access: \"true\" (KEP-5018)",
                             path=container.container.path + ("env", var.index),
                             container=container.container.name)

    @staticmethod
    def _container(obj: SourceObject, use: ContainerUse, ctx: AuditContext) -> None:
        container = use.container
        gpu = use.uses_gpus
        for var in use.env:
            shown = "" if var.value is None else str(var.value)
            path = container.path + ("env", var.index)
            if var.name == "NVIDIA_VISIBLE_DEVICES" and (gpu or shown.lower() not in HIDDEN):
                detail = ("fights CDI injection" if gpu else
                          "exposes GPUs to a container that requests none")
                ctx.emit(GPU401, obj, f"container {container.name!r} sets NVIDIA_VISIBLE_DEVICES"
                         f"={shown!r}: {detail}", path=path, container=container.name)
            elif var.name == "NVIDIA_DRIVER_CAPABILITIES" and gpu:
                ctx.emit(GPU402, obj, f"container {container.name!r} sets "
                         f"NVIDIA_DRIVER_CAPABILITIES={shown!r}: check it under CDI",
                         path=path, container=container.name)
