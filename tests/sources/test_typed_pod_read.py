"""For the typed commands (plan, verify, cutover) the cluster source reads each pod's
controller and device-plugin GPUs from the Pod its typed check decoded, not from the dicts
again (issue 32: verify at most 1.1x the audit on 100,000 pods). Data-driven: what it reads
equals controller_of and device_plugin_gpus on every shape of pod."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

import gpudra.sources.live as cluster
from gpudra.sources.live import ClusterSource, PodRead, _typed_pod_read
from gpudra.sources.shapes import decoded_pod
from gpudra.k8s.workloads import WorkloadTable
from tests.memory_cluster import MemoryCluster


def _pod(meta: dict[str, Any] | None = None, spec: Any = "default") -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "p", "namespace": "ml", **(meta or {})}}
    if spec == "default":
        spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}
    if spec != "absent":
        pod["spec"] = spec
    return pod


def _refs(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"ownerReferences": list(refs)}


def _containers(*limits: Any, init: tuple[Any, ...] = ()) -> dict[str, Any]:
    def one(value: Any) -> dict[str, Any]:
        return {"name": "c"} if value == "none" else {"name": "c", "resources": {"limits": value}}
    return {"containers": [one(v) for v in limits],
            **({"initContainers": [one(v) for v in init]} if init else {})}


PODS = [
    _pod(),
    _pod(_refs({"kind": "ReplicaSet", "name": "rs", "controller": True})),
    _pod(_refs({"kind": "ReplicaSet", "name": "rs", "controller": False},
               {"kind": "Job", "name": "j", "controller": True})),
    _pod(_refs({"kind": "ReplicaSet", "name": "rs"})),
    _pod(_refs({"kind": None, "name": "rs", "controller": True})),        # str(None) in dicts
    _pod(_refs({"name": "rs", "controller": True})),                      # "" in dicts
    _pod(_refs({"kind": "StatefulSet", "name": None, "controller": True})),
    _pod(_refs({"kind": "StatefulSet", "controller": True})),
    _pod(_refs({"kind": "", "name": "", "controller": True})),
    _pod({"ownerReferences": None}),
    _pod({"ownerReferences": []}),
    _pod(spec="absent"),
    _pod(spec=None),
    _pod(spec={}),
    _pod(spec={"containers": None, "initContainers": None}),
    _pod(spec=_containers({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": 3})),
    _pod(spec=_containers({"nvidia.com/gpu": "1"}, init=({"nvidia.com/gpu": "4"},
                                                         {"nvidia.com/gpu": "2"}))),
    _pod(spec=_containers({"nvidia.com/mig-1g.10gb": "2", "memory": "1Gi"})),
    _pod(spec=_containers({"nvidia.com/gpu.shared": "1"}, "none", None, {})),
    _pod(spec=_containers({"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": 2.0})),
    _pod(spec=_containers({"example.com/gpu": "1", "cpu": "2"})),
    _pod(spec={"containers": [{"name": "c", "resources": None}]}),
]


@pytest.mark.parametrize("pod", PODS)
def test_the_decoded_pod_reads_as_its_dicts(pod: dict[str, Any]) -> None:
    decoded, problem = decoded_pod(copy.deepcopy(pod), WorkloadTable())
    assert problem is None and decoded is not None
    assert _typed_pod_read(decoded, pod) == \
        PodRead(cluster.controller_of(pod), cluster.device_plugin_gpus(pod))


def test_typed_commands_do_not_read_the_pods_dicts_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """verify, plan and cutover decode every pod for its typed check: its owner and GPUs are
    read from that (failed before: the dict readers ran for each pod); the audit, which does
    not decode, still reads the dicts."""
    calls: Counter[str] = Counter()
    for name in ("controller_of", "device_plugin_gpus"):
        original = getattr(cluster, name)

        def counted(obj: Any, *args: Any, _name: str = name, _original: Any = original) -> Any:
            calls[_name] += obj.get("kind") == "Pod"  # a ReplicaSet's own owner is read too
            return _original(obj, *args)
        monkeypatch.setattr(cluster, name, counted)
    # pods of a ReplicaSet that is read: audited through it, each pod read once by the source
    replicaset = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": "rs", "namespace": "ml"},
                  "spec": {"replicas": 3, "template": {"spec": _containers({"cpu": "1"})}}}
    pods = [_pod({"name": f"p{i}", **_refs({"kind": "ReplicaSet", "name": "rs",
                                              "controller": True})}, spec=spec)
            for i, spec in enumerate([_containers({"nvidia.com/gpu": "1"}),
                                      _containers({"cpu": "1"}), {}])]
    for command, dict_reads in (("verify", 0), ("audit", len(pods))):
        calls.clear()
        list(ClusterSource(MemoryCluster([replicaset, *pods]), command=command).items())
        assert (calls["controller_of"], calls["device_plugin_gpus"]) == \
            (dict_reads, dict_reads), command
