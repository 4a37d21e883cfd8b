"""The cluster a fake API server pretends to be, read from YAML/JSON or a dict.

See tests/fakeapi/README.md for the format. Unknown keys are errors, so a typo in a test's state
cannot silently turn a fault off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import codec
from .rbac import NamespacedOnly
from .registry import CRD_VERBS, ResourceType
from .workload_crds import WORKLOAD_CRDS

try:
    _LOADER: type = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _LOADER = yaml.SafeLoader

DEFAULT_VERSION = "1.34.2"
DEFAULT_TOKEN = "fake-token"
DEFAULT_USER = "system:serviceaccount:gpudra:auditor"


class StateError(ValueError):
    """The state file or dict does not describe a cluster the fake can serve."""


# Well-known CRDs, usable by name in `crds:`. Scope, short names and categories from the
# projects' kubebuilder markers: prometheus-operator pkg/apis/monitoring/v1
# prometheusrule_types.go; kueue apis/kueue/v1beta1 clusterqueue_types.go; karpenter
# pkg/apis/v1 nodepool.go; gpu-operator api/nvidia/v1 clusterpolicy_types.go; kueue
# apis/kueue/v1beta1 resourceflavor_types.go; cluster-api api/core/v1beta2 machinedeployment,
# machineset and machinepool _types.go (ff69552e79ad, ae7ff047db49); kubeflow
# training-operator (PyTorchJob, namespaced; short names not checked, so none).
KNOWN_CRDS: dict[str, dict[str, Any]] = {
    "prometheusrules.monitoring.coreos.com": {
        "group": "monitoring.coreos.com", "version": "v1", "plural": "prometheusrules",
        "kind": "PrometheusRule", "namespaced": True, "shortNames": ["promrule"],
        "categories": ["prometheus-operator"]},
    "clusterqueues.kueue.x-k8s.io": {
        "group": "kueue.x-k8s.io", "version": "v1beta1", "plural": "clusterqueues",
        "kind": "ClusterQueue", "namespaced": False, "shortNames": ["cq"]},
    "resourceflavors.kueue.x-k8s.io": {
        "group": "kueue.x-k8s.io", "version": "v1beta1", "plural": "resourceflavors",
        "kind": "ResourceFlavor", "namespaced": False,
        "shortNames": ["flavor", "flavors", "rf"]},
    **{f"{plural}.cluster.x-k8s.io": {
        "group": "cluster.x-k8s.io", "version": "v1beta2", "plural": plural, "kind": kind,
        "namespaced": True, "shortNames": [short], "categories": ["cluster-api"]}
       for plural, kind, short in (("machinedeployments", "MachineDeployment", "md"),
                                   ("machinesets", "MachineSet", "ms"),
                                   ("machinepools", "MachinePool", "mp"))},
    "nodepools.karpenter.sh": {
        "group": "karpenter.sh", "version": "v1", "plural": "nodepools", "kind": "NodePool",
        "namespaced": False, "categories": ["karpenter"]},
    "clusterpolicies.nvidia.com": {
        "group": "nvidia.com", "version": "v1", "plural": "clusterpolicies",
        "kind": "ClusterPolicy", "namespaced": False},
    "pytorchjobs.kubeflow.org": {
        "group": "kubeflow.org", "version": "v1", "plural": "pytorchjobs", "kind": "PyTorchJob",
        "namespaced": True},
    **WORKLOAD_CRDS,
}


@dataclass(frozen=True)
class DenyRule:
    """Requests matching every given field are answered 403 Forbidden.

    `group`/`namespace` None match anything. A rule with a namespace also denies the
    cluster-wide list of that resource, as RBAC does: listing across namespaces needs the
    permission in every namespace.
    """

    resource: str
    verb: str = "*"
    group: str | None = None
    namespace: str | None = None

    def denies(self, verb: str, group: str, resource: str, namespace: str) -> bool:
        if self.verb not in ("*", verb) or self.resource not in ("*", resource):
            return False
        if self.group is not None and self.group != group:
            return False
        return self.namespace is None or not namespace or self.namespace == namespace


@dataclass(frozen=True)
class InjectedError:
    """Answer the first `count` requests whose path equals `path` with `status`."""

    path: str
    status: int
    count: int = 1
    retry_after: int | None = None


@dataclass(frozen=True)
class InjectedDelay:
    """Answer the first `count` requests whose path equals `path` `seconds` late."""

    path: str
    seconds: float
    count: int = 1


@dataclass(frozen=True)
class InjectedReset:
    """Reset the connection (TCP RST, no answer) on the first `count` requests to `path`."""

    path: str
    count: int = 1


@dataclass(frozen=True)
class Faults:
    expire_continue_after: int | None = None  # continue requests served before tokens expire
    errors: tuple[InjectedError, ...] = ()
    delays: tuple[InjectedDelay, ...] = ()
    resets: tuple[InjectedReset, ...] = ()
    latency: float = 0.0  # seconds every request waits: a cluster across a network


@dataclass(frozen=True)
class ClusterState:
    version: str = DEFAULT_VERSION
    version_info: Mapping[str, str] = field(default_factory=dict)
    token: str = DEFAULT_TOKEN
    user: str = DEFAULT_USER
    runtime_config: tuple[str, ...] = ()
    api_versions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    crds: tuple[ResourceType, ...] = ()
    objects: tuple[Mapping[str, Any], ...] = ()
    auto_namespaces: bool = True
    compression: bool = False  # gzip large answers when asked, like APIResponseCompression
    deny: tuple[DenyRule, ...] = ()
    namespaced_only: NamespacedOnly | None = None  # the user holds Roles in these only
    faults: Faults = Faults()

    @property
    def minor(self) -> int:
        return parse_version(self.version)[1]


def parse_version(version: str) -> tuple[int, int, int]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        raise StateError(f"version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 1.34.2")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


_TOP_LEVEL = {"version", "version_info", "token", "user", "runtime_config", "api_versions",
              "crds", "objects", "object_files", "auto_namespaces", "deny", "faults",
              "compression", "namespaced_only"}


def load_state(source: ClusterState | Mapping[str, Any] | str | Path) -> ClusterState:
    """A ClusterState from a state object, a dict, or a YAML/JSON file path."""
    if isinstance(source, ClusterState):
        return source
    base = Path(".")
    if isinstance(source, (str, Path)):
        path = Path(source)
        data = read_documents(path)
        if len(data) != 1 or not isinstance(data[0], Mapping):
            raise StateError(f"{path}: a state file holds exactly one mapping")
        source, base = data[0], path.parent
    return _from_mapping(source, base)


def read_documents(path: Path) -> list[Any]:
    """All documents of a YAML file (JSON when the name ends in .json)."""
    try:
        text = path.read_bytes()
    except OSError as error:
        raise StateError(f"{path}: {error.strerror}") from error
    if path.suffix == ".json":
        try:
            return [codec.loads(text)]
        except ValueError as error:
            raise StateError(f"{path}: {error}") from error
    try:
        return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
    except yaml.YAMLError as error:
        raise StateError(f"{path}: {error}") from error


def _from_mapping(data: Mapping[str, Any], base: Path) -> ClusterState:
    unknown = set(data) - _TOP_LEVEL
    if unknown:
        raise StateError(f"unknown state keys: {', '.join(sorted(unknown))}")
    version = str(data.get("version", DEFAULT_VERSION))
    parse_version(version)
    objects = list(_expand_lists(data.get("objects") or ()))
    for name in data.get("object_files") or ():
        objects.extend(_expand_lists(read_documents(base / name)))
    return ClusterState(
        version=version,
        version_info={str(k): str(v) for k, v in (data.get("version_info") or {}).items()},
        token=str(data.get("token", DEFAULT_TOKEN)),
        user=str(data.get("user", DEFAULT_USER)),
        runtime_config=tuple(str(entry) for entry in data.get("runtime_config") or ()),
        api_versions={str(group): tuple(versions)
                      for group, versions in (data.get("api_versions") or {}).items()},
        crds=tuple(_crd(entry) for entry in data.get("crds") or ()),
        objects=tuple(objects),
        auto_namespaces=bool(data.get("auto_namespaces", True)),
        compression=bool(data.get("compression", False)),
        deny=tuple(_deny(rule) for rule in data.get("deny") or ()),
        namespaced_only=None if data.get("namespaced_only") is None else
        NamespacedOnly(tuple(str(n) for n in data["namespaced_only"])),
        faults=_faults(data.get("faults") or {}),
    )


def _expand_lists(documents: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for document in documents:
        if not isinstance(document, Mapping):
            raise StateError(f"an object must be a mapping, got {type(document).__name__}")
        kind = str(document.get("kind", ""))
        if kind.endswith("List") and isinstance(document.get("items"), list):
            yield from _expand_lists(document.get("items") or ())
        else:
            yield document


def _crd(entry: str | Mapping[str, Any]) -> ResourceType:
    if isinstance(entry, str):
        if entry not in KNOWN_CRDS:
            raise StateError(f"crds: {entry!r} is not in the catalogue "
                             f"({', '.join(sorted(KNOWN_CRDS))}); spell it out as a mapping")
        entry = KNOWN_CRDS[entry]
    allowed = {"group", "version", "versions", "plural", "kind", "namespaced", "shortNames",
               "categories"}
    if set(entry) - allowed or not {"group", "plural", "kind"} <= set(entry):
        raise StateError(f"crds: {dict(entry)!r} needs group, version(s), plural, kind "
                         f"(optional: namespaced, shortNames, categories)")
    versions = tuple(entry.get("versions") or ())
    if "version" in entry:
        versions = (entry["version"], *versions)
    if not versions:
        raise StateError(f"crds: {entry['plural']}.{entry['group']} has no version")
    return ResourceType(
        group=str(entry["group"]), versions=tuple(str(v) for v in versions),
        plural=str(entry["plural"]), kind=str(entry["kind"]),
        namespaced=bool(entry.get("namespaced", True)),
        short_names=tuple(entry.get("shortNames") or ()),
        categories=tuple(entry.get("categories") or ()), verbs=CRD_VERBS, custom=True)


def _deny(rule: Mapping[str, Any]) -> DenyRule:
    if "resource" not in rule or set(rule) - {"resource", "verb", "group", "namespace"}:
        raise StateError(f"deny: {dict(rule)!r} needs resource (optional: verb, group, "
                         f"namespace)")
    return DenyRule(resource=str(rule["resource"]), verb=str(rule.get("verb", "*")),
                    group=None if rule.get("group") is None else str(rule["group"]),
                    namespace=None if rule.get("namespace") is None else str(rule["namespace"]))


def _faults(data: Mapping[str, Any]) -> Faults:
    unknown = set(data) - {"expire_continue_after", "errors", "delays", "resets", "latency"}
    if unknown:
        raise StateError(f"faults: unknown keys {', '.join(sorted(unknown))}")
    errors = []
    for entry in data.get("errors") or ():
        if set(entry) - {"path", "status", "count", "retry_after"} or \
                not {"path", "status"} <= set(entry):
            raise StateError(f"faults.errors: {dict(entry)!r} needs path and status "
                             f"(optional: count, retry_after)")
        retry_after = entry.get("retry_after")
        errors.append(InjectedError(str(entry["path"]), int(entry["status"]),
                                    int(entry.get("count", 1)),
                                    None if retry_after is None else int(retry_after)))
    delays = []
    for entry in data.get("delays") or ():
        if set(entry) - {"path", "seconds", "count"} or not {"path", "seconds"} <= set(entry):
            raise StateError(f"faults.delays: {dict(entry)!r} needs path and seconds "
                             f"(optional: count)")
        delays.append(InjectedDelay(str(entry["path"]), float(entry["seconds"]),
                                    int(entry.get("count", 1))))
    resets = []
    for entry in data.get("resets") or ():
        if set(entry) - {"path", "count"} or "path" not in entry:
            raise StateError(f"faults.resets: {dict(entry)!r} needs path (optional: count)")
        resets.append(InjectedReset(str(entry["path"]), int(entry.get("count", 1))))
    expire = data.get("expire_continue_after")
    return Faults(None if expire is None else int(expire), tuple(errors), tuple(delays),
                  tuple(resets), float(data.get("latency") or 0.0))
