"""Frozen records of the cluster access layer: where it connects, what the server serves, what
failed for one resource type, and list progress."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from gpudra.results.model import ClusterRead
from gpudra.printable import redact

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def redacted(url: str) -> str:
    """`url` without its userinfo (`https://admin:secret@host` -> `https://***@host`): what
    messages show of a server URL, so credentials never reach a terminal or a CI log."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """The cluster a connection talks to, and the namespace scope of its lists."""

    server: str
    context: str | None  # None: the in-cluster service account
    namespace: str  # the default namespace: --namespace, the context's, the pod's, "default"
    all_namespaces: bool
    kubeconfig: tuple[str, ...] = ()  # the files merged, in kubectl's order; () in a pod

    @property
    def shown_server(self) -> str:
        """The server URL for messages: without credentials."""
        return redacted(self.server)

    @property
    def in_cluster(self) -> bool:
        return self.context is None

    @property
    def list_namespace(self) -> str | None:
        """The namespace lists are scoped to; None for all namespaces."""
        return None if self.all_namespaces else self.namespace

    def describe(self) -> str:
        """`context "prod" (https://…)` or `the in-cluster service account (https://…)`."""
        who = "the in-cluster service account" if self.in_cluster else f'context "{self.context}"'
        return f"{who} ({self.shown_server})"


def cluster_read(target: ClusterTarget, at: datetime.datetime | None = None) -> ClusterRead:
    """What a live report says of where and when it read: `target`'s context and server
    (userinfo and tokens redacted) and `at` (default: now) in UTC to the second."""
    when = (at or datetime.datetime.now(datetime.UTC)).astimezone(
        datetime.UTC).replace(microsecond=0)
    return ClusterRead(target.context, redact(_without_query(target.shown_server)),
                       when.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _without_query(url: str) -> str:
    """A server URL has no business with a query or fragment; one there may carry a token."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]
    return urlunsplit(parts._replace(query="", fragment=""))


@dataclass(frozen=True, slots=True)
class ServerVersion:
    """/version. `minor` is numeric even where the server says "34+" (EKS, GKE)."""

    major: int
    minor: int
    patch: int | None
    git_version: str
    platform: str = ""

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ServerVersion:
        git_version = str(document.get("gitVersion") or "")
        match = _VERSION.match(git_version)
        if match:
            major, minor, patch = match.groups()
            return cls(int(major), int(minor), None if patch is None else int(patch),
                       git_version, str(document.get("platform") or ""))
        major = re.sub(r"\D", "", str(document.get("major") or "")) or "0"
        minor = re.sub(r"\D", "", str(document.get("minor") or "")) or "0"
        return cls(int(major), int(minor), None, git_version, str(document.get("platform") or ""))

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)

    def __str__(self) -> str:
        patch = "" if self.patch is None else f".{self.patch}"
        return f"{self.major}.{self.minor}{patch}"


@dataclass(frozen=True, slots=True)
class ApiGroup:
    """A served API group ("" is the core group) and its versions, preferred first."""

    name: str
    versions: tuple[str, ...]
    preferred: str


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One resource of one group/version, as discovery describes it."""

    group: str  # "" for the core group
    version: str
    name: str  # the plural, as in URLs: "pods", "resourceclaims"
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ("get", "list")
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified_name(self) -> str:
        """kubectl's spelling: `pods`, `deployments.apps`, `resourceclaims.resource.k8s.io`."""
        return f"{self.name}.{self.group}" if self.group else self.name

    @property
    def listable(self) -> bool:
        return "list" in self.verbs

    def collection_path(self, namespace: str | None = None) -> str:
        """The URL path of the collection; `namespace` only matters for namespaced types."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{quote(namespace, safe='')}/{self.name}"
        return f"{root}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceError:
    """One resource type could not be read (fully); the others were.

    `verb` is "list" or "get", or "discover" when the group/version's resource list failed.
    `status`/`reason` are the HTTP status and the Status reason (403 "Forbidden", 410
    "Expired", 503 "ServiceUnavailable"); `message` is the server's own wording.
    `objects_read` is how many objects were returned before the failure.
    """

    verb: str
    group: str
    resource: str
    version: str
    namespace: str | None
    status: int | None
    reason: str
    message: str
    objects_read: int = 0

    @property
    def subject(self) -> str:
        """`pods`, `deviceclasses.resource.k8s.io`; `resource.k8s.io/v1` for discovery."""
        if not self.resource:
            return f"{self.group}/{self.version}" if self.group else self.version
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def scope(self) -> str:
        return f'namespace "{self.namespace}"' if self.namespace else "cluster-wide"

    def __str__(self) -> str:
        status = f" ({self.status} {self.reason})" if self.status else ""
        partial = f"; {self.objects_read} read before it failed" if self.objects_read else ""
        scope = "" if self.verb == "discover" else f" ({self.scope})"
        return f"cannot {self.verb} {self.subject}{scope}: {self.message}{status}{partial}"


@dataclass(frozen=True, slots=True)
class ListProgress:
    """Sent to a progress hook after each page (and once more if a list ends in an error).

    `objects` counts the objects handed out so far; `remaining` is the server's estimate of
    what is left (metadata.remainingItemCount), None when it gives none.
    """

    resource: ResourceType
    namespace: str | None
    objects: int
    pages: int
    remaining: int | None
    restarts: int
    done: bool
    error: ResourceError | None = None

    @property
    def expected_total(self) -> int | None:
        return None if self.remaining is None else self.objects + self.remaining
