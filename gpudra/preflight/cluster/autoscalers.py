"""CLUSTER012-013: node autoscalers that do not (or not yet) provision for ResourceClaims.

cluster-autoscaler (kubernetes/autoscaler @ cluster-autoscaler-1.32.0 ... -1.36.1, facts-turn2
section 10): no DRA before 1.32; `--enable-dynamic-resource-allocation` exists from 1.32 with
default false (1.32-1.34); from 1.35 it defaults to true and setting it false is fatal. CA 1.32
vendors k8s.io/api v0.32 and so reads `resource.k8s.io/v1beta1`; the project recommends CA
minor = Kubernetes minor. Scale-up for claims needs node templates with ResourceSlices from the
cloud provider. Image `registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.1`.

Karpenter (kubernetes-sigs/karpenter @ v1.14.1, issues #3228 and #1231; facts-turn2 section 11):
`--ignore-dra-requests` / `IGNORE_DRA_REQUESTS` defaults to true since v1.7.0: pods with claims
get "not yet supported by Karpenter" and no node is provisioned for them. v1.14 adds a
DRA-aware simulation behind `--ignore-dra-requests=false`, which needs the cloud provider to
describe instance types' devices; support for individual drivers is out of scope upstream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.k8s.gpu_use import is_device_plugin_resource
from gpudra.k8s.object_fields import (
    Container,
    containers,
    flag_value,
    image_repository,
    workload_name,
)
from gpudra.k8s.objects import as_list, dig
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions, judged_release
from gpudra.preflight.cluster.snapshot import DEPLOYMENTS, NODEPOOLS, ClusterSnapshot, unreadable
from gpudra.preflight.runtime import Version, image_version

CA_FLAG = "--enable-dynamic-resource-allocation"
KARPENTER_FLAG = "--ignore-dra-requests"
KARPENTER_ENV = "IGNORE_DRA_REQUESTS"

CLUSTER012 = check(
    "CLUSTER012", "cluster-autoscaler handles DRA", Tier.CLUSTER,
    "A cluster-autoscaler in the cluster is new enough, and configured, to scale for claims.",
    """
**Why it matters.** A cluster-autoscaler that ignores ResourceClaims does not add GPU nodes
for pending DRA pods (or adds nodes that cannot satisfy them). gpudra finds
cluster-autoscaler Deployments by image and reads the version from the image tag and the flag
`--enable-dynamic-resource-allocation` from the command line:

| cluster-autoscaler | DRA |
|---|---|
| up to 1.31 | none |
| 1.32 to 1.34 | flag exists, **off** by default |
| 1.35 and later | on by default; turning it off is a fatal error |

The project recommends running the autoscaler minor that matches the cluster's; 1.32 reads
the `resource.k8s.io/v1beta1` API, which 1.34+ clusters do not serve by default. Scaling up
for claims also needs node templates that describe the GPUs (ResourceSlices) from the cloud
provider. An autoscaler running outside the cluster (a managed service) is not visible.

**Outcomes.** *pass*: no cluster-autoscaler in the cluster, or one with DRA on and a matching
minor. *warn*: DRA on but the minor lags a 1.34+ cluster. *fail*: older than 1.32, DRA off, or
`--enable-dynamic-resource-allocation=false` on 1.35+. *unavailable*: Deployments could not
be listed, or the image tag carries no version.

**Fix.** Run the cluster-autoscaler release matching the cluster (1.35+ has DRA on), or add
`--enable-dynamic-resource-allocation=true` on 1.32-1.34.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

CLUSTER013 = check(
    "CLUSTER013", "Karpenter and DRA pods", Tier.CLUSTER,
    "Karpenter does not provision nodes for pods with ResourceClaims by default.",
    """
**Why it matters.** Since v1.7, Karpenter ignores pods with ResourceClaims by default
(`--ignore-dra-requests=true`): they get the scheduling error "pod has Dynamic Resource
Allocation requirements that are not yet supported by Karpenter" and no node is created for
them.
v1.14 adds an experimental DRA-aware scheduling simulation behind
`--ignore-dra-requests=false`, which also needs the cloud provider to describe the devices of
each instance type; support for individual drivers is out of scope upstream (tracking issues
kubernetes-sigs/karpenter#3228 and #1231). So DRA GPU pods need capacity Karpenter does not
manage, or a tested opt-in.

gpudra looks for Karpenter's Deployment (image path containing `karpenter`) and for the
NodePool API (`karpenter.sh`, also served when the controller runs outside the cluster, as in
managed offerings), and names the NodePools that look like GPU pools (GPU in a requirement
key, an `nvidia.com/gpu` taint or label).

**Outcomes.** *pass*: Karpenter is not installed (no NodePool API, no controller).
*warn*: Karpenter is installed (the message says whether DRA requests are ignored and which
NodePools provide GPUs). *unavailable*: no controller was found and discovery could not tell
whether the NodePool API is served.

**Fix.** Keep DRA GPU nodes in node groups Karpenter does not manage (static node groups, or
cluster-autoscaler with DRA on), or test Karpenter v1.14+ with `--ignore-dra-requests=false`
on a provider that describes GPU devices.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.UNAVAILABLE))


def _autoscaler_containers(deployments: Iterable[Mapping[str, Any]]
                           ) -> list[tuple[Mapping[str, Any], Container]]:
    found = []
    for deploy in deployments:
        for ctr in containers(deploy):
            if image_repository(ctr.image).rsplit("/", 1)[-1].startswith("cluster-autoscaler"):
                found.append((deploy, ctr))
    return found


def check_cluster_autoscaler(snapshot: ClusterSnapshot,
                             options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    deployments = snapshot.listing(DEPLOYMENTS)
    if deployments.items is None:
        return unreadable(CLUSTER012, "Deployments", deployments,
                          "deployments.apps in all namespaces")
    found = _autoscaler_containers(deployments.items)
    if not found:
        return result(CLUSTER012, CheckOutcome.PASS,
                      "no cluster-autoscaler Deployment in the cluster (an autoscaler run by the "
                      "cloud provider outside the cluster is not visible)")
    release = judged_release(snapshot, options)
    results = [_judge_autoscaler(deploy, ctr, release.minor if release else None)
               for deploy, ctr in found]
    return max(results, key=lambda r: r.outcome.rank)


def _judge_autoscaler(deploy: Mapping[str, Any], ctr: Container,
                      cluster_minor: int | None) -> CheckResult:
    name = workload_name(deploy)
    version = image_version(ctr.image)
    details = [f"{name}: image {ctr.image}; {CA_FLAG}={flag_value(ctr, CA_FLAG) or '(unset)'}",
               "scale-up for claims needs node templates with ResourceSlices from the cloud "
               "provider"]
    if version is None or version.major != 1:
        return result(CLUSTER012, CheckOutcome.UNAVAILABLE,
                      f"{name}: no cluster-autoscaler version in the image tag of {ctr.image}",
                      "check the autoscaler's version (`--version` in its logs)", details=details)
    flag = (flag_value(ctr, CA_FLAG) or "").lower()
    label = f"{name} (cluster-autoscaler {version})"
    if version.minor < 32:
        return result(CLUSTER012, CheckOutcome.FAIL,
                      f"{label} has no DRA support (from 1.32): it does not scale up for pods "
                      "with claims", "upgrade cluster-autoscaler to the cluster's minor (1.35+ "
                      "has DRA on by default)", details=details)
    if version.minor >= 35 and flag == "false":
        return result(CLUSTER012, CheckOutcome.FAIL,
                      f"{label} is started with {CA_FLAG}=false, which 1.35+ refuses",
                      f"remove {CA_FLAG}=false", details=details)
    if version.minor < 35 and flag != "true":
        return result(CLUSTER012, CheckOutcome.FAIL,
                      f"{label} leaves DRA off ({CA_FLAG} defaults to false before 1.35): it "
                      "does not scale up for pods with claims",
                      f"add {CA_FLAG}=true, or upgrade to the cluster's minor (1.35+ has it on)",
                      details=details)
    if cluster_minor is not None and cluster_minor >= 34 and version.minor < 34:
        return result(CLUSTER012, CheckOutcome.WARN,
                      f"{label} predates resource.k8s.io/v1 while the cluster is 1.{cluster_minor}"
                      " (the project recommends matching minors; 1.32 reads v1beta1)",
                      f"upgrade cluster-autoscaler to 1.{cluster_minor}", details=details)
    return result(CLUSTER012, CheckOutcome.PASS, f"{label} handles DRA claims", details=details)


def _karpenter(deployments: Iterable[Mapping[str, Any]]
               ) -> tuple[Mapping[str, Any], Container] | None:
    for deploy in deployments:
        for ctr in containers(deploy):
            if "karpenter" in image_repository(ctr.image).lower():
                return deploy, ctr
    return None


def _gpu_pools(nodepools: Iterable[Mapping[str, Any]]) -> list[str]:
    pools = []
    for pool in nodepools:
        spec = dig(pool, "spec", "template", "spec") or {}
        keys = [str(r.get("key", "")) for r in as_list(spec.get("requirements"))
                if isinstance(r, Mapping)]
        taints = [str(t.get("key", "")) for t in as_list(spec.get("taints"))
                  if isinstance(t, Mapping)]
        labels = dig(pool, "spec", "template", "metadata", "labels") or {}
        limits = {str(k): v for k, v in (dig(pool, "spec", "limits") or {}).items()
                  if is_device_plugin_resource(str(k))}
        if any("gpu" in k.lower() for k in keys) or "nvidia.com/gpu" in taints or \
                any("nvidia.com/gpu" in str(k) for k in labels) or limits:
            # Its GPU limit counts node capacity the device plugin advertises: DRA nodes
            # advertise none, so the limit stops bounding them (GPU205).
            limit = ", ".join(f"{k}: {v}" for k, v in sorted(limits.items()))
            pools.append(str(dig(pool, "metadata", "name"))
                         + (f" (limit {limit}, which DRA nodes do not count against)"
                            if limit else ""))
    return sorted(pools)


def check_karpenter(snapshot: ClusterSnapshot,
                    options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    deployments, nodepools = snapshot.listing(DEPLOYMENTS), snapshot.listing(NODEPOOLS)
    controller = _karpenter(deployments.items or ())
    if controller is None and nodepools.served is False:
        return result(CLUSTER013, CheckOutcome.PASS, "Karpenter is not installed (no karpenter.sh "
                      "NodePool API)")
    if controller is None and nodepools.served is None:
        reasons = "; ".join(r for r in (deployments.reason, nodepools.reason) if r)
        return result(CLUSTER013, CheckOutcome.UNAVAILABLE,
                      f"cannot tell whether Karpenter is installed: {reasons}",
                      "grant list on deployments.apps and nodepools.karpenter.sh")
    pools = _gpu_pools(nodepools.items or ())
    details = [f"GPU NodePools: {', '.join(pools)}"] if pools else []
    if nodepools.items is None:
        details.append(f"NodePools not read: {nodepools.reason}")
    where = f" (GPU NodePools: {named(pools)})" if pools else ""
    if controller is None:
        return result(CLUSTER013, CheckOutcome.WARN,
                      f"Karpenter's NodePool API is served{where} (its controller is not in the "
                      "cluster or not recognised); Karpenter ignores pods with claims by default "
                      "(--ignore-dra-requests=true since v1.7)",
                      "provision DRA GPU nodes outside Karpenter, or test v1.14+ with "
                      "--ignore-dra-requests=false", details=details)
    deploy, ctr = controller
    version = image_version(ctr.image)
    ignore = (flag_value(ctr, KARPENTER_FLAG) or ctr.env.get(KARPENTER_ENV) or "true").lower()
    label = f"Karpenter {version or '(version unknown)'} ({workload_name(deploy)})"
    details.append(f"{workload_name(deploy)}: image {ctr.image}; ignore DRA requests: {ignore}")
    return result(CLUSTER013, CheckOutcome.WARN, _karpenter_message(label, version, ignore) + where,
                  "provision DRA GPU nodes outside Karpenter (static node groups, or "
                  "cluster-autoscaler with DRA), or test v1.14+ with --ignore-dra-requests=false",
                  details=details)


def _karpenter_message(label: str, version: Version | None, ignore: str) -> str:
    if version is not None and not version.at_least(1, 7, 0):
        return (f"{label} predates --ignore-dra-requests (v1.7): it does not understand claims "
                "and may launch nodes that cannot satisfy them")
    if ignore == "false":
        if version is not None and not version.at_least(1, 14, 0):
            return (f"{label} has DRA requests turned on, but its DRA-aware scheduling only "
                    "came in v1.14")
        return (f"{label} schedules DRA pods with its experimental simulation (v1.14+); it "
                "needs the cloud provider to describe GPU devices")
    return (f"{label} ignores pods with claims (--ignore-dra-requests defaults to true): it "
            "will not create nodes for DRA GPU pods")
