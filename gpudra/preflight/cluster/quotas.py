"""CLUSTER011: ResourceQuotas that limit device-plugin GPUs and stop limiting once pods use claims.

Facts (docs/dra-reference.md section 4; kubernetes/kubernetes
`pkg/quota/v1/evaluator/core/resource_claims.go`, the version with DeviceClassMapping, read
through the file index):
- Claims are charged per class as `<class>.deviceclass.resource.k8s.io/devices` and counted as
  `count/resourceclaims.resource.k8s.io`.
- With the `DRAExtendedResource` gate on, a claim's devices are also charged to
  `requests.<extendedResourceName>` of its class (and to
  `requests.deviceclass.resource.kubernetes.io/<class>`), so `requests.nvidia.com/gpu` keeps
  counting the claims of a class that maps `nvidia.com/gpu` (kubernetes.io "Resource Quotas":
  "counted towards all three quotas"; gpudra.dra.bridge_quota). Claims the scheduler made for
  the bridge show the gate is on even on a release where it is off by default.
- A pod whose GPU comes from a claim requests no `nvidia.com/gpu`, so otherwise a
  `requests.nvidia.com/gpu` quota stops counting it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.dra.bridge_quota import ClaimCounting, claims_counted
from gpudra.dra.emit import QUOTA_CLASS_SUFFIX
from gpudra.k8s.gpu_use import QuotaKey, quota_keys
from gpudra.k8s.object_fields import workload_name
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.bridge import bridge_claims
from gpudra.preflight.cluster.extended_resource import mapped_classes
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions, judged_release
from gpudra.preflight.cluster.snapshot import (
    DEVICECLASSES,
    RESOURCECLAIMS,
    RESOURCEQUOTAS,
    ClusterSnapshot,
    unreadable,
)

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
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.UNAVAILABLE))


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
    mapped, counting = _bridged_names(snapshot, options)
    uncovered, covered = [], []
    for quota in quotas.items:
        keys = device_plugin_keys(quota)
        if not keys:
            continue
        namespace = str(dig(quota, "metadata", "namespace") or "")
        name, shown = workload_name(quota), [k.key for k in keys]
        bridged = all(k.scope == "requests" and k.resource in mapped for k in keys)
        if by_namespace_dra.get(namespace):
            covered.append(f"{name}: {', '.join(shown)} plus "
                           f"{', '.join(sorted(by_namespace_dra[namespace]))}")
        elif bridged and counting is not None and counting.counted:
            covered.append(f"{name}: {', '.join(shown)} (also charged for claims through "
                           f"extendedResourceName: {counting.why})")
        else:
            why = (f" (a DeviceClass maps it: it counts that class's claims "
                   f"{counting.why})" if bridged and counting is not None else "")
            uncovered.append((name, shown, why))
    details = [f"only device-plugin GPUs: {name}: {', '.join(keys)}{why}"
               for name, keys, why in uncovered]
    details += [f"covers DRA: {line}" for line in covered]
    if uncovered:
        gated = all(why for _, _, why in uncovered)
        return result(CLUSTER011, CheckOutcome.WARN,
                      f"{plural(len(uncovered), 'ResourceQuota')} "
                      f"limit{'s' if len(uncovered) == 1 else ''} only device-plugin GPUs "
                      f"({named([n for n, _, _ in uncovered])}): pods using claims are not "
                      "counted" + (f" unless DRAExtendedResource is on ({counting.why})"
                                   if gated and counting is not None else ""),
                      "add gpu.nvidia.com.deviceclass.resource.k8s.io/devices (and "
                      "mig.nvidia.com.deviceclass.resource.k8s.io/devices) next to each key"
                      + (", or turn DRAExtendedResource on (kube-apiserver, kube-scheduler, "
                         "kube-controller-manager, kubelets)" if gated else ""),
                      details=details)
    if covered:
        return result(CLUSTER011, CheckOutcome.PASS,
                      f"{plural(len(covered), 'ResourceQuota')} on device-plugin GPUs also "
                      f"limit{'s' if len(covered) == 1 else ''} DRA devices", details=details)
    return result(CLUSTER011, CheckOutcome.PASS, "no ResourceQuota limits device-plugin GPUs")


def _bridged_names(snapshot: ClusterSnapshot, options: ClusterOptions
                   ) -> tuple[set[str], ClaimCounting | None]:
    """Extended resource names some DeviceClass maps, and whether their quota keys count that
    class's claims on the judged release (bridge claims in the cluster prove the gate on)."""
    classes = snapshot.listing(DEVICECLASSES).items
    if classes is None:
        return set(), None
    names = {name for _, name in mapped_classes(classes)}
    release = judged_release(snapshot, options)
    in_use = bool(bridge_claims(snapshot.listing(RESOURCECLAIMS).items))
    return names, claims_counted(release.minor if release is not None else None, in_use)
