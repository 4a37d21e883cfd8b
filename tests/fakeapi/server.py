"""The HTTP side: a ThreadingHTTPServer on 127.0.0.1 speaking HTTP/1.1, and FakeCluster."""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from .api import RESET, FakeApi, RequestRecord, Response
from .kubeconfig import write_kubeconfig
from .state import ClusterState, load_state
from .tls import Certificates, make_certificates, tls_available

POLL_INTERVAL = 0.005  # seconds
# What the server meets when a client hangs up on purpose: mid-answer (a test's client giving
# up), or in the TLS handshake (a test's client that does not trust the fake's CA, or speaks
# plain HTTP to it). None is the server's error; socketserver would print a traceback for each
# into whatever test output is being captured at that moment.
HANGUPS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, ssl.SSLError)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    api: FakeApi

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.hangups: list[str] = []  # each a client's hang-up, told instead of printed

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, HANGUPS):
            self.hangups.append(f"{type(error).__name__}: {error}")  # list.append is atomic
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as kubectl and urllib3 expect
    server: _Server

    def version_string(self) -> str:
        return "fake-kube-apiserver"

    def setup(self) -> None:
        # Handshake here, in the connection's thread, not in the accept loop.
        if hasattr(self.request, "do_handshake"):
            self.request.settimeout(30)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def _serve(self) -> None:
        body = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        response = self.server.api.respond(self.command, self.path, headers, body)
        self._write(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True  # not worth decoding: clients send a length
            return b""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _write(self, response: Response) -> None:
        if response.status == RESET:
            # SO_LINGER with a zero timeout makes close() send RST: "connection reset by peer".
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.request.close()
            return
        # One write for head and body: two small writes on a keep-alive connection meet
        # Nagle's algorithm and the client's delayed ACK, costing 40 ms per request.
        reason = self.responses.get(response.status, ("Unknown",))[0]
        head = [f"{self.protocol_version} {response.status} {reason}",
                f"Date: {self.date_time_string()}",
                f"Server: {self.version_string()}",
                f"Content-Type: {response.content_type}",
                f"Content-Length: {len(response.body)}",
                "Cache-Control: no-cache, private",
                f"Audit-Id: {uuid.uuid4()}"]
        head += [f"{name}: {value}" for name, value in response.headers]
        body = b"" if self.command == "HEAD" else response.body
        stream = getattr(response, "stream", None)  # hostile.py: a body sent slowly
        try:
            if stream is None or not body:
                self.wfile.write("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body)
                return
            self.wfile.write("\r\n".join(head).encode("latin-1") + b"\r\n\r\n")
            for piece, pause in stream():
                self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: FakeCluster.requests is the log."""


class FakeCluster:
    """A fake Kubernetes API server on an ephemeral localhost port.

        with FakeCluster({"version": "1.34.2", "objects": [...]}) as cluster:
            run(["kubectl", "--kubeconfig", cluster.kubeconfig, "get", "pods", "-A"])
            assert {r.method for r in cluster.requests} == {"GET"}
    """

    def __init__(self, state: ClusterState | Mapping[str, Any] | str | Path | None = None,
                 *, port: int = 0, kubeconfig: str | Path | None = None,
                 tls: bool | None = None) -> None:
        """`tls` None: HTTPS when the openssl CLI is available (kubectl sends tokens only
        over TLS), else plain HTTP, where kubectl's requests are anonymous."""
        self.state = load_state(state if state is not None else {})
        self.api = FakeApi(self.state)
        self.tls = tls_available() if tls is None else tls
        self._port = port
        self._kubeconfig_target = Path(kubeconfig) if kubeconfig else None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._tmpdir: str | None = None
        self.url = ""
        self.kubeconfig = Path()
        self.ca_file: Path | None = None  # the CA's PEM while a TLS server runs

    def start(self) -> FakeCluster:
        self._tmpdir = tempfile.mkdtemp(prefix="fakeapi-")
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.api = self.api
        ca_pem = None
        if self.tls:
            certificates: Certificates = make_certificates(Path(self._tmpdir))
            server.socket = certificates.server_context().wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False)
            ca_pem = certificates.ca.read_bytes()
            self.ca_file = certificates.ca
        host, port = server.server_address[:2]
        self.url = f"{'https' if self.tls else 'http'}://{host}:{port}"
        self.api.server_address = f"{host}:{port}"
        target = self._kubeconfig_target or Path(self._tmpdir) / "kubeconfig"
        self.kubeconfig = write_kubeconfig(target, self.url, self.state.token, ca_pem)
        self._server = server
        # shutdown() waits for the accept loop's next poll: a short poll makes stop() cheap for
        # tests that start a server per case, at the cost of a few idle wake-ups.
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": POLL_INTERVAL},
                                        name="fakeapi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
            self.ca_file = None

    def __enter__(self) -> FakeCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request so far (a copy), in arrival order."""
        return self.api.requests

    @property
    def hangups(self) -> list[str]:
        """The connections clients hung up on (a copy): `SSLError: ... unknown ca` for one that
        refused the fake's certificate. The server reports them here, never on stderr."""
        return list(self._server.hangups) if self._server is not None else []

    def clear_requests(self) -> None:
        self.api.clear_requests()
