"""The cyclic garbage collector's pace for one gpudra run: a process-wide setting, so the CLI,
which owns the process, sets it, and restores it when the run ends.

A live command keeps what it reads (indexes of 100,000 pods and their typed decodings) while it
decodes page after page of JSON. With CPython's default first-generation threshold (700 net
new containers) the collector runs hundreds of times and its older generations walk every
long-lived object again and again: about a fifth of an audit's or a verify's CPU on 40,000
pods, and more of verify's, whose heap is larger (benchmarks/README.md, bench_verify.py).
What gpudra builds holds no reference cycles to speak of (decoded JSON, frozen dataclasses,
msgspec Structs without gc), so reference counting frees it; a higher threshold only lets a
little cyclic garbage wait longer for its collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Net new containers between first-generation collections (CPython's default is 700). At
# 100,000 a 40,000-pod audit collects a handful of times instead of ~280 (measured).
RUN_THRESHOLD = 100_000


@contextmanager
def paced_collector(first_generation: int = RUN_THRESHOLD) -> Iterator[None]:
    """Run the body with the first-generation threshold raised to at least `first_generation`
    (the older generations' thresholds are kept), then restore the previous thresholds. A
    threshold of 0 (the caller turned automatic collection off) is left as it is."""
    previous = gc.get_threshold()
    if previous[0]:  # 0 is off, not low: raising it would turn collection back on
        gc.set_threshold(max(first_generation, previous[0]), *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
