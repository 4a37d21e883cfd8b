"""JSON encoding for the fake API server: orjson when it is importable, else the stdlib.

Objects are encoded once when the state is loaded; pages are built by joining those bytes, so
the encoder's speed matters only at start-up.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # the fake must work with the standard library alone
    orjson = None


def dumps(value: Any) -> bytes:
    """Compact JSON bytes (no spaces), like the real API server's encoder."""
    if orjson is not None:
        return orjson.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    if orjson is not None:
        return orjson.loads(data)
    return json.loads(data)


ENCODER = "orjson" if orjson is not None else "json"
