"""CLUSTER010: which GPU Operator stack is active, and what moving to DRA with it means.

Facts (NVIDIA/gpu-operator @ v26.7.0, facts-turn2 section 9):
- `ClusterPolicy` (`nvidia.com/v1`, cluster-scoped, chart name `cluster-policy`) is the
  device-plugin stack; `spec.devicePlugin.enabled` nil means true; `spec.cdi.enabled` defaults
  to true (chart default since v25.10). Its status has no version field.
- `GPUCluster` (`nvidia.com/v1alpha1`, new in v26.7.0, singleton named `gpu-cluster`) is the DRA
  stack ("experimental" in the chart values): it deploys the DRA driver, not the device plugin,
  and does not manage the NVIDIA driver. Status `state`: `ready|notReady|disabled`.
- They cannot coexist: each controller refuses while the other CR exists. Switching is
  chart values `clusterPolicy.deployCR=false` and `gpuCluster.deployCR=true`, so every GPU node
  moves at once.
- GPUCluster's DeviceClasses set no `extendedResourceName` (`manifests/state-dra-driver/
  0400_deviceclass-gpu.yaml`), so unconverted `nvidia.com/gpu` pods are not served after the
  switch unless another class maps the name (DRAExtendedResource: GA in 1.37, beta on in 1.36).
- The Operator's version is its image tag (Deployment `gpu-operator`, labels `app: gpu-operator`,
  `app.kubernetes.io/component: gpu-operator`; image `nvcr.io/nvidia/gpu-operator:v26.7.0`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.k8s.object_fields import (
    containers,
    image_repository,
    labels_of,
    workload_name,
)
from gpudra.k8s.objects import dig
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions, judged_release
from gpudra.preflight.cluster.snapshot import (
    CLUSTERPOLICIES,
    DEPLOYMENTS,
    GPUCLUSTERS,
    ClusterSnapshot,
    Listing,
)
from gpudra.preflight.runtime import Version, image_version

GPUCLUSTER_SINCE = (26, 7, 0)
SWITCH = ("helm upgrade gpu-operator nvidia/gpu-operator -n <namespace> --reuse-values "
          "--set clusterPolicy.deployCR=false --set gpuCluster.deployCR=true")

CLUSTER010 = check(
    "CLUSTER010", "GPU Operator stack (ClusterPolicy or GPUCluster)", Tier.CLUSTER,
    "Which GPU Operator stack is active; a ClusterPolicy and a GPUCluster cannot coexist.",
    """
**Why it matters.** The GPU Operator has two stacks. A `ClusterPolicy` (`nvidia.com/v1`)
runs the device-plugin stack. A `GPUCluster` (`nvidia.com/v1alpha1`, Operator **v26.7** and
later, marked experimental) runs the DRA driver instead. Each controller refuses to work
while the other object exists, so with the Operator, moving to DRA is a **whole-cluster
cutover**: set the chart values `clusterPolicy.deployCR=false` and `gpuCluster.deployCR=true`
and every GPU node switches at once. A GPUCluster does not manage the NVIDIA driver.

The GPUCluster's DeviceClasses set no `extendedResourceName`, so after the switch pods that
still request `nvidia.com/gpu` are not scheduled: convert them first (`gpudra convert`), or
add a DeviceClass with `extendedResourceName: nvidia.com/gpu`, which needs the
`DRAExtendedResource` gate (GA in 1.37, beta and on in 1.36, off before).

A ClusterPolicy with `devicePlugin.enabled: false` leaves the device plugin out; the DRA
driver's own chart can then serve the nodes, node by node.

gpudra reads the Operator's version from its Deployment's image tag.

**Outcomes.** *pass*: no Operator stack; a ClusterPolicy with the device plugin disabled; a
GPUCluster that is ready. *warn*: a ClusterPolicy runs the device plugin (the message says
what the switch takes); a GPUCluster that is not ready. *fail*: both exist.
*unavailable*: ClusterPolicies or GPUClusters could not be listed.

**Fix.** Convert workloads first, then switch the chart values as above (upgrade the
Operator to v26.7+ first if needed); with both present, delete the stack you leave.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def operator_version(deployments: Iterable[Mapping[str, Any]] | None) -> tuple[Version | None,
                                                                               str]:
    """The GPU Operator's version from its Deployment's image tag, and how it was found."""
    if deployments is None:
        return None, "Operator version unknown (Deployments not read)"
    for deploy in deployments:
        labels = labels_of(deploy)
        is_operator = dig(deploy, "metadata", "name") == "gpu-operator" or \
            labels.get("app") == "gpu-operator" or \
            labels.get("app.kubernetes.io/component") == "gpu-operator"
        for ctr in containers(deploy):
            if image_repository(ctr.image).endswith("/gpu-operator") or \
                    (is_operator and ctr.image):
                version = image_version(ctr.image)
                if version is not None:
                    return version, f"Operator {version} in {workload_name(deploy)}"
                return None, f"Operator version unknown (image {ctr.image})"
    return None, "no GPU Operator Deployment found"


def _bridge_note(snapshot: ClusterSnapshot, options: ClusterOptions) -> str:
    release = judged_release(snapshot, options)
    if release is None or release.minor < 34:
        state = "needs Kubernetes 1.34+"
    elif release.minor >= 37:
        state = f"DRAExtendedResource is GA in {release.name}"
    elif release.minor == 36:
        state = f"DRAExtendedResource is beta and on in {release.name}"
    else:
        state = f"DRAExtendedResource is alpha and off in {release.name}"
    return ("GPUCluster DeviceClasses set no extendedResourceName: unconverted nvidia.com/gpu "
            "pods are not scheduled after the switch unless a DeviceClass maps nvidia.com/gpu "
            f"({state})")


def check_operator(snapshot: ClusterSnapshot,
                   options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    policies, clusters = snapshot.listing(CLUSTERPOLICIES), snapshot.listing(GPUCLUSTERS)
    if policies.items is None or clusters.items is None:
        what, unread = ("ClusterPolicies", policies) if policies.items is None else \
            ("GPUClusters", clusters)
        return result(CLUSTER010, CheckOutcome.UNAVAILABLE, f"cannot read {what}: {unread.reason}",
                      "grant list on clusterpolicies.nvidia.com and gpuclusters.nvidia.com")
    version, found = operator_version(snapshot.listing(DEPLOYMENTS).items)
    bridge = _bridge_note(snapshot, options)
    details = [found, bridge]
    names_p = [str(dig(p, "metadata", "name")) for p in policies.items]
    names_c = [str(dig(c, "metadata", "name")) for c in clusters.items]
    if names_p and names_c:
        return result(CLUSTER010, CheckOutcome.FAIL,
                      f"ClusterPolicy {', '.join(names_p)} and GPUCluster {', '.join(names_c)} "
                      "both exist: the Operator refuses to run either stack while the other "
                      "exists", f"delete the stack you leave (kubectl delete clusterpolicy "
                      f"{names_p[0]}, or kubectl delete gpucluster {names_c[0]}) and set the "
                      "chart values to match", details=details)
    if names_c:
        return _judge_gpucluster(clusters.items[0], found, details)
    if names_p:
        return _judge_clusterpolicy(policies.items[0], version, found, clusters, details)
    note = f" ({found})" if version is not None else ""
    return result(CLUSTER010, CheckOutcome.PASS,
                  f"no ClusterPolicy or GPUCluster: the GPU Operator does not manage the GPU "
                  f"stack{note}, so nodes can move to DRA one by one", details=details[:1])


def _judge_gpucluster(cluster: Mapping[str, Any], found: str, details: list[str]) -> CheckResult:
    name = str(dig(cluster, "metadata", "name"))
    state = str(dig(cluster, "status", "state") or "unknown")
    if state == "ready":
        return result(CLUSTER010, CheckOutcome.PASS,
                      f"GPUCluster {name} (the Operator's DRA stack) is ready; {found}",
                      details=details)
    return result(CLUSTER010, CheckOutcome.WARN,
                  f"GPUCluster {name} (the Operator's DRA stack) is {state}; {found}",
                  f"kubectl get gpucluster {name} -o yaml, and the gpu-operator logs",
                  details=details)


def _judge_clusterpolicy(policy: Mapping[str, Any], version: Version | None, found: str,
                         clusters: Listing, details: list[str]) -> CheckResult:
    name = str(dig(policy, "metadata", "name"))
    if dig(policy, "spec", "cdi", "enabled") is False:
        details.append(f"ClusterPolicy {name} sets cdi.enabled=false: the runtime must still "
                       "have CDI on for DRA (CLUSTER003, NODE003)")
    if dig(policy, "spec", "devicePlugin", "enabled") is False:
        return result(CLUSTER010, CheckOutcome.PASS,
                      f"ClusterPolicy {name} with the device plugin disabled: the Operator "
                      f"manages drivers and toolkit, the DRA driver's chart can serve the nodes; "
                      f"{found}", details=details)
    too_old = version is not None and not version.at_least(*GPUCLUSTER_SINCE)
    if too_old:
        which = f"Operator {version} predates GPUCluster, which needs v26.7+"
    elif clusters.served is False:
        which = "the GPUCluster CRD is not installed: Operator v26.7+ brings it"
    else:
        which = "the GPUCluster CRD is installed"
    fix = SWITCH if not too_old and clusters.served is not False else \
        f"upgrade the GPU Operator to v26.7.0 or newer, then {SWITCH}"
    return result(CLUSTER010, CheckOutcome.WARN,
                  f"ClusterPolicy {name} runs the device-plugin stack ({found}); with the "
                  f"Operator, DRA is a whole-cluster switch to a GPUCluster ({which})",
                  fix, details=details)
