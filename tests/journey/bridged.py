"""What the API server shows of pods the extended-resource bridge serves (KEP-5004), in the
words the bridge journeys compare with gpudra's: per workload, the stack and node pool of each
pod Running and Ready."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.controlplane.cluster import Client
from tests.controlplane.nvidia import Machine
from tests.journey.cluster import Cluster
from tests.journey.fleets import POOL_LABEL, Fleet
from tests.journey.observe import gpu_pods
from tests.journey.steps import WorkloadKey

BRIDGE_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DEVICE_PLUGIN, BRIDGE, CLAIMS = "device plugin", "bridge", "claims"
TopOwner = Callable[[Client, dict[str, Any]], tuple[str, str]]


def _bridge_claim(cluster: Cluster, pod: dict[str, Any], pools: dict[str, str]) -> bool:
    """Whether the pod's status names a claim the scheduler made for it (annotated, owned by
    the pod), allocated on the DRA driver's devices (one driver pool per node) in the pod's own
    node pool. A status naming another claim fails the journey: the bridge broke its word."""
    status = pod.get("status", {}).get("extendedResourceClaimStatus")
    if not status:
        return False
    namespace, node = pod["metadata"]["namespace"], pod["spec"]["nodeName"]
    claim = cluster.plane.admin.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/"
                                    f"resourceclaims/{status['resourceClaimName']}")
    results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results")
    assert claim["metadata"]["annotations"][BRIDGE_ANNOTATION] == "true", claim
    assert [r["uid"] for r in claim["metadata"]["ownerReferences"]] == [
        pod["metadata"]["uid"]], claim
    assert results and {pools[r["pool"]] for r in results} == {pools[node]}, (claim, node)
    return True


def served(cluster: Cluster, fleet: Fleet, top_owner: TopOwner | None = None,
           place: Callable[[str, Machine], str] = lambda _, m: m.labels[POOL_LABEL]
           ) -> dict[WorkloadKey, set[tuple[str, str]]]:
    """Per workload, the (stack, `place` of its node: its node pool) of each of its pods
    Running and Ready: BRIDGE for a pod on a scheduler-made claim, CLAIMS for one that names
    claims, else DEVICE_PLUGIN. `top_owner`: how a pod's workload is found (observe.gpu_pods)."""
    pools = {name: machine.labels[POOL_LABEL] for name, machine in fleet.machines().items()}
    places = {name: place(name, machine) for name, machine in fleet.machines().items()}
    out: dict[WorkloadKey, set[tuple[str, str]]] = {}
    for view in gpu_pods(cluster.plane.admin, fleet.namespaces, top_owner):
        if view.phase != "Running" or not view.ready:
            continue
        pod = cluster.plane.admin.get(f"/api/v1/namespaces/{view.namespace}/pods/{view.name}")
        stack = (BRIDGE if _bridge_claim(cluster, pod, pools) else
                 CLAIMS if view.claims and not view.device_plugin else DEVICE_PLUGIN)
        out.setdefault((view.namespace, *view.owner), set()).add(
            (stack, places[view.node or ""]))
    return out
