"""Which resources the fake serves, at which group/versions, and the legacy discovery documents.

Discovery shapes follow a real kube-apiserver: `/api` is `APIVersions`, `/apis` is
`APIGroupList`, `/api/v1` is an `APIResourceList` with groupVersion `v1` and no apiVersion,
`/apis/{g}/{v}` an `APIResourceList` with apiVersion `v1`. Verbs, short names and categories of
the built-ins are those of kube-apiserver 1.3x (`kubectl api-resources -o wide`).
resource.k8s.io versions by release are from docs/dra-reference.md §1.1 (KEP-4381, API tags).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")
POD_FIELDS = frozenset({
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"})

# core/v1 Event field selectors (kubernetes pkg/apis/core/v1/conversion.go)
EVENT_FIELDS = frozenset({
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"})


@dataclass(frozen=True)
class ResourceType:
    """One resource (group + plural) and the versions of the binary that define it."""

    group: str
    versions: tuple[str, ...]  # every version the binary knows, most preferred first
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    extra_fields: frozenset[str] = frozenset()  # field selectors beyond metadata.name/namespace
    custom: bool = False  # a CRD: list items carry kind/apiVersion (unstructured encoding)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def field_labels(self) -> frozenset[str]:
        return frozenset({"metadata.name", "metadata.namespace"}) | self.extra_fields

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


def _builtin(group: str, versions: tuple[str, ...], plural: str, kind: str, namespaced: bool,
             **extra: Any) -> ResourceType:
    return ResourceType(group, versions, plural, kind, namespaced, **extra)


_DRA = ("v1", "v1beta2", "v1beta1")
BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _builtin("", ("v1",), "namespaces", "Namespace", False, short_names=("ns",),
             verbs=NO_COLLECTION_DELETE, subresources=("finalize", "status")),
    _builtin("", ("v1",), "nodes", "Node", False, short_names=("no",), subresources=("status",),
             extra_fields=frozenset({"spec.unschedulable"})),
    _builtin("", ("v1",), "pods", "Pod", True, short_names=("po",), categories=("all",),
             subresources=("status",), extra_fields=POD_FIELDS),
    _builtin("", ("v1",), "replicationcontrollers", "ReplicationController", True,
             short_names=("rc",), categories=("all",), subresources=("scale", "status")),
    _builtin("", ("v1",), "resourcequotas", "ResourceQuota", True, short_names=("quota",),
             subresources=("status",)),
    _builtin("", ("v1",), "limitranges", "LimitRange", True, short_names=("limits",)),
    _builtin("", ("v1",), "configmaps", "ConfigMap", True, short_names=("cm",)),
    _builtin("", ("v1",), "events", "Event", True, short_names=("ev",),
             extra_fields=EVENT_FIELDS),
    _builtin("apps", ("v1",), "daemonsets", "DaemonSet", True, short_names=("ds",),
             categories=("all",), subresources=("status",)),
    _builtin("apps", ("v1",), "deployments", "Deployment", True, short_names=("deploy",),
             categories=("all",), subresources=("scale", "status")),
    _builtin("apps", ("v1",), "replicasets", "ReplicaSet", True, short_names=("rs",),
             categories=("all",), subresources=("scale", "status")),
    _builtin("apps", ("v1",), "statefulsets", "StatefulSet", True, short_names=("sts",),
             categories=("all",), subresources=("scale", "status")),
    _builtin("batch", ("v1",), "cronjobs", "CronJob", True, short_names=("cj",),
             categories=("all",), subresources=("status",)),
    _builtin("batch", ("v1",), "jobs", "Job", True, categories=("all",),
             subresources=("status",)),
    _builtin("resource.k8s.io", _DRA, "deviceclasses", "DeviceClass", False),
    _builtin("resource.k8s.io", _DRA, "resourceclaims", "ResourceClaim", True,
             subresources=("status",)),
    _builtin("resource.k8s.io", _DRA, "resourceclaimtemplates", "ResourceClaimTemplate", True),
    _builtin("resource.k8s.io", _DRA, "resourceslices", "ResourceSlice", False,
             extra_fields=frozenset({"spec.nodeName", "spec.driver"})),
    _builtin("admissionregistration.k8s.io", ("v1",), "validatingadmissionpolicies",
             "ValidatingAdmissionPolicy", False, subresources=("status",)),
    _builtin("admissionregistration.k8s.io", ("v1",), "validatingadmissionpolicybindings",
             "ValidatingAdmissionPolicyBinding", False),
    _builtin("apiextensions.k8s.io", ("v1",), "customresourcedefinitions",
             "CustomResourceDefinition", False, short_names=("crd", "crds"),
             subresources=("status",)),
)

# The first release whose binary has each resource.k8s.io version (v1alpha3 is not modelled).
DRA_VERSION_SINCE = {"v1beta1": 32, "v1beta2": 33, "v1": 34}
DEFAULT_ON = {"v1"}  # beta APIs are off by default (KEP-3136); only v1 is served by default


def served_versions(minor: int, runtime_config: Iterable[str],
                    overrides: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Group → served versions (preferred first) for a release and its --runtime-config."""
    enabled = {version for version in DEFAULT_ON if minor >= DRA_VERSION_SINCE[version]}
    for entry in runtime_config:
        group_version, _, value = entry.partition("=")
        group, _, version = group_version.partition("/")
        if group != "resource.k8s.io" or version not in DRA_VERSION_SINCE:
            raise ValueError(f"runtime_config {entry!r}: only resource.k8s.io/"
                             f"{{{','.join(DRA_VERSION_SINCE)}}}[=true|false] is modelled")
        if minor < DRA_VERSION_SINCE[version]:
            raise ValueError(f"runtime_config {entry!r}: 1.{minor} has no {group_version}")
        if value.lower() in ("", "true"):
            enabled.add(version)
        elif value.lower() == "false":
            enabled.discard(version)
        else:
            raise ValueError(f"runtime_config {entry!r}: value must be true or false")
    groups = {"": ("v1",), "apps": ("v1",), "batch": ("v1",), "apiextensions.k8s.io": ("v1",),
              "admissionregistration.k8s.io": ("v1",)}  # v1 from 1.30
    dra = tuple(version for version in _DRA if version in enabled)
    if dra:
        groups["resource.k8s.io"] = dra
    groups.update(overrides)
    return {group: versions for group, versions in groups.items() if versions}


class Registry:
    """Resolves paths and kinds to resource types and answers discovery."""

    def __init__(self, served: Mapping[str, tuple[str, ...]],
                 resources: Iterable[ResourceType]) -> None:
        self.served = dict(served)
        self.resources = tuple(resources)
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for resource in self.resources:
            for version in resource.versions:
                if version in self.served.get(resource.group, ()):
                    self._by_path[(resource.group, version, resource.plural)] = resource
            self._by_kind[(resource.group, resource.kind)] = resource

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group = api_version.rpartition("/")[0]
        return self._by_kind.get((group, kind))

    def preferred_version(self, group: str) -> str | None:
        versions = self.served.get(group)
        return versions[0] if versions else None

    def serves_version(self, group: str, version: str) -> bool:
        return version in self.served.get(group, ())

    # --- discovery documents -------------------------------------------------------------

    def api_versions(self, server_address: str) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}

    def api_group(self, group: str) -> dict[str, Any]:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.served[group]]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    def api_group_list(self) -> dict[str, Any]:
        groups = [self.api_group(group) for group in self.served if group]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group_document(self, group: str) -> dict[str, Any]:
        return {"kind": "APIGroup", "apiVersion": "v1", **self.api_group(group)}

    def resource_list(self, group: str, version: str) -> dict[str, Any]:
        entries: list[dict[str, Any]] = []
        for resource in sorted(self.resources, key=lambda r: r.plural):
            if self.lookup(group, version, resource.plural) is not resource:
                continue
            entry: dict[str, Any] = {
                "name": resource.plural, "singularName": resource.singular,
                "namespaced": resource.namespaced, "kind": resource.kind,
                "verbs": list(resource.verbs)}
            if resource.short_names:
                entry["shortNames"] = list(resource.short_names)
            if resource.categories:
                entry["categories"] = list(resource.categories)
            entries.append(entry)
            for sub in resource.subresources:
                verbs = ["update"] if sub == "finalize" else list(STATUS_VERBS)
                entries.append({"name": f"{resource.plural}/{sub}", "singularName": "",
                                "namespaced": resource.namespaced, "kind": resource.kind,
                                "verbs": verbs})
        document: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            document["apiVersion"] = "v1"
        document["groupVersion"] = f"{group}/{version}" if group else version
        document["resources"] = entries
        return document
