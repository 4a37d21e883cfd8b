"""How many pods a workload's pod templates run at once: what plan places and what a cluster
audit reports as a workload's replicas, counted one way for both.

* Pod 1; Deployment, ReplicaSet, StatefulSet, ReplicationController ``spec.replicas`` (default
  1); Job and CronJob ``parallelism`` (default 1), capped by ``completions`` when set;
  DaemonSet one per eligible node (None: the nodes decide).
* CRDs (located by :class:`gpudra.k8s.workloads.WorkloadTable`): every ``template``/``jobTemplate``
  on the way from the object root to the pod spec multiplies by the ``replicas`` (or Job
  ``parallelism``) next to it: Kubeflow ``*ReplicaSpecs.<type>.replicas``, JobSet
  ``replicatedJobs[].replicas`` x ``parallelism``, Volcano ``tasks[].replicas``;
  LeaderWorkerSet ``replicas`` x 1 leader / ``size - 1`` workers (lws: the leader StatefulSet
  has ``spec.replicas`` pods, each group's worker StatefulSet ``size - 1``); KServe
  ``minReplicas``. Ray (RayCluster, and the cluster spec of RayJob and RayService): the head
  is 1 pod; a worker group runs ``replicas`` clamped to ``[minReplicas, maxReplicas]``
  (``minReplicas`` when unset) times ``numOfHosts``, and none while ``suspend`` is set
  (kuberay ray-operator/controllers/ray/utils/util.go ``GetWorkerGroupDesiredReplicas``).
  Elsewhere 1 pod per pod spec, with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import PathT, as_mapping, dig
from gpudra.k8s.workloads import WorkloadTable

REPLICATED = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})
_RAY_GROUPS = ("headGroupSpec", "workerGroupSpecs")


def pod_count(kind: str, data: Mapping[str, Any], path: PathT) -> tuple[int | None, str | None]:
    """How many pods of the pod spec at `path` run at once (None: one per eligible node), and
    a note when that is a guess."""
    if kind == "Pod":
        return 1, None
    if kind == "DaemonSet":
        return None, "one pod per eligible node"
    if kind == "LeaderWorkerSet":
        groups = _non_negative(dig(data, "spec", "replicas"), 1)
        size = _non_negative(dig(data, "spec", "leaderWorkerTemplate", "size"), 1)
        per_group = 1 if "leaderTemplate" in path else max(size - 1, 0)
        return groups * per_group, None
    ray = _ray_pods(data, path)
    if ray is not None:
        return ray, None
    pods, found = 1, False
    value: Any = data
    for key in path:
        if isinstance(value, Mapping) and key in ("template", "jobTemplate", "predictor",
                                                  "transformer", "explainer"):
            factor = _factor(kind, value, key)
            if factor is not None:
                pods *= factor
                found = True
        value = dig(value, key)
    if kind in REPLICATED or kind in ("Job", "CronJob"):
        return pods, None
    return pods, None if found else "replicas unknown for this kind: 1 pod assumed"


def pods_at_once(group: str, kind: str, data: Mapping[str, Any],
                 table: WorkloadTable | None = None) -> int | None:
    """Every pod the object's pod templates run at once (a LeaderWorkerSet's leaders and
    workers, a RayCluster's head and workers); None when one of them is a guess or has no
    fixed count."""
    total = 0
    for spec in (table or WorkloadTable()).pod_specs(group, kind, data):
        pods, note = pod_count(kind, data, spec.path)
        if pods is None or note is not None:
            return None
        total += pods
    return total


def _ray_pods(data: Mapping[str, Any], path: PathT) -> int | None:
    """Pods of a Ray head or worker group pod spec; None when `path` is not in one."""
    for i, key in enumerate(path):
        if key not in _RAY_GROUPS:
            continue
        cluster = as_mapping(dig(data, *path[:i]))
        if cluster.get("suspend") is True:
            return 0
        if key == "headGroupSpec":
            return 1
        group = as_mapping(dig(data, *path[:i + 2]))
        if group.get("suspend") is True:
            return 0
        low = _non_negative(group.get("minReplicas"), 0)
        high = _non_negative(group.get("maxReplicas"), 2**31 - 1)
        wanted = _non_negative(group.get("replicas"), low)
        return min(max(wanted, low), high) * _non_negative(group.get("numOfHosts"), 1)
    return None


def _factor(kind: str, holder: Mapping[str, Any], key: str) -> int | None:
    """The multiplier next to a template: replicas, Job parallelism, KServe minReplicas."""
    if key in ("predictor", "transformer", "explainer"):
        target = as_mapping(holder.get(key))
        return _non_negative(target.get("minReplicas"), 1)
    if key == "jobTemplate":
        return None  # the Job spec inside carries parallelism; counted at its `template`
    job_like = "parallelism" in holder or "completions" in holder or kind in ("Job", "CronJob")
    if job_like and "replicas" not in holder:
        parallelism = _non_negative(holder.get("parallelism"), 1)
        completions = holder.get("completions")
        if isinstance(completions, int) and not isinstance(completions, bool):
            parallelism = min(parallelism, completions)
        return parallelism
    if "replicas" in holder:
        return _non_negative(holder.get("replicas"), 1)
    if kind in REPLICATED:
        return 1  # spec.replicas defaults to 1
    return None


def _non_negative(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default
