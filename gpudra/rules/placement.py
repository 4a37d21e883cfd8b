"""GPU3xx: placement (node selectors, affinity, runtime class, tolerations) of GPU pods."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpudra.dra.selectors import is_gfd_label, mapping_for
from gpudra.results.model import Severity
from gpudra.k8s.objects import PathT, SourceObject, dig
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.k8s.workloads import PodSpecRef

CATEGORY = "placement"

GPU301 = rule(
    "GPU301", "gfd-node-selector", Severity.INFO, CATEGORY,
    "GPU pod selects nodes by a GPU Feature Discovery label; under DRA it becomes a CEL selector.",
    "Let `gpudra convert` move the GPU label into the claim's CEL selector.",
)

GPU302 = rule(
    "GPU302", "gfd-node-affinity", Severity.INFO, CATEGORY,
    "GPU pod uses node affinity on a GPU Feature Discovery label.",
    "Move required GPU terms into the claim's CEL selector; review preferred terms by hand.",
)

GPU303 = rule(
    "GPU303", "nvidia-runtime-class", Severity.INFO, CATEGORY,
    "GPU pod sets an NVIDIA runtimeClassName.",
    "Keep it during the migration; drop it once nodes use CDI.",
)

GPU304 = rule(
    "GPU304", "gpu-toleration", Severity.INFO, CATEGORY,
    "GPU pod tolerates the nvidia.com/gpu taint: keep the toleration.",
    "Keep the toleration after conversion.",
)


class Placement(Checker):
    rules = (GPU301, GPU302, GPU303, GPU304)

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        for pod in ctx.gpu_use(obj).pods:
            if pod.uses_gpus:
                self._spec(obj, pod.spec, ctx)

    @staticmethod
    def _spec(obj: SourceObject, spec: PodSpecRef, ctx: AuditContext) -> None:
        data, base = spec.data, spec.path
        selector = data.get("nodeSelector")
        if isinstance(selector, Mapping):
            for key, value in selector.items():
                if is_gfd_label(key):
                    m = mapping_for(key)
                    target = f"becomes a selector on {m.dra}" if m.dra else "has no DRA equivalent"
                    ctx.emit(GPU301, obj, f"nodeSelector {key}={value} {target} ({m.note})",
                             path=base + ("nodeSelector", key))
        for where, key, preferred in _affinity_keys(data):
            if not is_gfd_label(key):
                continue
            if preferred:
                # A claim matches or not: a preference cannot become a CEL selector.
                ctx.emit(GPU302, obj, f"preferred node affinity on {key} has no DRA "
                         "equivalent (a claim either matches or not); keep it as node affinity "
                         "or list alternatives with firstAvailable", path=base + where)
                continue
            m = mapping_for(key)
            target = f"becomes a selector on {m.dra}" if m.dra else "has no DRA equivalent"
            ctx.emit(GPU302, obj, f"node affinity on {key} {target} ({m.note})",
                     path=base + where)
        runtime = data.get("runtimeClassName")
        if isinstance(runtime, str) and "nvidia" in runtime.lower():
            ctx.emit(GPU303, obj, f"runtimeClassName {runtime!r}: CDI exposes DRA devices; keep "
                     "it while the device plugin is still in use", path=base + ("runtimeClassName",))
        tolerations = data.get("tolerations")
        for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else ()):
            if isinstance(toleration, Mapping) and toleration.get("key") == "nvidia.com/gpu":
                ctx.emit(GPU304, obj, "toleration for nvidia.com/gpu: keep it (nothing adds it "
                         "automatically once the pod uses claims)", path=base + ("tolerations", i))


def _affinity_keys(spec: Mapping[str, Any]) -> Iterator[tuple[PathT, Any, bool]]:
    """(path of a node-affinity expression's key, the key, whether it is only preferred)."""
    node = dig(spec, "affinity", "nodeAffinity")
    required = dig(node, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    prefix: PathT = ("affinity", "nodeAffinity")
    for t, term in enumerate(required if isinstance(required, list) else ()):
        path = prefix + ("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", t)
        yield from ((where, key, False) for where, key in _expressions(term, path))
    preferred = dig(node, "preferredDuringSchedulingIgnoredDuringExecution")
    for t, term in enumerate(preferred if isinstance(preferred, list) else ()):
        path = prefix + ("preferredDuringSchedulingIgnoredDuringExecution", t, "preference")
        yield from ((where, key, True) for where, key in _expressions(dig(term, "preference"), path))


def _expressions(term: Any, path: PathT) -> Iterator[tuple[PathT, Any]]:
    expressions = dig(term, "matchExpressions")
    for e, expr in enumerate(expressions if isinstance(expressions, list) else ()):
        if isinstance(expr, Mapping):
            yield path + ("matchExpressions", e, "key"), expr.get("key")

