"""A real Kubernetes control plane on 127.0.0.1 for a test session: etcd, kube-apiserver,
kube-scheduler and kube-controller-manager, built by build.py, with a throw-away PKI and RBAC on.

There is no kubelet. Nodes are API objects created with the capacity, labels and Ready condition
a test gives them (create_node), and the node lifecycle controller is off, so nothing taints them
not-ready or unreachable.
Pods are bound by the real scheduler and their claims allocated by its DRA plugin; they then stay
Pending, which is all the scheduling tests compare.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from tests.controlplane.releases import NEWEST, Release

RUNTIME_CONFIG = NEWEST.runtime_config  # releases.py says why
# No kubelet heartbeats: the node lifecycle controller would taint every node unreachable.
CONTROLLERS = "*,-node-lifecycle-controller"
SERVICE_RANGE = "10.0.0.0/24"


class APIError(Exception):
    """The API server answered with an error status; `status` is its Status object."""

    def __init__(self, code: int, status: dict[str, Any]) -> None:
        super().__init__(f"{code}: {status.get('message', status)}")
        self.code = code
        self.status = status


@dataclass(frozen=True)
class Credentials:
    """How a client authenticates: a client certificate (cert, key) or a bearer token."""

    cert: Path | None = None
    key: Path | None = None
    token: str | None = None


class Client:
    """JSON requests to the API server over TLS verified against the session's CA.

    Each thread keeps one connection open (HTTP keep-alive): the journey's stand-in
    controllers poll many times a second, and a TLS handshake per request was most of what
    they cost both cores (docs/ci.md). http.client's connections are not thread-safe, hence
    one per thread."""

    def __init__(self, port: int, ca: Path, credentials: Credentials) -> None:
        self.port = port
        self._context = ssl.create_default_context(cafile=str(ca))
        if credentials.cert is not None:
            self._context.load_cert_chain(credentials.cert, credentials.key)
        self._token = credentials.token
        self._local = threading.local()

    def request(self, method: str, path: str, body: Any = None, *,
                query: dict[str, str] | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        target = path + ("?" + urlencode(query) if query else "")
        encoded = None if body is None else json.dumps(body).encode()
        status, payload = self._exchange(method, target, encoded, headers)
        try:
            data = json.loads(payload) if payload else {}
        except ValueError:  # /readyz, /healthz and the like answer in plain text
            data = {"text": payload.decode(errors="replace")}
        if status >= 400:
            raise APIError(status, data)
        return data

    def _exchange(self, method: str, target: str, body: bytes | None,
                  headers: dict[str, str]) -> tuple[int, bytes]:
        """(status, body) of one request on this thread's connection. A kept connection the
        server closed while idle fails before the server reads the request, so the request
        goes again once on a new connection; a new connection's failure is the caller's."""
        while True:
            connection, reused = self._connection()
            try:
                connection.request(method, target, body, headers)
                response = connection.getresponse()
                payload = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._drop()
                if reused:
                    continue
                raise
            except BaseException:
                self._drop()
                raise
            if response.will_close:
                self._drop()
            return response.status, payload

    def _connection(self) -> tuple[http.client.HTTPSConnection, bool]:
        """This thread's connection, and whether it served a request before."""
        connection = getattr(self._local, "connection", None)
        if connection is not None and not _closed_by_peer(connection):
            return connection, True
        self._drop()
        self._local.connection = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self._context, timeout=60)
        return self._local.connection, False

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
        self._local.connection = None

    def get(self, path: str, **query: str) -> dict[str, Any]:
        return self.request("GET", path, query=query or None)

    def create(self, path: str, body: dict[str, Any], *, dry_run: bool = False,
               strict: bool = True) -> dict[str, Any]:
        query = {"fieldValidation": "Strict" if strict else "Ignore"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("POST", path, body, query=query)

    def delete(self, path: str) -> None:
        try:
            self.request("DELETE", path, {"propagationPolicy": "Background"})
        except APIError as error:
            if error.code != 404:
                raise


class ControlPlane:
    """Start with start(), stop with stop(). `admin` is a client in system:masters."""

    def __init__(self, binary: Path, workdir: Path,
                 apiserver_args: tuple[str, ...] = (), release: Release = NEWEST) -> None:
        self.binary = binary  # built for `release` (build.binary(release))
        self.workdir = workdir
        self.apiserver_args = apiserver_args  # more kube-apiserver flags (admission plugins)
        self.release = release
        self.pki = workdir / "pki"
        self._processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.port = 0
        self.admin: Client | None = None
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(self.binary), "certs", str(self.pki)], check=True)
        etcd_port, peer_port, self.port = _free_ports(3)
        self._spawn("etcd", "--name", "default", "--data-dir", self.workdir / "etcd",
                    "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                    "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                    "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                    "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
                    "--unsafe-no-fsync", "--log-level", "warn")
        pki = self.pki
        self._spawn("kube-apiserver",
                    "--etcd-servers", f"http://127.0.0.1:{etcd_port}",
                    "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                    "--secure-port", str(self.port), "--cert-dir", self.workdir / "apiserver",
                    "--tls-cert-file", pki / "apiserver.crt",
                    "--tls-private-key-file", pki / "apiserver.key",
                    "--client-ca-file", pki / "ca.crt",
                    "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                    "--service-account-key-file", pki / "sa.pub",
                    "--service-account-signing-key-file", pki / "sa.key",
                    "--service-cluster-ip-range", SERVICE_RANGE,
                    "--authorization-mode", "Node,RBAC",
                    "--runtime-config", self.release.runtime_config,
                    # 127.0.0.1 cannot back the kubernetes Service; nothing in-cluster needs it.
                    "--endpoint-reconciler-type", "none",
                    "--profiling=false", *self._feature_gates(), *self.apiserver_args)
        self.admin = self.client(Credentials(pki / "admin.crt", pki / "admin.key"))
        self._wait("the API server to be ready", self._ready, timeout)
        for component in ("kube-scheduler", "kube-controller-manager"):
            self.write_kubeconfig(self.workdir / f"{component}.kubeconfig",
                                  Credentials(pki / f"{component}.crt", pki / f"{component}.key"))
        kubeconfig = self.workdir / "kube-scheduler.kubeconfig"
        self._spawn("kube-scheduler", "--kubeconfig", kubeconfig,
                    "--authentication-kubeconfig", kubeconfig,
                    "--authorization-kubeconfig", kubeconfig,
                    "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
                    *self._feature_gates())
        kubeconfig = self.workdir / "kube-controller-manager.kubeconfig"
        self._spawn("kube-controller-manager", "--kubeconfig", kubeconfig,
                    "--authentication-kubeconfig", kubeconfig,
                    "--authorization-kubeconfig", kubeconfig,
                    "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
                    "--use-service-account-credentials=true",
                    "--service-account-private-key-file", pki / "sa.key",
                    "--root-ca-file", pki / "ca.crt",
                    "--service-cluster-ip-range", SERVICE_RANGE,
                    "--controllers", CONTROLLERS, *self._feature_gates())
        self._wait("the default ServiceAccount", self._default_service_account, timeout)

    def stop(self) -> None:
        # Clients first, etcd last: the API server deletes its lease on the way out.
        for _name, process in reversed(self._processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # --- clients ---------------------------------------------------------------------------

    def client(self, credentials: Credentials) -> Client:
        return Client(self.port, self.pki / "ca.crt", credentials)

    def write_kubeconfig(self, path: Path, credentials: Credentials,
                         namespace: str = "default") -> Path:
        user: dict[str, str] = {}
        if credentials.cert is not None:
            user = {"client-certificate": str(credentials.cert),
                    "client-key": str(credentials.key)}
        if credentials.token is not None:
            user = {"token": credentials.token}
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {
                "server": f"https://127.0.0.1:{self.port}",
                "certificate-authority": str(self.pki / "ca.crt")}}],
            "users": [{"name": "test", "user": user}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test",
                                                      "namespace": namespace}}],
        }
        path.write_text(json.dumps(config, indent=1))
        return path

    def service_account_token(self, namespace: str, name: str) -> str:
        """A short-lived token for a ServiceAccount (TokenRequest), as a pod would be given."""
        response = self.admin.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": 3600}})
        return response["status"]["token"]

    def kubectl(self, *args: str, kubeconfig: Path | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        config = kubeconfig or self.workdir / "admin.kubeconfig"
        if kubeconfig is None and not config.exists():
            self.write_kubeconfig(config, Credentials(self.pki / "admin.crt",
                                                      self.pki / "admin.key"))
        return subprocess.run([str(self.binary), "kubectl", "--kubeconfig", str(config),
                               "--cache-dir", str(self.workdir / "kubectl-cache"), *args],
                              input=stdin, capture_output=True, text=True, check=False,
                              timeout=300)

    def run(self, program: str, *args: str,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run one of the binary's other programs (kustomize, kubectl without a kubeconfig)."""
        return subprocess.run([str(self.binary), program, *args], input=stdin,
                              capture_output=True, text=True, check=False, timeout=300)

    def logs(self, component: str) -> str:
        return (self.workdir / f"{component}.log").read_text(errors="replace")

    # --- objects ---------------------------------------------------------------------------

    def ensure_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """Create namespace `name` (with `labels`) unless it exists; an existing one gets
        `labels` added."""
        try:
            self.admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name,
                                                                  "labels": labels or {}}})
        except APIError as error:
            if error.code != 409:
                raise
            if labels:
                self.admin.request("PATCH", f"/api/v1/namespaces/{name}",
                                   {"metadata": {"labels": labels}},
                                   content_type="application/merge-patch+json")
        self._wait(f"the default ServiceAccount in {name}",
                   lambda: self._exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                   60)

    def resource(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        """(plural, namespaced) of a kind the server serves at api_version; None if it does not."""
        if api_version not in self._resources:
            group, _, version = api_version.rpartition("/")
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                listing = self.admin.get(path)["resources"]
            except APIError as error:
                if error.code != 404:
                    raise
                listing = []
            self._resources[api_version] = {r["kind"]: (r["name"], r["namespaced"])
                                            for r in listing if "/" not in r["name"]}
        return self._resources[api_version].get(kind)

    def object_path(self, obj: dict[str, Any]) -> str | None:
        """The path of `obj` by name, or None when its kind is not served here."""
        served = self.resource(obj.get("apiVersion", ""), obj.get("kind", ""))
        if served is None:
            return None
        plural, namespaced = served
        group, _, version = obj["apiVersion"].rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        metadata = obj.get("metadata") or {}
        if namespaced:
            base += f"/namespaces/{quote(metadata.get('namespace') or 'default')}"
        return f"{base}/{plural}/{quote(metadata.get('name', ''))}"

    def dry_run(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create `obj` with dryRun=All and strict field validation, as
        `kubectl apply --dry-run=server` does for a new object (unknown and duplicate fields are
        errors). An object that exists already is dry-run replaced over the stored one."""
        path = self.object_path(obj)
        if path is None:
            raise LookupError(f"{obj.get('apiVersion')} {obj.get('kind')} is not served")
        query = {"fieldValidation": "Strict", "dryRun": "All"}
        try:
            return self.admin.request("POST", path.rpartition("/")[0], obj, query=query)
        except APIError as error:
            if error.status.get("reason") != "AlreadyExists":
                raise
        stored = self.admin.get(path)
        replacement = {**obj, "metadata": {**(obj.get("metadata") or {}), "resourceVersion":
                                           stored["metadata"]["resourceVersion"]}}
        return self.admin.request("PUT", path, replacement, query=query)

    def create_node(self, node: dict[str, Any]) -> None:
        """Create a Node as a kubelet would register it. The TaintNodesByCondition admission
        plugin taints every new Node not-ready:NoSchedule, and only the node lifecycle
        controller (off here, with no kubelet to heartbeat) would lift it; so the Node's own
        taints are put back at once."""
        self.admin.create("/api/v1/nodes", node)
        self.admin.request("PATCH", f"/api/v1/nodes/{quote(node['metadata']['name'])}",
                           {"spec": {"taints": node.get("spec", {}).get("taints")}},
                           content_type="application/merge-patch+json")

    def wait(self, what: str, condition: Callable[[], Any], timeout: float = 60.0) -> Any:
        return self._wait(what, condition, timeout)

    # --- internals -------------------------------------------------------------------------

    def _spawn(self, name: str, *args: object) -> None:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (the process owns it)
        process = subprocess.Popen([str(self.binary), name, *map(str, args)],
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        log.close()
        self._processes.append((name, process))

    def _wait(self, what: str, condition: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            for name, process in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode} while waiting "
                                       f"for {what}:\n{self.logs(name)[-3000:]}")
            result = condition()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.2)

    def _feature_gates(self) -> tuple[str, ...]:
        # The same gates on every component: a beta DRA needs its gate in the API server (the
        # API), the scheduler (allocation) and the controller manager (claims from templates).
        gates = self.release.feature_gates
        return ("--feature-gates", gates) if gates else ()

    def _ready(self) -> bool:
        try:
            self.admin.request("GET", "/readyz")
            return True
        except (OSError, APIError, ValueError):
            return False

    def _exists(self, path: str) -> bool:
        try:
            self.admin.get(path)
            return True
        except APIError as error:
            if error.code == 404:
                return False
            raise

    def _default_service_account(self) -> bool:
        return self._exists("/api/v1/namespaces/default/serviceaccounts/default")


def path_for(obj: dict[str, Any], plural: str) -> str:
    """The collection path of an object of resource `plural` (namespaced when it has one)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    namespace = obj.get("metadata", {}).get("namespace")
    if namespace:
        return f"{base}/namespaces/{quote(namespace)}/{plural}"
    return f"{base}/{plural}"


def _closed_by_peer(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle kept-alive connection was closed by the server: its socket reads as
    ready (an end of file, or bytes nobody asked for) when nothing is in flight."""
    if connection.sock is None:
        return True
    readable, _, _ = select.select([connection.sock], [], [], 0)
    return bool(readable)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
