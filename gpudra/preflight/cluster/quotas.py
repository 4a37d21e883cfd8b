"""CLUSTER011: ResourceQuotas that limit device-plugin GPUs and stop limiting once pods use claims.

Facts (docs/dra-reference.md section 4; kubernetes/kubernetes
`pkg/quota/v1/evaluator/core/resource_claims.go`, the version with DeviceClassMapping, read
through the file index):
- Claims are charged per class as `<class>.deviceclass.resource.k8s.io/devices` and counted as
  `count/resourceclaims.resource.k8s.io`.
- With the `DRAExtendedResource` gate on, a claim's devices are also charged to
  `requests.<extendedResourceName>` of its class (and to
  `requests.deviceclass.resource.kubernetes.io/<class>`), so `requests.nvidia.com/gpu` keeps
  counting the claims of a class that maps `nvidia.com/gpu`.
- A pod whose GPU comes from a claim requests no `nvidia.com/gpu`, so otherwise a
  `requests.nvidia.com/gpu` quota stops counting it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.dra.emit import QUOTA_CLASS_SUFFIX
from gpudra.gpu_use import QuotaKey, quota_keys
from gpudra.objects import as_mapping, dig, plural
from gpudra.preflight.cluster.extended_resource import mapped_classes
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions, judged_release
from gpudra.preflight.cluster.snapshot import (
    DEVICECLASSES,
    RESOURCEQUOTAS,
    ClusterSnapshot,
    unreadable,
)
from gpudra.preflight.cluster.workloads import workload_name
from gpudra.preflight.model import CheckResult, Outcome, Tier, check, result

CLUSTER011 = check(
    "CLUSTER011", "ResourceQuotas count DRA GPUs", Tier.CLUSTER,
    "Quotas on `nvidia.com/gpu` also limit devices taken through claims.",
    """
**Why it matters.** A ResourceQuota with `requests.nvidia.com/gpu` counts the GPUs pods
request from the device plugin. A pod that gets its GPU from a ResourceClaim requests no
`nvidia.com/gpu`, so as workloads migrate the quota silently stops limiting GPU use. DRA
devices are charged per DeviceClass:
`gpu.nvidia.com.deviceclass.resource.k8s.io/devices` (no `requests.` prefix),
`mig.nvidia.com.deviceclass.resource.k8s.io/devices`, and the number of claims as
`count/resourceclaims.resource.k8s.io`.

Exception: when a DeviceClass maps the extended resource (`extendedResourceName:
nvidia.com/gpu`) and `DRAExtendedResource` is on (1.36+ by default), the quota code charges
that class's claims to `requests.nvidia.com/gpu` as well, so such a quota keeps working for
that class.

**Outcomes.** *pass*: no quota limits device-plugin GPUs, or every namespace that has one
also limits the DRA class (or the extended-resource mapping covers it). *warn*: quotas that
only count device-plugin GPUs (the message names them). *unavailable*: ResourceQuotas could
not be listed.

**Fix.** Add per-class keys next to the old ones (`gpudra convert` does it in manifests):

```yaml
spec:
  hard:
    requests.nvidia.com/gpu: "8"          # while device-plugin pods remain
    gpu.nvidia.com.deviceclass.resource.k8s.io/devices: "8"
```
""",
    (Outcome.PASS, Outcome.WARN, Outcome.UNAVAILABLE))


def device_plugin_keys(quota: Mapping[str, Any]) -> list[QuotaKey]:
    """`spec.hard` keys that count NVIDIA device-plugin resources. Listed items carry no
    `kind`, which gpu_use.quota_keys needs to find `hard`."""
    listed = {**quota, "kind": "ResourceQuota", "apiVersion": "v1"}
    return [key for key in quota_keys(listed) if key.device.is_nvidia_device_plugin]


def check_quotas(snapshot: ClusterSnapshot,
                 options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    quotas = snapshot.listing(RESOURCEQUOTAS)
    if quotas.items is None:
        return unreadable(CLUSTER011, "ResourceQuotas", quotas, "resourcequotas in all namespaces")
    by_namespace_dra: dict[str, set[str]] = {}
    for quota in quotas.items:
        namespace = str(dig(quota, "metadata", "namespace") or "")
        by_namespace_dra.setdefault(namespace, set()).update(
            k for k in as_mapping(dig(quota, "spec", "hard")) if str(k).endswith(QUOTA_CLASS_SUFFIX))
    bridged = _bridged_names(snapshot, options)
    uncovered, covered = [], []
    for quota in quotas.items:
        keys = device_plugin_keys(quota)
        if not keys:
            continue
        namespace = str(dig(quota, "metadata", "namespace") or "")
        name, shown = workload_name(quota), [k.key for k in keys]
        if by_namespace_dra.get(namespace):
            covered.append(f"{name}: {', '.join(shown)} plus "
                           f"{', '.join(sorted(by_namespace_dra[namespace]))}")
        elif all(k.scope == "requests" and k.resource in bridged for k in keys):
            covered.append(f"{name}: {', '.join(shown)} (also charged for claims through "
                           "extendedResourceName)")
        else:
            uncovered.append((name, shown))
    details = [f"only device-plugin GPUs: {name}: {', '.join(keys)}" for name, keys in uncovered]
    details += [f"covers DRA: {line}" for line in covered]
    if uncovered:
        return result(CLUSTER011, Outcome.WARN,
                      f"{plural(len(uncovered), 'ResourceQuota')} "
                      f"limit{'s' if len(uncovered) == 1 else ''} only device-plugin GPUs "
                      f"({named([n for n, _ in uncovered])}): pods using claims are not counted",
                      "add gpu.nvidia.com.deviceclass.resource.k8s.io/devices (and "
                      "mig.nvidia.com.deviceclass.resource.k8s.io/devices) next to each key",
                      details=details)
    if covered:
        return result(CLUSTER011, Outcome.PASS,
                      f"{plural(len(covered), 'ResourceQuota')} on device-plugin GPUs also "
                      f"limit{'s' if len(covered) == 1 else ''} DRA devices", details=details)
    return result(CLUSTER011, Outcome.PASS, "no ResourceQuota limits device-plugin GPUs")


def _bridged_names(snapshot: ClusterSnapshot, options: ClusterOptions) -> set[str]:
    """Extended resource names whose claims the quota code also charges (gate on by default)."""
    classes = snapshot.listing(DEVICECLASSES).items
    release = judged_release(snapshot, options)
    if classes is None or release is None or release.features is None:
        return set()
    support = release.features.supports("extendedResourceName")
    if not support.default_on:
        return set()
    return {name for _, name in mapped_classes(classes)}
