"""Decoding the server's JSON: json, with the cyclic collector paused."""

from __future__ import annotations

import gc

import pytest

from gpudra.cluster import ClusterRequestError
from gpudra.cluster.jsonparse import parse_json


def test_big_integers_stay_exact() -> None:
    # Why not orjson: it decodes this as 1.2345678901234568e+29.
    assert parse_json(b'{"n": 123456789012345678901234567890}', "/x") == {
        "n": 123456789012345678901234567890}


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_is_restored(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert parse_json(b'{"items": []}', "/x") == {"items": []}
        assert gc.isenabled() is enabled
        with pytest.raises(ClusterRequestError):
            parse_json(b"<html>502 Bad Gateway</html>", "/x")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_not_json_is_a_clean_error() -> None:
    with pytest.raises(ClusterRequestError) as raised:
        parse_json(b"<html>\n<h1>502 Bad Gateway</h1>\n</html>", "/api/v1/pods")
    assert str(raised.value) == ("the answer to GET /api/v1/pods is not JSON: "
                                 "'<html> <h1>502 Bad Gateway</h1> </html>'")
    assert raised.value.reason == "InvalidResponse"
