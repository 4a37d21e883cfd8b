"""Owner resolution of the cluster source: each workload once, at the controller a user changes,
with the pods of everything below it; nothing that holds GPUs disappears."""

from __future__ import annotations

from typing import Any

import yaml

from gpudra.audit.engine import audit
from gpudra.config import Config
from gpudra.dra.versions import DEFAULT
from gpudra.sources.live import ClusterSource
from gpudra.k8s.workloads import WorkloadKind, WorkloadTable
from tests.memory_cluster import MemoryCluster


def _owned(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "x/v1", "kind": kind, "name": name, "uid": name, "controller": True}]


def _pod(name: str, owner: tuple[str, str] | None, gpus: int = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = _owned(*owner)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "gpu-1", "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
            "status": {"phase": "Running"}}


def _template(gpus: int = 1) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"limits": {
        "nvidia.com/gpu": gpus}}}]}}


def _gpu101(objects: list[dict[str, Any]], kinds: tuple[WorkloadKind, ...] = (),
            **cluster: Any) -> dict[tuple, Any]:
    table = WorkloadTable().with_kinds(kinds)
    report = audit(ClusterSource(MemoryCluster(objects, **cluster), table),
                   Config(workloads=kinds), DEFAULT)
    return {(f.kind, f.name): f for f in report.findings if f.rule == "GPU101"}


def test_a_leaderworkerset_owns_its_statefulset() -> None:
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "llm", "namespace": "ml"},
           "spec": {"leaderWorkerTemplate": {"leaderTemplate": _template(8),
                                             "workerTemplate": _template(8)}}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "llm", "namespace": "ml",
                        "ownerReferences": _owned("LeaderWorkerSet", "llm")},
           "spec": {"replicas": 1, "template": _template(8)}}
    found = _gpu101([lws, sts, _pod("llm-0", ("StatefulSet", "llm"), 8)])
    assert {key[0] for key in found} == {"LeaderWorkerSet"}
    assert found[("LeaderWorkerSet", "llm")].cluster.running_pods == 1


def test_a_replicaset_whose_controller_is_not_read_is_audited_itself() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "canary-5d", "namespace": "ml",
                       "ownerReferences": _owned("Rollout", "canary")},
          "spec": {"replicas": 1, "template": _template()}}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "trial-1", "namespace": "ml",
                        "ownerReferences": _owned("Trial", "t1")},
           "spec": {"template": _template(2)}}
    found = _gpu101([rs, job, _pod("canary-5d-x", ("ReplicaSet", "canary-5d")),
                     _pod("trial-1-x", ("Job", "trial-1"), 2)])
    assert set(found) == {("ReplicaSet", "canary-5d"), ("Job", "trial-1")}
    assert found[("ReplicaSet", "canary-5d")].cluster.running_pods == 1


def test_a_jobset_counts_the_pods_of_its_jobs() -> None:
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "train", "namespace": "ml"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
                  "template": _template(4)}}}]}}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train-w-0", "namespace": "ml",
                        "ownerReferences": _owned("JobSet", "train")},
           "spec": {"template": _template(4)}}
    found = _gpu101([jobset, job, _pod("a", ("Job", "train-w-0"), 4),
                     _pod("b", ("Job", "train-w-0"), 4)])
    assert set(found) == {("JobSet", "train")}
    assert found[("JobSet", "train")].cluster.running_pods == 2


def test_a_configured_kind_without_a_group_is_found_in_any_served_group() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "ml"}, "spec": {"pod": _template()["spec"]}}
    found = _gpu101([widget, _pod("w-0", ("Widget", "w"))],
                    (WorkloadKind("*", "Widget", ("spec.pod",)),),
                    extra_types={("example.com", "widgets"): ("v1", "Widget", True)})
    assert set(found) == {("Widget", "w")}
    assert found[("Widget", "w")].cluster.running_pods == 1


def test_an_unreadable_configured_kind_leaves_its_pods_reported() -> None:
    found = _gpu101([_pod("m-0", ("ModelClass", "m"))],
                    (WorkloadKind("example.com", "ModelClass", ("spec.pod",)),))
    assert set(found) == {("Pod", "m-0")}  # the kind is not served: the pod itself is audited


def test_a_volcano_job_and_a_batch_job_of_one_name_are_two_workloads() -> None:
    objects = [o for o in yaml.safe_load_all("""
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec: {template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ml}
spec: {tasks: [{template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}}}]}
""") if o]
    cluster = MemoryCluster(objects, extra_types={
        ("batch.volcano.sh", "jobs"): ("v1alpha1", "Job", True)})
    report = audit(ClusterSource(cluster), Config(), DEFAULT)
    assert sorted(w.kind for w in report.workloads) == ["Job", "Job"]
