"""Request → response logic of the fake API server, free of sockets so it is easy to reason about.

Order of the checks follows kube-apiserver's filter chain: authentication (401), the injected
faults (where priority-and-fairness would throttle), authorization (403), then the handler
(404/405/410/400). GET is served everywhere; POST and PUT of ConfigMaps (WRITABLE) are
accepted as a real server validates them (their 1 MiB data limit); everything else is 405 and
logged.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .codec import dumps
from .registry import BUILTIN_RESOURCES, Registry, ResourceType, served_versions
from .selectors import parse_field_selector, parse_label_selector
from .state import ClusterState, StateError, parse_version
from .status import (
    ApiError,
    bad_request,
    forbidden,
    injected,
    method_not_supported,
    not_found,
    path_not_found,
    unauthorized,
)
from .store import ObjectStore, check_limit

JSON = "application/json"
# Resources the fake accepts POST (create) and PUT (update) for: what gpudra writes (its
# report ConfigMap, audit -o json=configmap:NS/NAME).
WRITABLE = frozenset({("", "configmaps")})
# kube-apiserver's ConfigMap limit: the values of data (UTF-8 bytes) and binaryData (decoded
# bytes) together, keys not counted (pkg/apis/core/validation ValidateConfigMap, MaxSecretSize).
CONFIGMAP_MAX_BYTES = 1024 * 1024
PUBLIC_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})
ANONYMOUS = "system:anonymous"
METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# Plausible Go toolchains per release (goVersion is informational; not release-exact).
GO_VERSIONS = {31: "go1.22.12", 32: "go1.23.6", 33: "go1.24.2", 34: "go1.24.6", 35: "go1.25.3",
               36: "go1.25.5"}
INTERESTING_HEADERS = ("accept", "accept-encoding", "user-agent", "content-type",
                       "authorization")
# kube-apiserver's response compression: gzip level 1, only above 128 KiB (apiserver
# pkg/endpoints/handlers/responsewriters/writers.go, defaultGzipThresholdBytes and
# defaultGzipContentEncodingLevel).
GZIP_THRESHOLD = 128 * 1024
GZIP_LEVEL = 1


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it, for assertions ("only GET", "limit=500")."""

    method: str
    path: str
    query: Mapping[str, str]  # last value of each parameter
    headers: Mapping[str, str]  # INTERESTING_HEADERS; authorization redacted
    status: int
    content_encoding: str = ""  # "gzip" when the answer was compressed (state.compression)


@dataclass(frozen=True)
class Response:
    """An answer; status RESET means: reset the connection instead of answering."""

    status: int
    body: bytes
    content_type: str = JSON
    headers: tuple[tuple[str, str], ...] = ()


RESET = 0  # the status logged for a request whose connection was reset (faults.resets)


class _ResetConnection(Exception):
    """Raised by a `faults.resets` entry: the handler resets the connection."""


@dataclass(frozen=True)
class Route:
    resource: ResourceType
    version: str
    namespace: str
    name: str
    subresource: str


class FakeApi:
    """Answers requests for one ClusterState; thread-safe."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        crd_groups: dict[str, tuple[str, ...]] = {}
        for crd in state.crds:
            known = crd_groups.get(crd.group, ())
            crd_groups[crd.group] = known + tuple(v for v in crd.versions if v not in known)
        try:
            served = served_versions(state.minor, state.runtime_config, state.api_versions)
        except ValueError as error:
            raise StateError(str(error)) from error
        for group, versions in crd_groups.items():
            served.setdefault(group, versions)
        self.registry = Registry(served, (*BUILTIN_RESOURCES, *state.crds))
        self.store = ObjectStore(self.registry, state.objects, state.crds,
                                 state.auto_namespaces, state.faults.expire_continue_after)
        self.server_address = "127.0.0.1:0"
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self._faults_left = [error.count for error in state.faults.errors]
        self._delays_left = [delay.count for delay in state.faults.delays]
        self._resets_left = [reset.count for reset in state.faults.resets]
        self._version = dumps(version_document(state))

    # --- request log ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    # --- dispatch ------------------------------------------------------------------------

    def respond(self, method: str, target: str, headers: Mapping[str, str],
                body: bytes = b"") -> Response:
        split = urlsplit(target)
        path = split.path.rstrip("/") or "/"
        query = {key: values[-1] for key, values in
                 parse_qs(split.query, keep_blank_values=True).items()}
        try:
            response = self._respond(method, path, query, headers, body)
        except ApiError as error:
            response = Response(error.code, error.body(), JSON, error.headers)
        except _ResetConnection:
            response = Response(RESET, b"")
        except Exception as error:  # a bug in the fake: answer it, so the test shows it
            bug = ApiError(500, "InternalError", f"fake API server bug: {error!r}")
            response = Response(500, bug.body())
        response = self._compress(response, headers.get("accept-encoding", ""))
        record = RequestRecord(method, path, query, _interesting(headers), response.status,
                               dict(response.headers).get("Content-Encoding", ""))
        with self._lock:
            self._log.append(record)
        return response

    def _respond(self, method: str, path: str, query: Mapping[str, str],
                 headers: Mapping[str, str], body: bytes = b"") -> Response:
        user = self._authenticate(headers.get("authorization", ""))
        self._inject_fault(path)
        if user == ANONYMOUS and path not in PUBLIC_PATHS:
            verb = "get" if method == "GET" else METHOD_VERBS.get(method, method.lower())
            raise ApiError(403, "Forbidden",
                           f'forbidden: User "{ANONYMOUS}" cannot {verb} path "{path}"', {})
        route = self._route(path)
        if isinstance(route, Route):
            return self._resource_request(method, route, query, headers, user, body)
        if method != "GET":
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource", {})
        if route is None:
            raise path_not_found()
        return route

    def _compress(self, response: Response, accept_encoding: str) -> Response:
        wants_gzip = "gzip" in (part.split(";")[0].strip().lower()
                                for part in accept_encoding.split(","))
        if not (self.state.compression and wants_gzip and len(response.body) > GZIP_THRESHOLD):
            return response
        return Response(response.status, gzip.compress(response.body, GZIP_LEVEL),
                        response.content_type,
                        (*response.headers, ("Content-Encoding", "gzip"),
                         ("Vary", "Accept-Encoding")))

    def _authenticate(self, authorization: str) -> str:
        if not authorization:
            return ANONYMOUS  # anonymous auth is on by default; it may read /version only
        # The scheme is case-insensitive (apiserver pkg/authentication/request/bearertoken):
        # the Python client's in-cluster loader sends "bearer <token>".
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or token.strip() != self.state.token:
            raise unauthorized()
        return self.state.user

    def _inject_fault(self, path: str) -> None:
        faults = self.state.faults
        if faults.latency:
            time.sleep(faults.latency)
        for index, delay in enumerate(faults.delays):
            if delay.path == path and self._take(self._delays_left, index):
                time.sleep(delay.seconds)
        for index, reset in enumerate(faults.resets):
            if reset.path == path and self._take(self._resets_left, index):
                raise _ResetConnection()
        for index, fault in enumerate(self.state.faults.errors):
            if fault.path != path:
                continue
            with self._lock:
                if self._faults_left[index] <= 0:
                    continue
                self._faults_left[index] -= 1
            raise injected(fault.status, fault.retry_after)

    def _take(self, left: list[int], index: int) -> bool:
        """Use up one of a fault's `count`; False once none is left."""
        with self._lock:
            if left[index] <= 0:
                return False
            left[index] -= 1
            return True

    # --- routing -------------------------------------------------------------------------

    def _route(self, path: str) -> Route | Response | None:
        """A Route for resource paths, a ready Response for discovery, None for 404."""
        registry = self.registry
        if path == "/version":
            return Response(200, self._version)
        if path in ("/healthz", "/livez", "/readyz"):
            return Response(200, b"ok", "text/plain; charset=utf-8")
        if path == "/":
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            paths += [f"/apis/{g}" for g in registry.served if g]
            paths += [f"/apis/{g}/{v}" for g, vs in registry.served.items() if g for v in vs]
            return Response(200, dumps({"paths": sorted(paths)}))
        if path == "/api":
            return Response(200, dumps(registry.api_versions(self.server_address)))
        if path == "/apis":
            return Response(200, dumps(registry.api_group_list()))
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if len(parts) == 2:
                if parts[1] not in registry.served:
                    return None
                return Response(200, dumps(registry.api_group_document(parts[1])))
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        if not registry.serves_version(group, version):
            return None
        if not rest:
            return Response(200, dumps(registry.resource_list(group, version)))
        return self._resource_route(group, version, rest)

    def _resource_route(self, group: str, version: str, rest: list[str]) -> Route | None:
        lookup = self.registry.lookup
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            nested = lookup(group, version, rest[2])
            if nested is not None and nested.namespaced:
                namespace, rest = rest[1], rest[2:]
        resource = lookup(group, version, rest[0])
        if resource is None or len(rest) > 3:
            return None
        if resource.namespaced and not namespace and len(rest) > 1:
            return None  # /api/v1/pods/NAME is not a path of a real server
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if subresource and subresource not in resource.subresources:
            return None
        return Route(resource, version, namespace, name, subresource)

    # --- resources -----------------------------------------------------------------------

    def _resource_request(self, method: str, route: Route, query: Mapping[str, str],
                          headers: Mapping[str, str], user: str, body: bytes = b"") -> Response:
        resource = route.resource
        watch = query.get("watch", "").lower() in ("1", "true")
        if method != "GET":
            verb = METHOD_VERBS.get(method, method.lower())
        else:
            verb = "get" if route.name else ("watch" if watch else "list")
        for rule in self.state.deny:
            if rule.denies(verb, resource.group, resource.plural, route.namespace):
                raise forbidden(user, verb, resource.group, resource.plural, route.namespace,
                                route.name, route.subresource)
        roles = self.state.namespaced_only
        if roles is not None and roles.denies(resource.namespaced, route.namespace):
            raise forbidden(user, verb, resource.group, resource.plural, route.namespace,
                            route.name, route.subresource)
        if method in ("POST", "PUT") and (resource.group, resource.plural) in WRITABLE \
                and route.namespace and not route.subresource \
                and bool(route.name) == (method == "PUT"):
            return self._write(route, body, create=method == "POST")
        if method != "GET":
            raise method_not_supported(verb, resource.group, resource.plural)
        if not _acceptable(headers.get("accept", "")):
            raise ApiError(406, "NotAcceptable",
                           "only the following media types are accepted: application/json", {})
        if watch:
            raise bad_request("watch is not supported by the fake API server")
        if route.name:
            return self._get(route)
        return self._list(route, query)

    def _write(self, route: Route, body: bytes, *, create: bool) -> Response:
        try:
            obj = json.loads(body)
        except ValueError:
            raise bad_request("the body is not JSON") from None
        # Like the real decoder, a body without kind takes the endpoint's (defaultGVK).
        if not isinstance(obj, dict) or obj.get("kind", route.resource.kind) != \
                route.resource.kind:
            raise bad_request(f"expected a {route.resource.kind} object")
        name = route.name or str((obj.get("metadata") or {}).get("name") or "")
        size = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values())
        try:
            size += sum(len(base64.b64decode(str(v), validate=True))
                        for v in (obj.get("binaryData") or {}).values())
        except binascii.Error:
            raise bad_request("binaryData values must be base64") from None
        if size > CONFIGMAP_MAX_BYTES:
            raise ApiError(422, "Invalid", f'{route.resource.kind} "{name}" is invalid: []: '
                           f"Too long: may not be more than {CONFIGMAP_MAX_BYTES} bytes",
                           {"name": name, "kind": route.resource.plural})
        written = self.store.write(route.resource, route.namespace, name, obj, create=create)
        return Response(201 if create else 200, dumps(written))

    def _get(self, route: Route) -> Response:
        resource = route.resource
        entry = self.store.collection(resource).get(route.namespace, route.name)
        if entry is None:
            raise not_found(resource.group, resource.plural, route.name)
        return Response(200, dumps(self.store.full_object(resource, entry.body, route.version)))

    def _list(self, route: Route, query: Mapping[str, str]) -> Response:
        resource = route.resource
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""), resource.field_labels)
        page = self.store.list_page(resource, route.version, route.namespace, labels, fields,
                                    check_limit(query.get("limit", "")),
                                    query.get("continue", ""))
        metadata: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
        if page.next_token:
            metadata["continue"] = page.next_token
        if page.remaining is not None:
            metadata["remainingItemCount"] = page.remaining
        head = dumps({"kind": f"{resource.kind}List",
                      "apiVersion": resource.api_version(route.version),
                      "metadata": metadata})
        body = b"".join((head[:-1], b',"items":[', b",".join(page.items), b"]}"))
        return Response(200, body)


def _acceptable(accept: str) -> bool:
    """False when every media range asks for a transformed form (as=Table etc.) we lack."""
    if not accept.strip():
        return True
    for media_range in accept.split(","):
        media_type, *params = (part.strip() for part in media_range.split(";"))
        if media_type in ("application/json", "application/*", "*/*") and \
                not any(param.startswith("as=") for param in params):
            return True
    return False


def _interesting(headers: Mapping[str, str]) -> dict[str, str]:
    kept = {name: headers[name] for name in INTERESTING_HEADERS if name in headers}
    if "authorization" in kept:
        kept["authorization"] = kept["authorization"].split(" ", 1)[0] + " <redacted>"
    return kept


def version_document(state: ClusterState) -> dict[str, str]:
    """/version as kube-apiserver answers it (k8s.io/apimachinery pkg/version Info)."""
    major, minor, _ = parse_version(state.version)
    git_version = state.version if state.version.startswith("v") else f"v{state.version}"
    document = {"major": str(major), "minor": str(minor)}
    if minor >= 33:  # emulation/compatibility versions are reported since 1.33
        document.update(emulationMajor=str(major), emulationMinor=str(minor),
                        minCompatibilityMajor=str(major), minCompatibilityMinor=str(minor - 1))
    document.update(
        gitVersion=git_version,
        gitCommit=hashlib.sha1(git_version.encode()).hexdigest(),
        gitTreeState="clean", buildDate="2025-11-12T10:00:00Z",
        goVersion=GO_VERSIONS.get(minor, "go1.25.5"), compiler="gc", platform="linux/amd64")
    document.update(state.version_info)
    return document
