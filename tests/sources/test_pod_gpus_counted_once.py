"""Reading a cluster's pods counts each pod's device-plugin GPUs once (issue 32: verify's and
the audit's time on 100,000 pods), with the same holders, nodes and bridge pods as before."""

from __future__ import annotations

from typing import Any

import pytest

import gpudra.sources.live as cluster
from gpudra.k8s.workloads import WorkloadTable


def _pod(name: str, gpus: int | None, node: str | None, phase: str,
         bridged: bool = False) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus is not None else {"cpu": "1"}
    pod: dict[str, Any] = {
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}],
                 **({"nodeName": node} if node else {})},
        "status": {"phase": phase}}
    if bridged:
        pod["status"]["extendedResourceClaimStatus"] = {"requestMappings": []}
    return pod


# (pod, the holder line for its node or None, bridged)
PODS = [
    (_pod("running", 2, "n1", "Running"), ("n1", "ns/running (2)"), False),
    (_pod("bound-pending", 1, "n2", "Pending"), ("n2", "ns/bound-pending (1)"), False),
    (_pod("unbound", 4, None, "Pending"), None, False),
    (_pod("ended", 1, "n1", "Succeeded"), None, False),
    (_pod("cpu-only", None, "n1", "Running"), None, False),
    (_pod("bridge", 1, "n3", "Running", bridged=True), None, True),
]


@pytest.mark.parametrize(("pod", "holder", "bridged"), PODS, ids=[p[0]["metadata"]["name"]
                                                                   for p in PODS])
def test_each_pod_is_counted_once_with_the_same_result(
        pod: dict[str, Any], holder: tuple[str, str] | None, bridged: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    counted = cluster.device_plugin_gpus

    def counting(data: Any) -> int:
        calls.append(data["metadata"]["name"])
        return counted(data)

    monkeypatch.setattr(cluster, "device_plugin_gpus", counting)
    owners = cluster._Owners(WorkloadTable())
    owners.add_pod(pod, set())
    assert calls == [pod["metadata"]["name"]]
    assert {n: list(h) for n, h in owners.holders.items()} == (
        {holder[0]: [holder[1]]} if holder else {})
    assert sum(owners.bridged.values()) == int(bridged)
