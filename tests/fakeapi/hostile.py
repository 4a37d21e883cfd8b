"""A hostile API server: the fake, except that chosen paths misbehave (tests only).

    with HostileCluster(state, {"/api/v1/pods": endless_continue()}) as cluster:
        ...   # gpudra must give up with a one-line error, in bounded time and memory

Each behaviour takes the request's query and headers and returns a Response (or a
TrickledResponse, which the server sends slowly). Paths without a behaviour are answered by
the ordinary fake (FakeApi), so discovery and /version work as usual.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .api import JSON, FakeApi, RequestRecord, Response
from .server import FakeCluster
from .state import ClusterState

Behaviour = Callable[[Mapping[str, str], Mapping[str, str]], Response]


@dataclass(frozen=True)
class TrickledResponse(Response):
    """A response whose body is sent `piece` bytes at a time, `pause` seconds apart."""

    piece: int = 1
    pause: float = 0.05

    def stream(self) -> Iterator[tuple[bytes, float]]:
        for start in range(0, len(self.body), self.piece):
            yield self.body[start:start + self.piece], self.pause


class HostileApi(FakeApi):
    def __init__(self, state: ClusterState, behaviours: Mapping[str, Behaviour]) -> None:
        super().__init__(state)
        self.behaviours = dict(behaviours)

    def respond(self, method: str, target: str, headers: Mapping[str, str],
                body: bytes = b"") -> Response:
        split = urlsplit(target)
        behaviour = self.behaviours.get(split.path.rstrip("/") or "/")
        if behaviour is None:
            return super().respond(method, target, headers, body)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        response = behaviour(query, headers)
        with self._lock:  # logged as the fake logs its own answers
            self._log.append(RequestRecord(method, split.path, query, {}, response.status))
        return response


class HostileCluster(FakeCluster):
    def __init__(self, state: Any, behaviours: Mapping[str, Behaviour], **kwargs: Any) -> None:
        super().__init__(state, **kwargs)
        self.api = HostileApi(self.state, behaviours)


def _list(items: list[Any], token: str = "", kind: str = "PodList") -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": "1"}
    if token:
        metadata["continue"] = token
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": metadata,
                       "items": items}).encode()


def pod(index: int) -> dict[str, Any]:
    return {"metadata": {"name": f"p{index}", "namespace": "ml", "uid": f"uid-{index}"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


def endless_continue(repeat: bool = False) -> Behaviour:
    """Every page is empty and has a continue token: a fresh one each time, or always the
    same one."""
    counter = itertools.count()

    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        token = "same" if repeat else f"next-{next(counter)}"
        return Response(200, _list([pod(next(counter))], token))
    return answer


def trickle(pause: float = 0.05) -> Behaviour:
    """A valid list, sent one byte at a time: each read gets a byte well within any read
    timeout, so only a deadline on the whole answer ends it."""
    body = _list([pod(i) for i in range(50)])

    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        return TrickledResponse(200, body, pause=pause)
    return answer


def gzip_bomb(decompressed: int) -> Behaviour:
    """`decompressed` bytes of JSON whitespace, gzipped (~1,000x smaller), whatever the
    client asked for."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header
    chunk = b" " * (1 << 20)
    parts = [compressor.compress(b"{")]
    for _ in range(decompressed // len(chunk)):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.compress(b'"items": []}') + compressor.flush())
    body = b"".join(parts)

    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        return Response(200, body, JSON, (("Content-Encoding", "gzip"),))
    return answer


def oversized_page(items: int) -> Behaviour:
    """One page of `items` pods, whatever `limit` asked for."""
    body = _list([pod(i) for i in range(items)])

    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        return Response(200, body)
    return answer


def huge_status(length: int, status: int = 500) -> Behaviour:
    """A Status error whose message is `length` characters long."""
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "reason": "InternalError", "code": status,
                       "message": "x" * length}).encode()

    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        return Response(status, body)
    return answer


def raw(body: bytes, status: int = 200) -> Behaviour:
    """This body, as it is (a top-level array, items that are not objects, ...)."""
    def answer(query: Mapping[str, str], headers: Mapping[str, str]) -> Response:
        return Response(status, body)
    return answer
