"""JSON from the API server: the one place that decodes it.

The cyclic garbage collector is paused while a page is decoded. A 500-pod page is ~2 MB of
JSON and ~300,000 new containers; every 700 allocations trigger a young-generation pass and
every tenth of those an older one, so with long-lived objects in the process (an audit's
indexes) the collector costs as much as the decoding itself (measured: 1.94 s -> 1.33 s for
20,000 pods next to 100,000 live objects; benchmarks/README.md). Decoded JSON holds no
reference cycles, so nothing is lost by pausing, and the previous state is restored.

The standard json module, not orjson: orjson saves another ~0.4 s per 20,000 pods, but it
silently turns integers beyond 64 bits into floats, and one decoder means one behaviour.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable
from typing import Any

from gpudra.cluster.errors import ClusterRequestError
from gpudra.printable import replace_lone_surrogates

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

_loads: Callable[[bytes], Any] = json.loads  # benchmarks/bench_cluster_list.py swaps it


def parse_json(body: bytes, path: str) -> Any:
    """A JSON document; a proxy's HTML error page becomes a clean error, not a traceback."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        data = _loads(body)
        # `"\ud800"`: U+FFFD, as Go's encoding/json decodes it (no output can encode the
        # surrogate itself).
        return replace_lone_surrogates(data) if _SURROGATE_ESCAPE.search(body) else data
    except ValueError:
        snippet = " ".join(body[:80].decode("utf-8", "replace").split())
        raise ClusterRequestError(f"the answer to GET {path} is not JSON: {snippet!r}",
                                  path=path, status=200, reason="InvalidResponse",
                                  server_message=f"not JSON: {snippet!r}") from None
    finally:
        if collecting:
            gc.enable()
