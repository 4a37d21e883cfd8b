"""The test control plane's client keeps one connection per thread (HTTP keep-alive) and opens
a new one when the server closed the old: the journey's stand-in controllers poll many times a
second, and a TLS handshake per request was most of their cost (docs/ci.md).

Checked against a local TLS server that counts the connections it accepts, with the throw-away
PKI of the control plane's binary (`certs`), so the client verifies the server as it verifies
the API server."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.controlplane import build
from tests.controlplane.cluster import Client, Credentials
from tests.controlplane.releases import NEWEST


class CountingServer(ThreadingHTTPServer):
    """Answers every request with what it was (method, path, body length) as JSON, and counts
    the connections it accepted; `close_after_each` closes every connection after one answer
    without saying so (as a server closes an idle kept-alive connection), `say_close` says so
    with `Connection: close`."""

    daemon_threads = True

    def __init__(self, context: ssl.SSLContext, *, close_after_each: bool,
                 say_close: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.close_after_each = close_after_each
        self.say_close = say_close
        self.connections = 0
        self._lock = threading.Lock()

    def accepted(self) -> None:
        with self._lock:
            self.connections += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingServer

    def setup(self) -> None:
        super().setup()
        self.server.accepted()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = json.dumps({"method": self.command, "path": self.path,
                           "length": length}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.server.say_close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if self.server.close_after_each:
            self.close_connection = True

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *_args: object) -> None:  # no access log on the test's stderr
        pass


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        binary = build.binary(NEWEST)
    except build.Unavailable as error:
        if os.environ.get("CI") or os.environ.get("GPUDRA_REQUIRE_GO"):
            pytest.fail(f"the control plane is required in CI: {error}", pytrace=False)
        pytest.skip(str(error))
    directory = tmp_path_factory.mktemp("pki")
    subprocess.run([str(binary), "certs", str(directory)], check=True)
    return directory


@dataclass(frozen=True)
class Case:
    name: str
    threads: int
    requests: int  # per thread
    close_after_each: bool = False
    say_close: bool = False
    connections: int = 0  # what the server should have accepted


CASES = [
    Case("one thread keeps one connection", 1, 5, connections=1),
    Case("each thread keeps its own", 3, 4, connections=3),
    Case("a connection the server closed unsaid is replaced", 1, 4, close_after_each=True,
         connections=4),
    Case("a connection the server says it closes is replaced", 1, 3, close_after_each=True,
         say_close=True, connections=3),
]


def _serving(pki: Path, case: Case) -> Iterator[CountingServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    server = CountingServer(context, close_after_each=case.close_after_each,
                            say_close=case.say_close)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_connections_are_kept_per_thread_and_replaced_when_closed(pki: Path,
                                                                  case: Case) -> None:
    with contextmanager(_serving)(pki, case) as server:
        client = Client(server.server_address[1], pki / "ca.crt", Credentials())
        answers: list[dict[str, object]] = []
        lock = threading.Lock()

        def work(thread: int) -> None:
            for index in range(case.requests):
                if index % 2:
                    answer = client.create(f"/t{thread}/{index}", {"n": index})
                else:
                    answer = client.get(f"/t{thread}/{index}")
                with lock:
                    answers.append(answer)

        workers = [threading.Thread(target=work, args=(t,)) for t in range(case.threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        expected = [{"method": "POST" if index % 2 else "GET",
                     "path": f"/t{thread}/{index}" + ("?fieldValidation=Strict" if index % 2
                                                      else ""),
                     "length": len(json.dumps({"n": index})) if index % 2 else 0}
                    for thread in range(case.threads) for index in range(case.requests)]
        assert sorted(answers, key=json.dumps) == sorted(expected, key=json.dumps)
        assert server.connections == case.connections
