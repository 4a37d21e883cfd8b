"""Objects of the fake cluster, encoded once, and paged listing with continue tokens.

Each collection keeps its objects sorted by the etcd key order (`namespace/name`), so a
namespace is a contiguous range and a continue token is just the key to resume after. Tokens
mimic the real ones (apiserver pkg/storage/etcd3: base64url JSON with `v`, `rv` and `start`):
opaque to clients, but carrying the list's resourceVersion so that a "compaction" (the
`expire_continue_after` fault) can expire them with 410 Gone.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .codec import dumps
from .registry import Registry, ResourceType
from .selectors import FieldRequirement, Requirement, fields_match, labels_match
from .state import StateError
from .status import ApiError, bad_request, continue_expired

DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
DEFAULT_CREATION = "2026-01-05T09:00:00Z"
FIRST_RESOURCE_VERSION = 1000
_UID_NAMESPACE = uuid.UUID("6f0c5c2e-5d7a-4f0e-9a55-2f3b9d1c7e10")


@dataclass(frozen=True)
class Entry:
    key: str  # "namespace/name" or "name": the order of a real etcd range read
    namespace: str
    name: str
    labels: Mapping[str, str]
    body: Mapping[str, Any]  # the object without kind/apiVersion
    item: bytes  # encoded list item (CRDs: with kind/apiVersion of the preferred version)


@dataclass(frozen=True)
class Page:
    items: list[bytes]
    resource_version: int
    next_token: str
    remaining: int | None  # remainingItemCount; None with selectors or on the last page


class Collection:
    def __init__(self, resource: ResourceType, entries: Iterable[Entry]) -> None:
        self.resource = resource
        self.entries = sorted(entries, key=lambda entry: entry.key)
        self.keys = [entry.key for entry in self.entries]
        self._by_key = {entry.key: entry for entry in self.entries}

    def get(self, namespace: str, name: str) -> Entry | None:
        return self._by_key.get(f"{namespace}/{name}" if namespace else name)

    def put(self, entry: Entry) -> None:
        """Add or replace `entry`, keeping the key order (callers hold the store's lock)."""
        if entry.key not in self._by_key:
            index = bisect.bisect_left(self.keys, entry.key)
            self.keys.insert(index, entry.key)
            self.entries.insert(index, entry)
        else:
            self.entries[self.keys.index(entry.key)] = entry
        self._by_key[entry.key] = entry

    def span(self, namespace: str) -> tuple[int, int]:
        if not namespace:
            return 0, len(self.keys)
        # '0' is the character after '/', so [ns/, ns0) is exactly the namespace's keys.
        return (bisect.bisect_left(self.keys, namespace + "/"),
                bisect.bisect_left(self.keys, namespace + "0"))


class ObjectStore:
    """All objects, by (group, plural); listing state (resourceVersion, compaction)."""

    def __init__(self, registry: Registry, objects: Iterable[Mapping[str, Any]],
                 crds: Iterable[ResourceType], auto_namespaces: bool,
                 expire_continue_after: int | None) -> None:
        self.registry = registry
        grouped: dict[tuple[str, str], list[Entry]] = {
            (resource.group, resource.plural): [] for resource in registry.resources}
        rv = FIRST_RESOURCE_VERSION
        seen: set[tuple[str, str, str]] = set()
        for obj in self._with_generated(objects, crds, auto_namespaces):
            resource = self._resource_of(obj)
            rv += 1
            entry = self._entry(resource, obj, rv)
            identity = (resource.group, resource.plural, entry.key)
            if identity in seen:
                raise StateError(f"duplicate object {resource.kind} {entry.key}")
            seen.add(identity)
            grouped[(resource.group, resource.plural)].append(entry)
        self.collections = {
            (resource.group, resource.plural): Collection(
                resource, grouped[(resource.group, resource.plural)])
            for resource in registry.resources}
        self._lock = threading.Lock()
        self._resource_version = rv
        self._compacted = 0
        self._expire_after = expire_continue_after
        self._continues_served = 0
        self.writes = 0

    # --- loading -------------------------------------------------------------------------

    def _with_generated(self, objects: Iterable[Mapping[str, Any]],
                        crds: Iterable[ResourceType], auto_namespaces: bool
                        ) -> Iterable[Mapping[str, Any]]:
        objects = list(objects)
        yield from objects
        named = {(obj.get("kind"), (obj.get("metadata") or {}).get("name")) for obj in objects}
        for crd in crds:
            if ("CustomResourceDefinition", f"{crd.plural}.{crd.group}") not in named:
                yield crd_object(crd)
        if auto_namespaces:
            used = set(DEFAULT_NAMESPACES)
            used.update((obj.get("metadata") or {}).get("namespace") or "default"
                        for obj in objects if self._is_namespaced(obj))
            for namespace in sorted(used):
                if ("Namespace", namespace) not in named:
                    yield namespace_object(namespace)

    def _is_namespaced(self, obj: Mapping[str, Any]) -> bool:
        resource = self.registry.for_kind(str(obj.get("apiVersion", "")), str(obj.get("kind")))
        return resource is not None and resource.namespaced

    def _resource_of(self, obj: Mapping[str, Any]) -> ResourceType:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if not api_version or not kind or not name:
            raise StateError(f"object without apiVersion, kind or metadata.name: "
                             f"{json.dumps(obj)[:200]}")
        resource = self.registry.for_kind(str(api_version), str(kind))
        if resource is None:
            raise StateError(f"{kind} {name}: no resource for kind {kind} in {api_version} "
                             f"(add it under crds:)")
        version = str(api_version).rpartition("/")[2]
        if version not in resource.versions:
            raise StateError(f"{kind} {name}: {api_version} does not define {kind}")
        if resource.group not in self.registry.served:
            raise StateError(f"{kind} {name}: API group {resource.group} is not served by this "
                             f"cluster version (see runtime_config / api_versions)")
        return resource

    def _entry(self, resource: ResourceType, obj: Mapping[str, Any], rv: int) -> Entry:
        metadata = dict(obj["metadata"])
        if resource.namespaced:
            metadata.setdefault("namespace", "default")
        else:
            metadata.pop("namespace", None)  # the real server ignores it on cluster objects
        namespace = str(metadata.get("namespace", ""))
        name = str(metadata["name"])
        key = f"{namespace}/{name}" if namespace else name
        if "uid" not in metadata:
            metadata["uid"] = str(uuid.uuid5(_UID_NAMESPACE,
                                             f"{resource.group}/{resource.plural}/{key}"))
        metadata.setdefault("resourceVersion", str(rv))
        metadata.setdefault("creationTimestamp", DEFAULT_CREATION)
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        body["metadata"] = metadata
        if resource.custom:
            preferred = self.registry.preferred_version(resource.group) or resource.versions[0]
            item = dumps(self.full_object(resource, body, preferred))
        else:
            item = dumps(body)  # built-in list items carry no kind/apiVersion (k8s issue 3030)
        labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
        return Entry(key, namespace, name, labels, body, item)

    # --- writing (WRITABLE resources only) -----------------------------------------------

    def write(self, resource: ResourceType, namespace: str, name: str,
              obj: Mapping[str, Any], *, create: bool) -> dict[str, Any]:
        """POST (`create`) or PUT one object, as the real server answers: 409 when a create
        finds it, 404 when an update does not; a new resourceVersion each time."""
        metadata = dict(obj.get("metadata") or {})
        if metadata.get("name", name) != name or not metadata.get("name", name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the "
                           "name on the URL", {})
        metadata.update(name=name, namespace=namespace)
        with self._lock:
            collection = self.collection(resource)
            old = collection.get(namespace, name)
            if create and old is not None:
                raise ApiError(409, "AlreadyExists", f'{resource.plural} "{name}" already '
                               "exists", {"name": name, "kind": resource.plural})
            if not create and old is None:
                raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found',
                               {"name": name, "kind": resource.plural})
            self._resource_version += 1
            metadata["resourceVersion"] = str(self._resource_version)
            if old is not None:
                metadata["uid"] = old.body["metadata"]["uid"]
                metadata["creationTimestamp"] = old.body["metadata"]["creationTimestamp"]
            else:
                metadata.pop("uid", None)
            entry = self._entry(resource, {**obj, "metadata": metadata},
                                self._resource_version)
            collection.put(entry)
            self.writes += 1
        return self.full_object(resource, entry.body, resource.versions[0])

    # --- reading -------------------------------------------------------------------------

    @staticmethod
    def full_object(resource: ResourceType, body: Mapping[str, Any], version: str
                    ) -> dict[str, Any]:
        """The object as GET returns it, at `version`. Bodies are not converted between
        versions, as for a CRD with conversion strategy None: only apiVersion changes."""
        return {"kind": resource.kind, "apiVersion": resource.api_version(version), **body}

    def collection(self, resource: ResourceType) -> Collection:
        return self.collections[(resource.group, resource.plural)]

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._resource_version

    def list_page(self, resource: ResourceType, version: str, namespace: str,
                  labels: tuple[Requirement, ...], fields: tuple[FieldRequirement, ...],
                  limit: int, token: str) -> Page:
        collection = self.collection(resource)
        low, high = collection.span(namespace)
        rv = self._snapshot_for(token)
        if token:
            start_key = _decode_token(token)[1]
            low = max(low, bisect.bisect_left(collection.keys, start_key, low, high))
        entries = collection.entries
        filtered = bool(labels or fields)
        chosen: list[Entry] = []
        position = low
        while position < high and not (limit and len(chosen) >= limit):
            entry = entries[position]
            position += 1
            if not filtered or (labels_match(labels, entry.labels)
                                and fields_match(fields, entry.body)):
                chosen.append(entry)
        # Like etcd paging: "more" means keys remain, even if none of them would match.
        has_more = bool(limit) and position < high
        next_token = _encode_token(rv, entries[position - 1].key + "\x00") if has_more else ""
        remaining = high - position if has_more and not filtered else None
        if resource.custom and version != self.registry.preferred_version(resource.group):
            items = [dumps(self.full_object(resource, e.body, version)) for e in chosen]
        else:
            items = [entry.item for entry in chosen]
        return Page(items, rv, next_token, remaining)

    def _snapshot_for(self, token: str) -> int:
        """The resourceVersion a page is served at; raises 410 for compacted tokens."""
        with self._lock:
            if not token:
                return self._resource_version
            token_rv, start_key = _decode_token(token)
            self._continues_served += 1
            if (self._expire_after is not None and self._compacted == 0
                    and self._continues_served > self._expire_after):
                # Simulated compaction: every token issued so far is now too old; a write
                # moves the store on, so a restarted list gets fresh, valid tokens.
                self._compacted = self._resource_version
                self._resource_version += 1
            if token_rv == -1:
                return self._resource_version
            if token_rv <= self._compacted:
                raise continue_expired(_encode_token(-1, start_key))
            return token_rv


def _encode_token(rv: int, start_key: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start_key},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _decode_token(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(f"unsupported version: {data.get('v')!r}")
        return int(data["rv"]), str(data["start"])
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError) as error:
        raise bad_request(f"continue key is not valid: {error}") from error


def namespace_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def crd_object(crd: ResourceType) -> dict[str, Any]:
    """The CustomResourceDefinition a cluster with this resource would have."""
    names: dict[str, Any] = {"plural": crd.plural, "singular": crd.singular, "kind": crd.kind,
                             "listKind": f"{crd.kind}List"}
    if crd.short_names:
        names["shortNames"] = list(crd.short_names)
    if crd.categories:
        names["categories"] = list(crd.categories)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    versions = [{"name": version, "served": True, "storage": index == 0, "schema": schema}
                for index, version in enumerate(crd.versions)]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{crd.plural}.{crd.group}"},
        "spec": {"group": crd.group, "names": names,
                 "scope": "Namespaced" if crd.namespaced else "Cluster", "versions": versions},
        "status": {"acceptedNames": names, "storedVersions": [crd.versions[0]], "conditions": [
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted",
             "lastTransitionTime": DEFAULT_CREATION}]},
    }


def check_limit(text: str) -> int:
    try:
        limit = int(text) if text else 0
    except ValueError:
        raise bad_request(f"invalid limit: {text!r}") from None
    if limit < 0:
        raise bad_request("limit must not be negative")
    return limit


__all__ = ["ApiError", "Collection", "Entry", "ObjectStore", "Page", "check_limit"]
