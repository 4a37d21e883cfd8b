"""Decoded JSON data that tests plant values in."""

from __future__ import annotations

import json
from typing import Any


def replaced(data: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A deep copy of `data` with `new` at `path` (keys and list indexes); `new` itself for an
    empty path."""
    if not path:
        return new
    copy = json.loads(json.dumps(data))
    place = copy
    for part in path[:-1]:
        place = place[part]
    place[path[-1]] = new
    return copy
