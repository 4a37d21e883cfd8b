"""GET with timeouts and bounded retries, on the official client's connection pool.

The pool is `ApiClient(configuration).rest_client.pool_manager`: urllib3 set up by the client
from the kubeconfig (CA, client certificate, tls-server-name, proxy). gpudra sends its GETs
there itself, which is where the client's own `_preload_content=False` path ends too (its
RESTClientObject.request), for three reasons: raw bytes and no model classes; the status and
Retry-After of every answer without parsing exceptions; and one retry loop under gpudra's
control. urllib3's retries are turned off per request (`retries=False`): left on, its default
Retry would try 429/503 answers that carry Retry-After and connection errors up to 3 more
times inside each of gpudra's tries.

Reads are GETs. The one write is `send()`: a PUT or POST of the report ConfigMap
(gpudra.cluster.publish), sent once, never retried.
"""

from __future__ import annotations

import errno
import json
import random
import re
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3
from urllib3 import exceptions as u3

from gpudra.cluster.errors import (
    ClusterRequestError,
    ClusterTimeoutError,
    ClusterUnreachableError,
    CredentialsRejectedError,
)
from gpudra.cluster.options import RetryPolicy, retry_after_seconds
from gpudra.cluster.records import ClusterTarget
from http import HTTPStatus

_NAME_RESOLUTION = getattr(u3, "NameResolutionError", ())  # urllib3 >= 2; 1.26 uses gaierror
_SSL_NOISE = re.compile(r"^\[SSL: [A-Z_]+\] |\s*\(_ssl\.c:\d+\)$")
_CONNECT_PROBLEMS = {errno.ECONNREFUSED: "connection refused",
                     errno.ENETUNREACH: "network is unreachable",
                     errno.EHOSTUNREACH: "no route to host",
                     errno.ECONNRESET: "connection reset"}


# The most one answer may hold once decompressed. A page of 500 pods is ~2 MB of JSON, and
# even 500 objects of 256 KiB (PrometheusRules, Nodes with many images) are 128 MiB; past
# that it is a gzip bomb or a server that ignores `limit`, and reading on would only exhaust
# memory.
MAX_ANSWER_BYTES = 256 << 20
# The most of a server's error message shown: kube-apiserver's messages are one sentence (the
# longest, 403s naming a resource, group and namespace, stay under 300 characters).
MAX_MESSAGE_CHARS = 1000
_READ_SIZE = 1 << 16


class Transport:
    """GETs against one API server. Raises ClusterError subclasses only."""

    def __init__(self, pool: urllib3.PoolManager, target: ClusterTarget,
                 auth_headers: Callable[[], Mapping[str, str]], *, connect_timeout: float,
                 read_timeout: float, policy: RetryPolicy, user_agent: str,
                 answer_timeout: float | None = None, verify_tls: bool = True,
                 sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = lambda: 0.5 + random.random() / 2) -> None:
        self._pool = pool
        self.target = target
        self._auth_headers = auth_headers
        # `read` bounds each wait for bytes: the answer's start, and every read of the body.
        self._timeout = urllib3.Timeout(connect=connect_timeout, read=read_timeout)
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        # The whole answer, not each read: a body trickled a byte at a time passes every
        # read timeout.
        self._answer_timeout = answer_timeout if answer_timeout is not None else read_timeout
        self.policy = policy
        # gzip as kubectl asks for it: the API server compresses answers above 128 KiB (a
        # 500-pod page is ~2 MB of JSON, ~10x less compressed); urllib3 decodes it.
        self._headers = {"Accept": "application/json", "Accept-Encoding": "gzip",
                         "User-Agent": user_agent}
        self._sleep = sleep
        self._jitter = jitter
        # insecure-skip-tls-verify is the kubeconfig's explicit choice: kubectl does not warn
        # about it on every run, and urllib3's InsecureRequestWarning would.
        self._quiet = not verify_tls

    def get(self, path: str, query: Mapping[str, str] | None = None) -> bytes:
        """The body of a 2xx answer to GET `path`; retried on 429/5xx and resets."""
        url = self.target.server + path + (f"?{urlencode(query)}" if query else "")
        policy = self.policy
        for attempt in range(1, policy.attempts + 1):
            headers = {**self._headers, **self._auth_headers()}
            deadline = time.monotonic() + self._answer_timeout
            try:
                response = self._send(url, headers)
                status = response.status
                body = self._body(response, path, deadline)
            except u3.ProtocolError as error:  # reset, or closed without an answer
                if attempt < policy.attempts:
                    self._sleep(policy.delay(attempt, None, self._jitter()))
                    continue
                raise self._unreachable(_reset_problem(error)) from None
            except u3.ReadTimeoutError:
                raise ClusterTimeoutError(
                    f"the cluster at {self.target.shown_server} did not answer GET {path} within "
                    f"{self._read_timeout:g} s ({_who(self.target)}); a slow or overloaded "
                    f"API server, or raise --request-timeout",
                    server=self.target.shown_server, problem="timeout") from None
            except u3.HTTPError as error:
                raise self._unreachable(_connection_problem(error, self._connect_timeout)) \
                    from None
            if 200 <= status < 300:
                return body
            if status in policy.statuses and attempt < policy.attempts:
                retry_after = retry_after_seconds(response.headers)
                self._sleep(policy.delay(attempt, retry_after, self._jitter()))
                continue
            raise self._status_error(path, status, body, attempt)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def send(self, method: str, path: str, body: bytes) -> bytes:
        """The body of a 2xx answer to `method` (PUT, POST) `path` with a JSON `body`. Sent
        once: the caller decides what a failure means."""
        url = self.target.server + path
        headers = {**self._headers, **self._auth_headers(), "Content-Type": "application/json"}
        deadline = time.monotonic() + self._answer_timeout
        try:
            response = self._send(url, headers, method, body)
            status = response.status
            answer = self._body(response, path, deadline)
        except u3.ProtocolError as error:
            raise self._unreachable(_reset_problem(error)) from None
        except u3.ReadTimeoutError:
            raise ClusterTimeoutError(
                f"the cluster at {self.target.shown_server} did not answer {method} {path} "
                f"within {self._read_timeout:g} s ({_who(self.target)})",
                server=self.target.shown_server, problem="timeout") from None
        except u3.HTTPError as error:
            raise self._unreachable(_connection_problem(error, self._connect_timeout)) from None
        if 200 <= status < 300:
            return answer
        raise self._status_error(path, status, answer, 1, method)

    def _send(self, url: str, headers: Mapping[str, str], method: str = "GET",
              body: bytes | None = None) -> Any:
        if not self._quiet:
            return self._pool.request(method, url, headers=headers, body=body, retries=False,
                                      timeout=self._timeout, preload_content=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", u3.InsecureRequestWarning)
            return self._pool.request(method, url, headers=headers, body=body, retries=False,
                                      timeout=self._timeout, preload_content=False)

    def _body(self, response: Any, path: str, deadline: float) -> bytes:
        """The decoded body, read piece by piece against the answer's deadline and
        MAX_ANSWER_BYTES (a gzip bomb stops at the cap, not at the end of its expansion)."""
        # read1 returns what one read of the socket gives; read(n) would wait for n bytes.
        read = getattr(response, "read1", None) or response.read
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise ClusterTimeoutError(
                        f"the cluster at {self.target.shown_server} did not finish answering GET "
                        f"{path} within {self._answer_timeout:g} s ({_who(self.target)}); a "
                        "slow or misbehaving API server, or raise --request-timeout",
                        server=self.target.shown_server, problem="timeout")
                piece = read(_READ_SIZE)
                if not piece:
                    break
                size += len(piece)
                if size > MAX_ANSWER_BYTES:
                    raise ClusterRequestError(
                        f"the cluster at {self.target.shown_server} answered GET {path} with more "
                        f"than {MAX_ANSWER_BYTES >> 20} MiB (decompressed); gpudra stopped "
                        "reading", path=path, status=200, reason="ResponseTooLarge",
                        server_message=f"answer larger than {MAX_ANSWER_BYTES >> 20} MiB")
                parts.append(piece)
        except BaseException:
            response.close()  # a half-read connection must not go back to the pool
            raise
        response.release_conn()
        return b"".join(parts)

    def _status_error(self, path: str, status: int, body: bytes, attempts: int,
                      method: str = "GET") -> Exception:
        reason, message = _status_text(status, body)
        if status == 401:
            return CredentialsRejectedError(_rejected_message(self.target, reason, message))
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return ClusterRequestError(
            f"the cluster at {self.target.shown_server} answered {method} {path} with {status} "
            f"{reason}{tries}: {message}", path=path, status=status, reason=reason,
            server_message=message, attempts=attempts)

    def _unreachable(self, problem: str) -> ClusterUnreachableError:
        shown = self.target.shown_server
        problem = problem.replace(self.target.server, shown)
        return ClusterUnreachableError(
            f"cannot reach the cluster at {shown} ({_who(self.target)}): {problem}",
            server=shown, problem=problem)


def _who(target: ClusterTarget) -> str:
    return "in-cluster config" if target.in_cluster else f'context "{target.context}"'


def _rejected_message(target: ClusterTarget, reason: str, message: str) -> str:
    detail = "" if message in ("", reason, "Unauthorized") else f": {message}"
    if target.in_cluster:
        return (f"the cluster rejected the service account token (401 {reason}){detail}: the "
                f"token may have expired or the service account was deleted")
    return (f'the cluster rejected the credentials of context "{target.context}" (401 '
            f"{reason}){detail}: the token may have expired; log in again or check the user "
            f"of that context")


def _status_text(status: int, body: bytes) -> tuple[str, str]:
    """(reason, message) from a Status body; the HTTP reason phrase when there is none."""

    try:
        document = json.loads(body) if body else {}
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    try:
        phrase = HTTPStatus(status).phrase.replace(" ", "")
    except ValueError:
        phrase = "Unknown"
    reason = short(str(document.get("reason") or phrase), 100)
    message = str(document.get("message") or "")[:MAX_MESSAGE_CHARS + 1].strip()
    if not message:
        message = body[:200].decode("utf-8", "replace").strip() or reason
    return reason, short(" ".join(message.split()), MAX_MESSAGE_CHARS)


def short(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with "..." when longer."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _reset_problem(error: u3.ProtocolError) -> str:
    cause = error.args[1] if len(error.args) > 1 else None
    if isinstance(cause, ConnectionResetError):
        return "the connection was reset (connection reset by peer)"
    return "the server closed the connection without an answer"


def _connection_problem(error: u3.HTTPError, connect_timeout: float) -> str:
    if _NAME_RESOLUTION and isinstance(error, _NAME_RESOLUTION):
        return f"cannot resolve the host name {_host(error)!r}"
    if isinstance(error, u3.NewConnectionError):
        cause = error.__cause__ or error.__context__
        if isinstance(cause, OSError):
            if cause.errno in _CONNECT_PROBLEMS:
                return _CONNECT_PROBLEMS[cause.errno]
            if cause.__class__.__name__ == "gaierror":
                return f"cannot resolve the host name {_host(error)!r}"
            return (cause.strerror or str(cause)).lower()
        return str(error)
    if isinstance(error, u3.ConnectTimeoutError):
        return f"no connection within {connect_timeout:g} s"
    if isinstance(error, u3.SSLError):
        return f"TLS error: {_ssl_text(error)}"
    if isinstance(error, u3.ProxyError):
        return f"proxy error: {getattr(error, 'original_error', None) or error}"
    return f"{type(error).__name__}: {error}"


def _ssl_text(error: u3.SSLError) -> str:
    cause: Any = error.args[0] if error.args else error
    text = _SSL_NOISE.sub("", str(cause)).strip()
    if "WRONG_VERSION_NUMBER" in str(cause) or text == "wrong version number":
        return "wrong version number (does the server speak plain HTTP? try http:// in the URL)"
    return text


def _host(error: Exception) -> str:
    for candidate in (error, getattr(error, "conn", None), *error.args):
        host = getattr(candidate, "host", None)
        if isinstance(host, str) and host:
            return host
    match = re.search(r"Failed to resolve '([^']+)'", str(error))
    return match.group(1) if match else "?"
