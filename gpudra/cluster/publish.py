"""The one write gpudra makes: a report into a ConfigMap (`audit -o json=configmap:NS/NAME`),
so an in-cluster CronJob leaves each cluster's latest report where `kubectl get` finds it.

Size: kube-apiserver refuses a ConfigMap whose data values (UTF-8 bytes) and binaryData values
(decoded bytes) add up to more than 1 MiB, keys not counted (docs/facts.md). A report that fits
is stored as text under `report.json`; a larger one gzipped under binaryData `report.json.gz`
(JSON reports shrink 10-20x, so ~10-20 MB of report fit); one that still does not fit is an
error (exit 3) that names its size: nothing is cut silently. The annotation
`gpudra.io/report-encoding` says which (`json` or `gzip`).

Sent through the connection reads use (gpudra.cluster.transport), not the client's generated
CoreV1Api, whose import alone takes ~2 s. Create-or-replace: PUT the whole object (no
resourceVersion: the last write wins, which is what a nightly report wants), and POST it when
the PUT finds none. RBAC: `update` on that one
name (resourceNames) and `create` in its namespace (create cannot be limited by name: the
name is not known when the request is authorized); `gpudra rbac --report-configmap NAME`.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from gpudra import __version__
from gpudra.cluster.errors import ClusterError, ClusterRequestError
from gpudra.cluster.options import ClusterOptions
from gpudra.errors import UsageError

# kube-apiserver's limit (pkg/apis/core: MaxSecretSize, used by ValidateConfigMap).
CONFIGMAP_MAX_BYTES = 1024 * 1024
TEXT_KEY = "report.json"
GZIP_KEY = "report.json.gz"
ENCODING_ANNOTATION = "gpudra.io/report-encoding"
WRITTEN_ANNOTATION = "gpudra.io/written-at"
PREFIX = "configmap:"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ReportTooLargeError(ClusterError):
    """Even gzipped, the report is more than a ConfigMap may hold."""


@dataclass(frozen=True, slots=True)
class ConfigMapTarget:
    namespace: str | None  # None: the context's namespace (in a pod: the pod's own)
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def parse_target(text: str) -> ConfigMapTarget:
    """`NAME` or `NAMESPACE/NAME` after `configmap:`; names as the API server accepts them."""
    namespace, _, name = text.rpartition("/")
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise UsageError(f"configmap:{text}: {name!r} is no ConfigMap name (lower-case "
                         "letters, digits, '-' and '.', at most 253 characters)")
    if namespace and (len(namespace) > 63 or not _DNS_LABEL.match(namespace)):
        raise UsageError(f"configmap:{text}: {namespace!r} is no namespace name")
    return ConfigMapTarget(namespace or None, name)


@dataclass(frozen=True, slots=True)
class Payload:
    data: dict[str, str]
    binary_data: dict[str, str]  # base64, as the API carries it
    encoding: str  # "json" | "gzip"
    stored_bytes: int  # what counts against CONFIGMAP_MAX_BYTES


def payload(text: str, limit: int = CONFIGMAP_MAX_BYTES) -> Payload:
    """The report as ConfigMap data: as is when it fits, else gzipped, else an error."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return Payload({TEXT_KEY: text}, {}, "json", len(raw))
    packed = gzip.compress(raw, compresslevel=9, mtime=0)  # mtime 0: same report, same bytes
    if len(packed) <= limit:
        return Payload({}, {GZIP_KEY: base64.b64encode(packed).decode("ascii")}, "gzip",
                       len(packed))
    raise ReportTooLargeError(
        f"the report is {_mib(len(raw))} ({_mib(len(packed))} gzipped): more than the "
        f"{_mib(limit)} a ConfigMap may hold; write it to a file or stdout instead "
        "(-o json=PATH, -o json)")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.2f} MiB"


@dataclass(frozen=True, slots=True)
class Written:
    namespace: str
    name: str
    created: bool
    encoding: str
    stored_bytes: int


def write_report(options: ClusterOptions, target: ConfigMapTarget, text: str, *,
                 now: datetime.datetime | None = None) -> Written:
    """Create or replace the ConfigMap `target` with `text`, on the cluster `options` name,
    through the connection reads use (its credentials, TLS and timeouts). Raises
    ClusterError subclasses, each one line."""
    from gpudra.cluster.connection import open_connection

    content = payload(text)
    # The context's (or the pod's) own namespace, not the audit's -n scope.
    connection = open_connection(replace(options, namespace=None))
    namespace = target.namespace or connection.target.namespace
    when = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": target.name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "gpudra",
                                "app.kubernetes.io/component": "report"},
                     "annotations": {ENCODING_ANNOTATION: content.encoding,
                                     WRITTEN_ANNOTATION: when,
                                     "gpudra.io/version": __version__}}}
    if content.data:
        body["data"] = content.data
    if content.binary_data:
        body["binaryData"] = content.binary_data
    encoded = json.dumps(body, ensure_ascii=False).encode("utf-8")
    collection = f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps"
    manager = "?fieldManager=gpudra"
    created = False
    try:
        try:
            connection.transport.send(
                "PUT", f"{collection}/{quote(target.name, safe='')}{manager}", encoded)
        except ClusterRequestError as error:
            if error.status != 404:
                raise
            connection.transport.send("POST", collection + manager, encoded)
            created = True
    except ClusterRequestError as error:
        hint = (f"; `gpudra rbac --report-configmap {target.name}` grants it"
                if error.status == 403 else "")
        raise ClusterError(f"{connection.target.describe()} refused to write ConfigMap "
                           f"{namespace}/{target.name} ({error.status} {error.reason}): "
                           f"{error.server_message}{hint}") from None
    except ClusterError as error:  # unreachable, timed out, credentials rejected
        raise ClusterError(f"cannot write ConfigMap {namespace}/{target.name}: {error}") \
            from None
    finally:
        connection.close()
    return Written(namespace, target.name, created, content.encoding, content.stored_bytes)
