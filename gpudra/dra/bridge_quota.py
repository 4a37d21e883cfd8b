"""Does `requests.<extendedResourceName>` quota keep counting GPUs once pods use claims?

kubernetes.io "Resource Quotas" (Quota for DRA resource claims): when Extended Resource
allocation by DRA (`DRAExtendedResource`, KEP-5004) is enabled and a DeviceClass maps an
extended resource name, "all devices requested from resource claims or extended resources are
counted towards all three quotas" (`<class>.deviceclass.resource.k8s.io/devices`,
`requests.<extendedResourceName>`, `requests.deviceclass.resource.kubernetes.io/<class>`), and
`requests.<name>` also counts device-plugin devices. With the gate off, claims are charged to
the per-class key only.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.dra.versions import MAX_MINOR, TargetVersion

_GATE = "DRAExtendedResource"
# The scheduler's claims for pods the bridge serves carry it (KEP-5004).
BRIDGE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


@dataclass(frozen=True, slots=True)
class ClaimCounting:
    counted: bool | None  # None: depends on a gate gpudra cannot see
    why: str


def claims_counted(minor: int | None, bridge_in_use: bool = False) -> ClaimCounting:
    """Whether the claims of a class that maps an extended resource count toward
    `requests.<that name>` on Kubernetes 1.`minor` (None: unknown); `bridge_in_use`: pods are
    seen served through the bridge, so the gate is on whatever the release's default."""
    if bridge_in_use:
        return ClaimCounting(True, f"pods here are served through the bridge, so {_GATE} is on")
    if minor is None:
        return ClaimCounting(None, f"only where {_GATE} is on: by default from Kubernetes 1.36, "
                                   "with the alpha gate turned on in 1.34 and 1.35")
    if minor < 34:
        return ClaimCounting(False, f"Kubernetes 1.{minor} has no extendedResourceName")
    support = TargetVersion(min(minor, MAX_MINOR)).supports("extendedResourceName")
    if support.default_on:
        return ClaimCounting(True, f"{_GATE} is {support.stage} and on in Kubernetes 1.{minor}")
    return ClaimCounting(None, f"{_GATE} is {support.stage} and off by default in Kubernetes "
                               f"1.{minor}: only if it was turned on")
