"""CLUSTER001: does the API server serve `resource.k8s.io`, at a version DRA drivers use?

Facts (gpudra/dra/served.py, docs/dra-reference.md section 1.1): structured-parameter DRA starts
at 1.32 (v1beta1) and went GA in 1.34 (v1, the only version served by default). On 1.32 and 1.33
nothing is served until the `DynamicResourceAllocation` gate is on for every component and
`--runtime-config` enables the beta versions. The NVIDIA DRA driver documents Kubernetes
**1.34.2** as its minimum (dra-driver-nvidia-gpu @ v0.4.1 and main, docs/prerequisites.md).
"""

from __future__ import annotations

from gpudra.dra.served import GROUP, dra_enable_recipe, enable_versions
from gpudra.dra.versions import MIN_MINOR, TargetVersion
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import ClusterSnapshot
from gpudra.preflight.runtime import Version

NVIDIA_DRIVER_MIN_PATCH_1_34 = 2  # Kubernetes 1.34.2

CLUSTER001 = check(
    "CLUSTER001", "Kubernetes serves the DRA API (resource.k8s.io)", Tier.CLUSTER,
    "The API server's version and the resource.k8s.io versions discovery lists.",
    """
**Why it matters.** ResourceClaims, DeviceClasses and ResourceSlices live in the
`resource.k8s.io` API group. Kubernetes 1.34 made DRA generally available and serves
`resource.k8s.io/v1` by default. Kubernetes 1.32 (`v1beta1`) and 1.33 (`v1beta1`, `v1beta2`)
have DRA in beta and serve **nothing** until the admin turns it on:

- 1.32: feature gate `DynamicResourceAllocation=true` on kube-apiserver,
  kube-controller-manager, kube-scheduler and every kubelet, and kube-apiserver
  `--runtime-config=resource.k8s.io/v1beta1=true`;
- 1.33: the same gate, and
  `--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true`.

Releases before 1.32 have no structured-parameter DRA. The NVIDIA DRA driver documents
Kubernetes 1.34.2 as its minimum. gpudra reads the server version from `/version` and the
served versions from API discovery, so it reports what the server really serves, whatever the
flags say.

With `--target-version`, the check judges the planned release instead (an upgrade plan): for
example a 1.33 cluster planned at 1.34 passes, because 1.34 serves `resource.k8s.io/v1` by
default.

**Outcomes.** *pass*: `resource.k8s.io/v1` is served (or will be, at the target).
*warn*: 1.32/1.33 with the beta API turned on (DRA works, but beta, and below the NVIDIA
driver's minimum), or 1.34.0/1.34.1. *fail*: older than 1.32; 1.32/1.33 with nothing served
(the message names the gate and `--runtime-config` needed); 1.34+ with `v1` turned off.
*unavailable*: `/version` or discovery could not be read.

**Fix.** Upgrade the control plane to 1.34.2 or newer, or turn on the beta API as above.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def check_api_version(snapshot: ClusterSnapshot,
                      options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    problem = snapshot.version_problem()
    version = snapshot.version
    if problem or version is None:
        return result(CLUSTER001, CheckOutcome.UNAVAILABLE, f"cannot tell the Kubernetes version: "
                      f"{problem}", "run `kubectl version` and check access to /version")
    if version.major != 1:
        return result(CLUSTER001, CheckOutcome.UNAVAILABLE,
                      f"Kubernetes {version}: gpudra only knows 1.x releases",
                      "see docs/dra-reference.md section 1.1")
    served = snapshot.served_versions(GROUP)
    if served is None:
        return result(CLUSTER001, CheckOutcome.UNAVAILABLE,
                      f"Kubernetes {version}, but API discovery could not be read to see which "
                      f"{GROUP} versions are served: {snapshot.discovery_problem()}",
                      f"run `kubectl api-versions | grep {GROUP}`")
    detail = f"{GROUP} versions served: {', '.join(served) or 'none'}"
    target = options.target_version
    if target is not None and target.minor != version.minor:
        return _judge_plan(version, served, target, detail)
    return _judge_running(version, served, detail)


def _judge_running(version: Version, served: tuple[str, ...], detail: str) -> CheckResult:
    here = f"Kubernetes {version}"
    if version.minor < MIN_MINOR:
        return result(CLUSTER001, CheckOutcome.FAIL,
                      f"{here} has no structured-parameter DRA (v1beta1 came in 1.32, v1 in 1.34)",
                      "upgrade the control plane to 1.34.2 or newer", details=(detail,))
    if version.minor < 34:
        return _judge_beta(here, TargetVersion(version.minor), served, (detail,))
    if "v1" not in served:
        return _v1_turned_off(here, version.minor, served, (detail,))
    if version.minor == 34 and not version.at_least(1, 34, NVIDIA_DRIVER_MIN_PATCH_1_34):
        return result(CLUSTER001, CheckOutcome.WARN,
                      f"{here} serves {GROUP}/v1, but the NVIDIA DRA driver documents 1.34.2 as "
                      "its minimum", "upgrade to 1.34.2 or newer", details=(detail,))
    return result(CLUSTER001, CheckOutcome.PASS, f"{here} serves {GROUP}/v1 (DRA is GA)",
                  details=(detail,))


def _judge_beta(here: str, release: TargetVersion, served: tuple[str, ...],
                details: tuple[str, ...]) -> CheckResult:
    if not served:
        return result(CLUSTER001, CheckOutcome.FAIL,
                      f"{here} serves no {GROUP} version: DRA is beta and off by default; "
                      f"{dra_enable_recipe(release)}",
                      f"{dra_enable_recipe(release)}; or upgrade to 1.34.2+, which serves "
                      f"{GROUP}/v1 by default", details=details)
    missing = [v for v in enable_versions(release) if v not in served]
    note = f"; also serve {', '.join(missing)} (the NVIDIA driver's recipe)" if missing else ""
    return result(CLUSTER001, CheckOutcome.WARN,
                  f"{here} serves {GROUP} {', '.join(served)} (beta, turned on by the admin; the "
                  f"DynamicResourceAllocation gate must be on for every component){note}; the "
                  "NVIDIA DRA driver documents 1.34.2 as its minimum",
                  f"upgrade to 1.34.2 or newer, where {GROUP}/v1 is served by default",
                  details=details)


def _v1_turned_off(here: str, minor: int, served: tuple[str, ...], details: tuple[str, ...],
                   then: str = "") -> CheckResult:
    """`then` ends the message (what happens to the flags in a planned move)."""
    gate = " and DynamicResourceAllocation=false from --feature-gates" if minor == 34 else ""
    return result(CLUSTER001, CheckOutcome.FAIL,
                  f"{here} does not serve {GROUP}/v1 (served: {', '.join(served) or 'none'}): "
                  f"it has been turned off{then}",
                  f"remove {GROUP}/v1=false from kube-apiserver's --runtime-config{gate}",
                  details=details)


def _judge_plan(version: Version, served: tuple[str, ...], target: TargetVersion,
                detail: str) -> CheckResult:
    direction = "upgrade from" if target.minor > version.minor else "downgrade from"
    details = (detail, f"planned: {direction} Kubernetes {version} to {target}")
    if version.minor >= 34 and "v1" not in served:
        return _v1_turned_off(f"Kubernetes {version}", version.minor, served, details,
                              f"; the flags stay when it moves to {target}")
    if target.minor >= 34:
        minimum = "; use 1.34.2 or later, the NVIDIA DRA driver's minimum" \
            if target.minor == 34 else ""
        return result(CLUSTER001, CheckOutcome.PASS,
                      f"target {target} serves {GROUP}/v1 by default ({direction} {version})"
                      f"{minimum}", details=details)
    if version.minor >= 34:
        served = ()  # what 1.34+ serves says nothing about what an older release will serve
    return _judge_beta(f"target {target}", target, served, details)
