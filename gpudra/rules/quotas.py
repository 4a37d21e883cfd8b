"""GPU2xx: quotas and limits that count device-plugin GPUs and stop counting once pods use claims."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.k8s.devices import classify
from gpudra.dra.bridge_quota import BRIDGE_CLAIM_ANNOTATION, claims_counted
from gpudra.k8s.gpu_use import is_nvidia, quota_keys
from gpudra.results.model import RuleInfo, Severity
from gpudra.k8s.objects import SourceObject, dig
from gpudra.k8s.quantity import parse_device_count
from gpudra.rules.base import AuditContext, Checker, rule

CATEGORY = "quotas"

_DRA_QUOTA_DOC = """
Under DRA, devices are charged per DeviceClass: `<class>.deviceclass.resource.k8s.io/devices`
(no `requests.` prefix), for example `gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "8"`
and `mig.nvidia.com.deviceclass.resource.k8s.io/devices`. The number of claims is capped with
`count/resourceclaims.resource.k8s.io`. Keep the old keys while the device plugin still runs
pods in the namespace: they go on counting those.
"""

GPU201 = rule(
    "GPU201", "resourcequota-device-plugin", Severity.WARNING, CATEGORY,
    "ResourceQuota limits device-plugin GPUs; pods that use claims are not counted by it.",
    "Add gpu.nvidia.com.deviceclass.resource.k8s.io/devices (convert does it).",
    explanation="""
A ResourceQuota with `requests.nvidia.com/gpu` (or `limits.nvidia.com/gpu`) counts the extended
resource in pod specs. A pod that gets its GPU from a ResourceClaim requests no `nvidia.com/gpu`,
so the quota silently stops limiting GPU use as workloads migrate.

Exception (KEP-5004): once a DeviceClass maps the name (`extendedResourceName: nvidia.com/gpu`)
and `DRAExtendedResource` is on (by default from Kubernetes 1.36; alpha and off in 1.34 and
1.35), `requests.nvidia.com/gpu` also counts every device claimed from that class. Then the
quota keeps limiting, and GPU201 is not reported: it is when the class maps the name but the
release leaves the gate off by default (the message says so), and always for claims of other
classes. A cluster audit judges the cluster's own version, and takes claims the scheduler made
for the bridge as proof that the gate is on.
""" + _DRA_QUOTA_DOC + """
Correct:

```yaml
spec:
  hard:
    requests.nvidia.com/gpu: "8"                          # while device-plugin pods remain
    gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "8"
    count/resourceclaims.resource.k8s.io: "20"
```
""",
)

GPU202 = rule(
    "GPU202", "limitrange-device-plugin", Severity.WARNING, CATEGORY,
    "LimitRange sets defaults or bounds for a device-plugin GPU resource.",
    "Replace with per-class ResourceQuota keys; remove GPU defaults.",
    explanation="""
A LimitRange `default`, `defaultRequest`, `min` or `max` for `nvidia.com/gpu` applies to
containers only. Claims are not containers' resources, so these bounds have no effect on DRA
pods, and a `default` would even add a device-plugin request to every new container. Bound DRA
use with the ResourceQuota keys instead.
""" + _DRA_QUOTA_DOC,
)

GPU203 = rule(
    "GPU203", "kubeflow-profile-gpu-quota", Severity.WARNING, CATEGORY,
    "Kubeflow Profile resourceQuotaSpec limits device-plugin GPUs.",
    "Add the per-class DRA key to resourceQuotaSpec.hard.",
    explanation="""
A Kubeflow Profile's `spec.resourceQuotaSpec` becomes a ResourceQuota in the profile's namespace,
with the same blind spot as GPU201.
""" + _DRA_QUOTA_DOC,
)

GPU204 = rule(
    "GPU204", "kueue-device-plugin-resource", Severity.WARNING, CATEGORY,
    "Kueue ClusterQueue covers a device-plugin GPU resource.",
    "Map the DRA device class to this resource with Kueue deviceClassMappings.",
)

GPU205 = rule(
    "GPU205", "karpenter-device-plugin-limit", Severity.WARNING, CATEGORY,
    "Karpenter NodePool limits nodes by nvidia.com/gpu capacity.",
    "Add a CPU/memory limit that also bounds GPU nodes; review after migration.",
)


class Quotas(Checker):
    rules = (GPU201, GPU202, GPU203, GPU204, GPU205)

    def __init__(self) -> None:
        # Judged at the end: whether a quota still counts claims depends on the DeviceClasses
        # that map its resource (extendedResourceName) and on whether the bridge is in use.
        self._quotas: list[tuple[SourceObject, RuleInfo]] = []
        self._mapped: dict[str, list[str]] = {}  # extended resource -> classes that map it
        self._bridge_in_use = False

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        kind, group, data = obj.kind, obj.group, obj.data
        if (kind, group) in (("ResourceQuota", ""), ("Profile", "kubeflow.org")):
            self._quotas.append((obj, GPU201 if kind == "ResourceQuota" else GPU203))
        elif kind == "DeviceClass" and group == "resource.k8s.io":
            name = dig(data, "spec", "extendedResourceName")
            if isinstance(name, str) and name:
                self._mapped.setdefault(name, []).append(str(obj.name))
        elif kind == "ResourceClaim" and group == "resource.k8s.io":
            if str(obj.annotations.get(BRIDGE_CLAIM_ANNOTATION)) == "true":
                self._bridge_in_use = True
        elif kind == "LimitRange" and group == "":
            limits = dig(data, "spec", "limits")
            for i, item in enumerate(limits if isinstance(limits, list) else ()):
                for section in ("default", "defaultRequest", "min", "max", "maxLimitRequestRatio"):
                    for name, value in _items(dig(item, section)):
                        if _is_nvidia(name):
                            ctx.emit(GPU202, obj, f"LimitRange {section} sets {name}: {value!r}; "
                                     "it does not apply to claims",
                                     path=("spec", "limits", i, section, name), resource=name,
                                     quantity=parse_device_count(value).value)
        elif kind == "ClusterQueue" and group == "kueue.x-k8s.io":
            self._kueue(obj, ctx)
        elif kind == "NodePool" and group == "karpenter.sh":
            for name, value in _items(dig(data, "spec", "limits")):
                if _is_nvidia(name):
                    ctx.emit(GPU205, obj, f"NodePool limits {name}: {value!r}; DRA nodes "
                             "advertise no such capacity", path=("spec", "limits", name),
                             resource=name, quantity=parse_device_count(value).value)

    def finish(self, ctx: AuditContext) -> None:
        for obj, quota_rule in self._quotas:
            self._hard(obj, ctx, quota_rule)

    def _hard(self, obj: SourceObject, ctx: AuditContext, quota_rule: RuleInfo) -> None:
        for quota in quota_keys(obj.data):
            if not is_nvidia(quota.device):
                continue
            add = f"add {_dra_class(quota.resource)}.deviceclass.resource.k8s.io/devices"
            classes = self._mapped.get(quota.resource)
            # Quota only tracks extended resources as requests.<name>; other spellings are
            # accepted by the API server and then never enforced.
            if quota.scope != "requests":
                detail = "is never enforced (only requests.<resource> counts extended resources)"
            elif not classes:
                detail = "counts device-plugin requests only"
            else:
                counting = claims_counted(ctx.kubernetes_minor, self._bridge_in_use)
                if counting.counted:
                    continue  # it counts the claims of the class that maps it: still limits
                mapped = f"DeviceClass {', '.join(sorted(classes))} maps {quota.resource}"
                detail = (f"counts the claims of that class too ({mapped}) {counting.why}"
                          if counting.counted is None else
                          f"counts device-plugin requests only ({mapped}, but {counting.why})")
                add = f"to be sure, {add}"
            ctx.emit(quota_rule, obj, f"quota {quota.key}: {quota.value!r} {detail}; {add}",
                     path=quota.path, resource=quota.resource, quantity=quota.count.value)

    @staticmethod
    def _kueue(obj: SourceObject, ctx: AuditContext) -> None:
        groups = dig(obj.data, "spec", "resourceGroups")
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            covered = dig(group, "coveredResources")
            for c, name in enumerate(covered if isinstance(covered, list) else ()):
                if _is_nvidia(name):
                    ctx.emit(GPU204, obj, f"ClusterQueue covers {name}; pods with claims are not "
                             f"charged unless a deviceClassMapping maps {_dra_class(name)} to it",
                             path=("spec", "resourceGroups", g, "coveredResources", c),
                             resource=name)


def _is_nvidia(name: Any) -> bool:
    return is_nvidia(classify(name))


def _dra_class(name: str) -> str:
    # MIG slices (shared or not) are allocated from their own DeviceClass under DRA.
    device = classify(name)
    return "mig.nvidia.com" if device is not None and device.mig_profile else "gpu.nvidia.com"


def _items(value: Any) -> Iterable[tuple[Any, Any]]:
    return value.items() if isinstance(value, Mapping) else ()

