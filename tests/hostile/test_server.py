"""Items 8 and 9: a hostile API server (tests/fakeapi/hostile.py) gets a one-line error and
exit 3 in bounded time and memory, never a hang, a traceback or an internal error.

The caps are lowered per test (monkeypatch) so each case takes a second, not the minutes a
real-size cap would; the constants' real values are asserted where they are chosen.
"""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner, Result

from gpudra.cli import app
from gpudra.cluster import listing, transport
from tests.fakeapi.hostile import (
    HostileCluster,
    endless_continue,
    gzip_bomb,
    huge_status,
    oversized_page,
    raw,
    trickle,
)

PODS = "/api/v1/pods"
STATE = {"version": "1.34.2", "token": "t0ken"}


def audit(cluster: HostileCluster, *extra: str) -> Result:
    return CliRunner().invoke(app, ["audit", "--kubeconfig", str(cluster.kubeconfig), *extra],
                              env={"KUBECONFIG": "", "HOME": "/nonexistent", "NO_COLOR": "1"})


def one_line_error(result: Result, *needles: str) -> str:
    assert result.exit_code == 3, result.output + result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if "pods" in line]
    assert lines, result.stderr
    for needle in needles:
        assert any(needle in line for line in lines), result.stderr
    return lines[0]


@pytest.mark.parametrize("repeat", [False, True], ids=["new-tokens", "same-token"])
def test_endless_continue_tokens_end_in_an_error(monkeypatch: pytest.MonkeyPatch,
                                                 repeat: bool) -> None:
    monkeypatch.setattr(listing, "MAX_LIST_PAGES", 25)
    with HostileCluster(STATE, {PODS: endless_continue(repeat)}, tls=False) as cluster:
        started = time.monotonic()
        result = audit(cluster)
        pod_requests = [r for r in cluster.requests if r.path == PODS]
    one_line_error(result, "continue token" if repeat else "25 pages")
    assert len(pod_requests) == (2 if repeat else 25)
    assert time.monotonic() - started < 30


def test_a_trickled_body_is_abandoned_at_the_request_timeout() -> None:
    with HostileCluster(STATE, {PODS: trickle(pause=0.02)}, tls=False) as cluster:
        started = time.monotonic()
        result = audit(cluster, "--request-timeout", "1s")
        elapsed = time.monotonic() - started
    one_line_error(result, "did not finish answering", "within 1 s")
    assert elapsed < 15  # the body alone would take ~3 minutes at this pace


def test_a_gzip_bomb_stops_at_the_answer_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_ANSWER_BYTES", 4 << 20)
    with HostileCluster(STATE, {PODS: gzip_bomb(64 << 20)}, tls=False) as cluster:
        result = audit(cluster)
    one_line_error(result, "larger than 4 MiB")
    assert transport.MAX_ANSWER_BYTES == 4 << 20  # the real cap is checked below


def test_a_page_that_ignores_limit_is_refused() -> None:
    with HostileCluster(STATE, {PODS: oversized_page(1200)}, tls=False) as cluster:
        result = audit(cluster)
    one_line_error(result, "1,200 objects", "at most 500")


def test_a_huge_status_message_is_cut_short() -> None:
    with HostileCluster(STATE, {PODS: huge_status(5_000_000, status=403)}, tls=False) as cluster:
        started = time.monotonic()
        result = audit(cluster)
    line = one_line_error(result)
    assert line.endswith("...") or "..." in line
    assert len(result.stderr) < 5 * transport.MAX_MESSAGE_CHARS
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("body", [b"[1, 2, 3]", b'"text"', b"null",
                                  json.dumps({"kind": "PodList", "items": [1, "x", None]}).encode(),
                                  json.dumps({"kind": "PodList", "items": {"a": 1}}).encode(),
                                  json.dumps({"kind": "PodList", "metadata": [1],
                                              "items": []}).encode(),
                                  json.dumps({"kind": "PodList", "metadata": {"continue": 5},
                                              "items": []}).encode()],
                         ids=["array", "string", "null", "scalar-items", "items-mapping",
                              "metadata-list", "token-number"])
def test_malformed_lists_are_input_errors_naming_the_resource(body: bytes) -> None:
    with HostileCluster(STATE, {PODS: raw(body)}, tls=False) as cluster:
        result = audit(cluster)
    one_line_error(result, "malformed")


@pytest.mark.parametrize("path", ["/api", "/apis", "/apis/apps/v1", "/version"])
@pytest.mark.parametrize("body", [b"[1]", b'{"groups": [1, {"name": 5}], "versions": "v1", '
                                          b'"resources": [null, "x"]}'], ids=["array", "junk"])
def test_malformed_discovery_is_no_internal_error(path: str, body: bytes) -> None:
    with HostileCluster(STATE, {path: raw(body)}, tls=False) as cluster:
        result = audit(cluster)
    assert result.exit_code in (0, 1, 3), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_the_caps_are_what_the_docs_say() -> None:
    from gpudra.cluster.options import DEFAULT_ANSWER_TIMEOUT

    assert transport.MAX_ANSWER_BYTES == 256 << 20
    assert transport.MAX_MESSAGE_CHARS == 1000
    assert listing.MAX_LIST_PAGES == 2000
    assert DEFAULT_ANSWER_TIMEOUT == 300
