"""The operators of the journey's fourth cluster, played as the real ones behave towards the
API server (tests/journey/fleet_operators.py has what each creates, from its source):

- JobSet: creates its Jobs once each (a Job's template is immutable; a re-created JobSet gets
  new Jobs once the garbage collector removed the old ones);
- LeaderWorkerSet: keeps its leader StatefulSet's template in line with its own, and gives
  each leader pod a worker StatefulSet it controls (gone with the pod, made again for the next);
- RayCluster: keeps the pods of each group at their count, from the current spec; running pods
  are never replaced when the spec changes (no `upgradeStrategy`), a deleted one comes back new;
- InferenceService (raw deployment): keeps the predictor Deployment's template in line.

Kubernetes' own controllers (Job, StatefulSet, Deployment, garbage collector) do the rest, and
kwok runs the pods. A child records the hash of the template it was made from, as the real
controllers keep a revision, so a child is only updated when its parent changed.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any
from urllib.parse import quote

from tests.controlplane.cluster import APIError, Client
from tests.journey import fleet_operators as ops
from tests.journey.reconciler import Reconciler

HASH = "journey.gpudra.io/template-hash"
_PLURALS = {kind: (group, version, plural) for group, version, plural, kind in ops.CRD_TYPES}


def _hash(template: Any) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:16]


def _collection(api_version: str, plural: str, namespace: str) -> str:
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    return f"{base}/namespaces/{quote(namespace)}/{plural}"


def _controller_uid(obj: dict[str, Any]) -> str | None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    return refs[0]["uid"] if refs else None


def _alive(obj: dict[str, Any]) -> bool:
    return not obj["metadata"].get("deletionTimestamp")


class Operators(Reconciler):
    """Reconciles every operator object in the cluster every `period` seconds, until stop()."""

    def __init__(self, client: Client, period: float = 0.1) -> None:
        super().__init__("operators", period)
        self._client = client

    def sync(self) -> None:
        for parent in self._parents("JobSet"):
            for job in ops.jobset_jobs(parent):
                self._ensure(job, parent, update=False)
        for parent in self._parents("LeaderWorkerSet"):
            leaders = self._ensure(ops.lws_leader_statefulset(parent), parent)
            if leaders is None:
                continue
            for pod in self._owned("v1", "pods", parent["metadata"]["namespace"], leaders):
                if _alive(pod):
                    self._ensure(ops.lws_worker_statefulset(parent, pod), pod)
        for parent in self._parents("RayCluster"):
            self._sync_ray(parent)
        for parent in self._parents("InferenceService"):
            self._ensure(ops.kserve_predictor_deployment(parent), parent)

    # --- the objects ---------------------------------------------------------------------

    def _parents(self, kind: str) -> list[dict[str, Any]]:
        group, version, plural = _PLURALS[kind]
        return [obj for obj in self._client.get(f"/apis/{group}/{version}/{plural}")["items"]
                if _alive(obj)]

    def _owned(self, api_version: str, plural: str, namespace: str, owner: dict[str, Any]
               ) -> list[dict[str, Any]]:
        items = self._client.get(_collection(api_version, plural, namespace))["items"]
        kind = {"pods": "Pod"}[plural]
        # a list's items carry no kind: set it, as the children's owner references need it
        return [{**obj, "apiVersion": api_version, "kind": kind} for obj in items
                if _controller_uid(obj) == owner["metadata"]["uid"]]

    def _ensure(self, child: dict[str, Any], owner: dict[str, Any], *, update: bool = True
                ) -> dict[str, Any] | None:
        """Create `child` (controlled by `owner`) or bring its spec in line; None while an
        object of its name still belongs to a previous owner (the garbage collector's)."""
        child["metadata"]["ownerReferences"] = [ops.owner_reference(owner)]
        wanted = _hash(child["spec"])
        child["metadata"].setdefault("annotations", {})[HASH] = wanted
        plural = {"Job": "jobs", "StatefulSet": "statefulsets",
                  "Deployment": "deployments"}[child["kind"]]
        collection = _collection(child["apiVersion"], plural, child["metadata"]["namespace"])
        path = f"{collection}/{quote(child['metadata']['name'])}"
        try:
            current = self._client.get(path)
        except APIError as error:
            if error.code != 404:
                raise
            return self._client.create(collection, child)
        if _controller_uid(current) != owner["metadata"]["uid"] or not _alive(current):
            return None
        if update and current["metadata"].get("annotations", {}).get(HASH) != wanted:
            current["metadata"]["annotations"] = {
                **current["metadata"].get("annotations", {}), HASH: wanted}
            current["spec"] = {**current["spec"], **child["spec"]}
            current.pop("status", None)
            return self._client.request("PUT", path, current)
        return current

    def _sync_ray(self, cluster: dict[str, Any]) -> None:
        namespace = cluster["metadata"]["namespace"]
        pods = [p for p in self._owned("v1", "pods", namespace, cluster) if _alive(p)
                and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        have = Counter(p["metadata"]["labels"].get(ops.RAY_GROUP_LABEL) for p in pods)
        want = Counter(group for _, group, _ in ops.ray_pod_specs(cluster))
        for prefix, group, template in ops.ray_pod_specs(cluster):
            if have[group] < want[group]:
                self._client.create(_collection("v1", "pods", namespace),
                                    ops.ray_pod(cluster, prefix, group, template))
                have[group] += 1


# Where to read a controller of each kind, to walk from a pod up to its top owner.
_CONTROLLER_PATHS = {"ReplicaSet": ("apps/v1", "replicasets"), "Job": ("batch/v1", "jobs"),
                     "StatefulSet": ("apps/v1", "statefulsets"),
                     "Deployment": ("apps/v1", "deployments"), "Pod": ("v1", "pods"),
                     "CronJob": ("batch/v1", "cronjobs")}


def top_owner(client: Client, obj: dict[str, Any]) -> tuple[str, str]:
    """(kind, name) of the object at the top of `obj`'s controllers: Pod -> StatefulSet ->
    Pod -> StatefulSet -> LeaderWorkerSet, Pod -> ReplicaSet -> Deployment ->
    InferenceService, Pod -> Job -> JobSet, Pod -> RayCluster; ("Pod", name) for a bare pod."""
    namespace = obj["metadata"]["namespace"]
    kind, name = "Pod", obj["metadata"]["name"]
    current = obj
    while True:
        refs = [r for r in current["metadata"].get("ownerReferences") or []
                if r.get("controller")]
        if not refs:
            return kind, name
        kind, name = refs[0]["kind"], refs[0]["name"]
        where = _CONTROLLER_PATHS.get(kind)
        if where is None:
            return kind, name
        try:
            current = client.get(f"{_collection(*where, namespace)}/{quote(name)}")
        except APIError as error:
            if error.code != 404:
                raise
            return kind, name
