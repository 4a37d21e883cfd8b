"""An in-memory cluster with the reading interface of gpudra.cluster.Cluster, for unit tests of
what is done with the objects (owner resolution, rules). The HTTP side is tested against the
fake API server in tests/fakeapi."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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

    def resource(self, group: str, name: str, version: Any = None) -> MemoryType | None:
        found = _TYPES.get((group, name))
        return None if found is None else MemoryType(group, name, *found)

    def list(self, resource: MemoryType, **_: Any):
        self.listed.append(resource.name)
        if resource.name in self.denied:
            self.problems.append(_Problem(resource.name, resource.group))
            return
        items = [o for o in self.objects if o.get("kind") == resource.kind]
        for start in range(0, len(items), self.page_size):
            yield items[start:start + self.page_size]

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
