"""verify reads each pod's controller and device-plugin GPUs once (from the pod's typed
decoding), for the source's indexes and the pods it keeps alike (issue 32: verify's time
beyond the audit's on 100,000 pods), and keeps the same pods."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import gpudra.sources.live as cluster
import gpudra.verify.collect as collect
from gpudra.k8s.workloads import WorkloadTable
from tests.memory_cluster import MemoryCluster


def _pod(name: str, limits: dict[str, str], owner: str | None = None,
         claims: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "ml", "name": name}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": owner, "uid": f"u-{owner}", "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits}}],
                            "nodeName": "n1"}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running"}}


# (pod, kept by verify as a pod it judges)
PODS = [
    (_pod("web", {"cpu": "1"}, owner="web-rs"), False),
    (_pod("api", {"memory": "1Gi"}, owner="api-rs"), False),
    (_pod("lone", {"memory": "1Gi"}), False),
    (_pod("trainer", {"nvidia.com/gpu": "2"}, owner="trainer-rs"), True),
    (_pod("claimer", {"cpu": "1"}, owner="claim-rs", claims=True), True),
    (_pod("mig", {"nvidia.com/mig-1g.5gb": "1"}), True),
]


def test_each_pod_is_read_once_and_the_same_pods_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    counts: Counter[tuple[str, str]] = Counter()

    def counting(module: Any, name: str) -> None:
        original = getattr(module, name)

        def counted(pod: Any, *args: Any) -> Any:
            counts[(name, str(pod["metadata"]["name"]))] += 1
            return original(pod, *args)
        monkeypatch.setattr(module, name, counted)

    for module in (cluster, collect):
        counting(module, "controller_of")
        counting(module, "device_plugin_gpus")
    state = collect.read_cluster(MemoryCluster([p for p, _ in PODS]), WorkloadTable())
    kept = sorted(p.name for pods in state.pods.values() for p in pods)
    assert kept == sorted(p["metadata"]["name"] for p, keep in PODS if keep)
    for pod, keep in PODS:
        name = pod["metadata"]["name"]
        if keep or "ownerReferences" not in pod["metadata"]:
            continue  # judged further (its record, or itself as a workload): read again there
        # read from the pod's typed decoding, not from its dicts (tests/sources/
        # test_typed_pod_read.py): the dict readers are not called for it at all
        assert (counts[("controller_of", name)], counts[("device_plugin_gpus", name)]) == (0, 0)
