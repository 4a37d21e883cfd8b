"""What the server serves: /version, the API groups and versions, each version's resources.

Legacy discovery (`/api`, `/apis`, then `/api/v1` and `/apis/{group}/{version}` only for the
groups a caller asks about, each fetched once). Unserved groups, versions and resources are
answered with None/() so callers skip them quietly. A group/version whose resource list cannot
be read (typically an aggregated API such as metrics.k8s.io whose backend is down: 503) is
recorded as a ResourceError with verb "discover" and treated as unserved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpudra.cluster.errors import ClusterRequestError
from gpudra.cluster.records import ApiGroup, ResourceError, ResourceType, ServerVersion

if TYPE_CHECKING:
    from gpudra.cluster.transport import Transport

Versions = str | Sequence[str] | None


class Discovery:
    """Cached discovery of one server. Requests happen on first use."""

    def __init__(self, transport: Transport, record: Callable[[ResourceError], None],
                 parse: Callable[[bytes, str], Any]) -> None:
        self._transport = transport
        self._record = record
        self._parse = parse
        self._version: ServerVersion | None = None
        self._groups: dict[str, ApiGroup] | None = None
        self._resources: dict[tuple[str, str], tuple[ResourceType, ...]] = {}

    def server_version(self) -> ServerVersion:
        if self._version is None:
            document = self._get("/version")
            self._version = ServerVersion.from_document(document if isinstance(document, dict)
                                                        else {})
        return self._version

    def groups(self) -> Mapping[str, ApiGroup]:
        """Every served group by name; the core group is ""."""
        if self._groups is None:
            # A malformed entry (not an object, a name that is not a string) is skipped: the
            # types it would have named are then "not served", never a crash.
            core = [v for v in _items(self._get("/api").get("versions")) if isinstance(v, str)]
            groups = {"": ApiGroup("", tuple(core), core[0])} if core else {}
            for entry in _items(self._get("/apis").get("groups")):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                versions = tuple(v["version"] for v in _items(entry.get("versions"))
                                 if isinstance(v, dict) and isinstance(v.get("version"), str))
                preferred = _mapping(entry.get("preferredVersion")).get("version")
                if versions:
                    groups[entry["name"]] = ApiGroup(entry["name"], versions,
                                                     preferred if isinstance(preferred, str)
                                                     and preferred in versions
                                                     else versions[0])
            self._groups = groups
        return self._groups

    def serves(self, group: str, version: str | None = None) -> bool:
        served = self.groups().get(group)
        return served is not None and (version is None or version in served.versions)

    def preferred_version(self, group: str) -> str | None:
        served = self.groups().get(group)
        return served.preferred if served else None

    def resources(self, group: str, version: str) -> tuple[ResourceType, ...]:
        """The resources of a served group/version (no subresources); () otherwise."""
        key = (group, version)
        if key not in self._resources:
            self._resources[key] = self._fetch_resources(group, version) \
                if self.serves(group, version) else ()
        return self._resources[key]

    def find(self, group: str, resource: str, version: Versions = None) -> ResourceType | None:
        """A resource by its plural name. `version`: None for the group's preferred version
        (then any other served one that has the resource, in the server's order, as kubectl
        does); a version; or versions in order of preference, e.g. ("v1", "v1beta2",
        "v1beta1") for resource.k8s.io. None when no candidate version serves it."""
        return self._find(group, version, lambda r: r.name == resource)

    def find_kind(self, group: str, kind: str, version: Versions = None) -> ResourceType | None:
        """Like find(), by kind ("PyTorchJob"): for workload kinds a user configures."""
        return self._find(group, version, lambda r: r.kind == kind)

    def _find(self, group: str, version: Versions,
              match: Callable[[ResourceType], bool]) -> ResourceType | None:
        for candidate in self._candidate_versions(group, version):
            for resource in self.resources(group, candidate):
                if match(resource):
                    return resource
        return None

    def _candidate_versions(self, group: str, version: Versions) -> Iterable[str]:
        served = self.groups().get(group)
        if served is None:
            return ()
        if version is None:
            return (served.preferred, *(v for v in served.versions if v != served.preferred))
        wanted = (version,) if isinstance(version, str) else tuple(version)
        return tuple(v for v in wanted if v in served.versions)

    def _fetch_resources(self, group: str, version: str) -> tuple[ResourceType, ...]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            document = self._get(path)
        except ClusterRequestError as error:
            if error.status != 404:  # 404: the version went away since /apis; quietly none
                self._record(ResourceError("discover", group, "", version, None, error.status,
                                           error.reason, error.server_message))
            return ()
        found = []
        for entry in _items(document.get("resources")):
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("name") or "")
            if not name or "/" in name:  # pods/status, pods/log: subresources
                continue
            found.append(ResourceType(
                group=group, version=version, name=name, kind=str(entry.get("kind") or ""),
                namespaced=bool(entry.get("namespaced")),
                verbs=tuple(str(v) for v in _items(entry.get("verbs"))),
                short_names=tuple(str(v) for v in _items(entry.get("shortNames")))))
        return tuple(found)

    def _get(self, path: str) -> dict[str, Any]:
        try:
            document = self._parse(self._transport.get(path), path)
        except ClusterRequestError as error:
            if error.status == 403 and path in ("/api", "/apis"):
                raise ClusterRequestError(
                    f"the cluster does not let {self._transport.target.describe()} read its "
                    f"API list (403 {error.reason}): {error.server_message}"
                    + (" (no credentials were sent or accepted)" if "system:anonymous"
                       in error.server_message else ""),
                    path=path, status=403, reason=error.reason,
                    server_message=error.server_message) from None
            raise
        return document if isinstance(document, dict) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
