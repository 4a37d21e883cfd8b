"""Which tests share a pytest-xdist worker, when the suite runs on several (.ci/run: `-n 2
--dist loadgroup`; docs/ci.md).

A worker is a process of its own: a session or module fixture is set up once per worker that
runs a test needing it. So the tests that share something expensive go to one worker as one
group, and the groups are handed out longest first (the journey's clusters and the control
planes are most of the suite's wall time, and a long group handed out last would finish alone):

- every test of tests/journey, one after the other on one worker: each module starts a cluster
  of its own (a control plane, kwok, the GPU stack's polling), and two side by side would make
  each wait for the other's CPU rather than for its controllers;
- every test of tests/controlplane: the session's 1.37 and 1.33 control planes, started once;
- every other module: its module fixtures (fake API servers, recorded clusters) set up once.

Tests inside a group keep their collection order, so a module's tests run as they do serially.
Only an xdist worker's collection is marked and reordered (`--no-loadscope-reorder` keeps the
order: xdist would otherwise sort the groups by their number of tests); a serial run is left
exactly as collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
# Directories run as one group each, longest first (tests/journey ~40% of the suite's wall
# time, tests/controlplane ~8%: pytest --durations).
WHOLE_DIRECTORIES = ("journey", "controlplane")


def group_of(path: Path) -> str:
    """The xdist group of a test in file `path`."""
    relative = path.resolve().relative_to(TESTS)
    if relative.parts[0] in WHOLE_DIRECTORIES:
        return relative.parts[0]
    return relative.as_posix()


def assign(items: Sequence[Any]) -> list[Any]:
    """`items` with an xdist_group mark each, the whole directories' groups first (in
    WHOLE_DIRECTORIES' order) and the rest in collection order."""
    rank = {name: index for index, name in enumerate(WHOLE_DIRECTORIES)}
    groups = []
    for item in items:
        group = group_of(Path(str(item.path)))
        item.add_marker(pytest.mark.xdist_group(group))
        groups.append(rank.get(group, len(rank)))
    return [item for _, item in sorted(zip(groups, items), key=lambda pair: pair[0])]
