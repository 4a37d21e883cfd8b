"""The read-only cluster handle that audit, preflight and plan use.

    with connect(ClusterOptions(context="prod", all_namespaces=True)) as cluster:
        print(cluster.server_version())
        claims = cluster.resource("resource.k8s.io", "resourceclaims", ("v1", "v1beta2"))
        if claims is not None:                      # not served: skip quietly
            for page in cluster.list(claims, on_page=progress):
                ...
        for problem in cluster.errors:              # 403s etc., one ResourceError each
            ...

Exceptions (gpudra.cluster.errors) mean the cluster cannot be read at all; problems with one
resource type are records in `cluster.errors`, and the reads go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from gpudra.cluster.discovery import Discovery, Versions
from gpudra.cluster.errors import ClusterRequestError
from gpudra.cluster.jsonparse import parse_json
from gpudra.cluster.kubeconfig import SERVICE_ACCOUNT_DIR
from gpudra.cluster.listing import Listing, ProgressHook
from gpudra.cluster.options import ClusterOptions
from gpudra.cluster.records import ClusterTarget, ResourceError, ResourceType, ServerVersion

if TYPE_CHECKING:
    from gpudra.cluster.transport import Transport


class _TargetScope:
    """The type of TARGET_SCOPE, the one value that says "the options' namespace scope"."""

    def __repr__(self) -> str:
        return "TARGET_SCOPE"


TARGET_SCOPE: Final = _TargetScope()  # list(): the namespace scope of the options
Namespace = str | None | _TargetScope  # a name, None for every namespace, or TARGET_SCOPE


class Cluster:
    """A connection to one API server. Every request is a GET."""

    def __init__(self, target: ClusterTarget, transport: Transport, options: ClusterOptions,
                 close: Callable[[], None] = lambda: None) -> None:
        self.target = target
        self.options = options
        self._transport = transport
        self._close = close
        self._errors: list[ResourceError] = []
        self.discovery = Discovery(transport, self._errors.append, parse_json)

    # --- discovery ------------------------------------------------------------------------

    def server_version(self) -> ServerVersion:
        return self.discovery.server_version()

    def resource(self, group: str, name: str, version: Versions = None) -> ResourceType | None:
        """Discovery.find(): None when the server does not serve it."""
        return self.discovery.find(group, name, version)

    # --- reads ----------------------------------------------------------------------------

    def list(self, resource: ResourceType, *, namespace: Namespace = TARGET_SCOPE,
             label_selector: str | None = None, field_selector: str | None = None,
             on_page: ProgressHook | None = None) -> Listing:
        """A lazy paged list. `namespace`: the options' scope by default, None for all
        namespaces, or a name; ignored for cluster-scoped types."""
        scope = (self.target.list_namespace if isinstance(namespace, _TargetScope)
                 else namespace)
        return Listing(self._transport, resource, scope, page_size=self.options.page_size,
                       label_selector=label_selector, field_selector=field_selector,
                       max_restarts=self.options.retry.list_restarts, parse=parse_json,
                       record=self._errors.append, on_page=on_page)

    def get(self, resource: ResourceType, name: str,
            namespace: Namespace = TARGET_SCOPE) -> dict[str, Any] | None:
        """One object, or None when it does not exist or cannot be read (the latter recorded
        in `errors`)."""
        scope: str | None = (
            self.target.namespace if namespace is None or isinstance(namespace, _TargetScope)
            else namespace)
        scope = scope if resource.namespaced else None
        path = f"{resource.collection_path(scope)}/{quote(name, safe='')}"
        try:
            document = parse_json(self._transport.get(path), path)
        except ClusterRequestError as error:
            if error.status != 404:
                self._errors.append(ResourceError(
                    "get", resource.group, resource.name, resource.version, scope,
                    error.status, error.reason, error.server_message))
            return None
        if isinstance(document, dict) and ("kind" not in document
                                           or "apiVersion" not in document):
            document = {"apiVersion": resource.api_version, "kind": resource.kind, **document}
        return document if isinstance(document, dict) else None

    @property
    def errors(self) -> tuple[ResourceError, ...]:
        """Every per-resource problem so far, in order."""
        return tuple(self._errors)

    # --- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self._close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def connect(options: ClusterOptions | None = None, *, environ: Mapping[str, str] | None = None,
            service_account_dir: Path = SERVICE_ACCOUNT_DIR,
            sleep: Callable[[float], None] = time.sleep) -> Cluster:
    """Load the configuration kubectl would (credentials included: an exec plugin runs here)
    and return a Cluster. No request is sent yet; the first one may raise a ClusterError.
    `environ`, `service_account_dir` and `sleep` are for tests."""
    from gpudra.cluster.connection import open_connection

    options = options or ClusterOptions()
    connection = open_connection(options, environ=environ,
                                 service_account_dir=service_account_dir, sleep=sleep)
    return Cluster(connection.target, connection.transport, options, connection.close)
