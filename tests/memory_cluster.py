"""An in-memory cluster with the reading interface of gpudra.cluster.Cluster, for unit tests of
what is done with the objects (owner resolution, rules). The HTTP side is tested against the
fake API server in tests/fakeapi."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpudra.cluster.records import ClusterTarget

# (group, plural) -> (version, kind, namespaced)
_TYPES = {
    ("", "pods"): ("v1", "Pod", True), ("", "nodes"): ("v1", "Node", False),
    ("", "replicationcontrollers"): ("v1", "ReplicationController", True),
    ("", "resourcequotas"): ("v1", "ResourceQuota", True),
    ("", "limitranges"): ("v1", "LimitRange", True),
    ("apps", "deployments"): ("v1", "Deployment", True),
    ("apps", "replicasets"): ("v1", "ReplicaSet", True),
    ("apps", "statefulsets"): ("v1", "StatefulSet", True),
    ("apps", "daemonsets"): ("v1", "DaemonSet", True),
    ("batch", "jobs"): ("v1", "Job", True), ("batch", "cronjobs"): ("v1", "CronJob", True),
    ("resource.k8s.io", "resourceslices"): ("v1", "ResourceSlice", False),
    ("resource.k8s.io", "deviceclasses"): ("v1", "DeviceClass", False),
    ("resource.k8s.io", "resourceclaims"): ("v1", "ResourceClaim", True),
    ("resource.k8s.io", "resourceclaimtemplates"): ("v1", "ResourceClaimTemplate", True),
    ("monitoring.coreos.com", "prometheusrules"): ("v1", "PrometheusRule", True),
    ("kubeflow.org", "pytorchjobs"): ("v1", "PyTorchJob", True),
    ("jobset.x-k8s.io", "jobsets"): ("v1alpha2", "JobSet", True),
    ("leaderworkerset.x-k8s.io", "leaderworkersets"): ("v1", "LeaderWorkerSet", True),
    ("ray.io", "rayclusters"): ("v1", "RayCluster", True),
    ("ray.io", "rayjobs"): ("v1", "RayJob", True),
}


@dataclass(frozen=True)
class MemoryType:
    group: str
    name: str
    version: str
    kind: str
    namespaced: bool


@dataclass
class MemoryCluster:
    """`objects`: complete objects (kind and apiVersion set); `denied`: plurals that fail
    with 403; `page_size`: items per page."""

    objects: list[dict[str, Any]]
    denied: set[str] = field(default_factory=set)
    page_size: int = 2
    problems: list[Any] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    extra_types: dict[tuple[str, str], tuple[str, str, bool]] = field(default_factory=dict)
    # Where a real client says it is connected (every namespace: list() ignores namespaces).
    target: ClusterTarget = field(default_factory=lambda: ClusterTarget(
        "https://memory.invalid", "memory", "default", True))

    def _types(self) -> dict[tuple[str, str], tuple[str, str, bool]]:
        return {**_TYPES, **self.extra_types}

    def resource(self, group: str, name: str, version: Any = None) -> MemoryType | None:
        found = self._types().get((group, name))
        return None if found is None else MemoryType(group, name, *found)

    @property
    def discovery(self) -> MemoryCluster:
        return self

    def groups(self) -> dict[str, Any]:
        return {group: None for group, _ in self._types()}

    def find_kind(self, group: str, kind: str, version: Any = None) -> MemoryType | None:
        for (g, name), (v, k, namespaced) in self._types().items():
            if g == group and k == kind:
                return MemoryType(g, name, v, k, namespaced)
        return None

    def list(self, resource: MemoryType, **_: Any):
        self.listed.append(resource.name)
        if resource.name in self.denied:
            self.problems.append(_Problem(resource.name, resource.group))
            return
        items = [o for o in self.objects if o.get("kind") == resource.kind
                 and str(o.get("apiVersion", "")).rpartition("/")[0] == resource.group]
        for start in range(0, len(items), self.page_size):
            yield items[start:start + self.page_size]

    def get(self, resource: MemoryType, name: str, namespace: str | None = None
            ) -> dict[str, Any] | None:
        for obj in self.objects:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == resource.kind and meta.get("name") == name and \
                    (not resource.namespaced or meta.get("namespace") == namespace):
                return obj
        return None

    @property
    def errors(self) -> tuple[Any, ...]:
        return tuple(self.problems)


@dataclass(frozen=True)
class _Problem:
    resource: str
    group: str
    verb: str = "list"
    status: int = 403
    reason: str = "Forbidden"
    namespace: str | None = None

    @property
    def subject(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def scope(self) -> str:
        return "cluster-wide"

    @property
    def message(self) -> str:
        return (f'{self.subject} is forbidden: User "auditor" cannot list resource '
                f'"{self.resource}" in API group "{self.group}" at the cluster scope')
