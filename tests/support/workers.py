"""Which tests share a pytest-xdist worker, when the suite runs on several (pyproject.toml's
addopts: `-n 2 --dist loadgroup`, the README's `python -m pytest` and .ci/run's; docs/ci.md).

A worker is a process of its own: a session or module fixture is set up once per worker that
runs a test needing it. So the tests that share something expensive go to one worker as one
group, and the groups are handed out longest first (the journey's clusters and the control
planes are most of the suite's wall time, and a long group handed out last would finish alone):

- every test of tests/journey, one after the other on one worker: each module starts a cluster
  of its own (a control plane, kwok, the GPU stack's polling), and two side by side would make
  each wait for the other's CPU rather than for its controllers;
- every test of tests/controlplane: the session's 1.37 and 1.33 control planes, started once;
- every other module: its module fixtures (fake API servers, recorded clusters) set up once.

The group is read from the test's file, by a scheduler of xdist's own kind (`scheduler`,
returned by tests/conftest.py's pytest_xdist_make_scheduler). xdist's `xdist_group` mark is
not used: pytest-xdist 3.8 puts the group into the node id by setting `item._nodeid`, which
pytest 9.2 no longer reads, so under pytest 9.2 the mark groups nothing. A worker hands its
collection over reordered, the whole directories first (`reorder`; `--no-loadscope-reorder`
keeps that order: xdist would otherwise sort the groups by their number of tests); tests
inside a group keep their collection order, and a serial run is left exactly as collected.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
# Directories run as one group each, longest first (tests/journey ~40% of the suite's wall
# time, tests/controlplane ~8%: pytest --durations).
WHOLE_DIRECTORIES = ("journey", "controlplane")


def group_of(path: Path) -> str:
    """The group of a test in file `path`."""
    relative = path.resolve().relative_to(TESTS)
    if relative.parts[0] in WHOLE_DIRECTORIES:
        return relative.parts[0]
    return relative.as_posix()


def group_of_node(nodeid: str) -> str:
    """The group of a test by its node id (`tests/dir/test_x.py::test_y[case]`, relative to
    the checkout, where pyproject.toml puts pytest's rootdir)."""
    return group_of(TESTS.parent / nodeid.split("::", 1)[0])


def reorder(items: Sequence[Any]) -> list[Any]:
    """`items` with the whole directories' groups first (in WHOLE_DIRECTORIES' order) and
    the rest in collection order; each group's tests keep their order."""
    rank = {name: index for index, name in enumerate(WHOLE_DIRECTORIES)}
    ranks = [rank.get(group_of(Path(str(item.path))), len(rank)) for item in items]
    return [item for _, item in sorted(zip(ranks, items), key=lambda pair: pair[0])]


def scheduler(config: Any, log: Any) -> Any:
    """xdist's scope scheduler, with group_of_node as the scope (imported here: xdist is a
    test extra, and a run without `-n` never asks for this)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of_node(nodeid)

    return ByGroup(config, log)


# What a worker's environment says of the terminal. A worker process has COLUMNS=80 and
# LINES=24 that the run it serves did not have (seen with pytest-xdist 3.8 under pytest 9.2; a
# one-test run shows it, so no test sets them), and gpudra wraps its tables at $COLUMNS: tests
# that read a long line whole failed on a worker only (tests/test_reading.py, test_baseline.py).
# The controller hands its own values over; the worker restores them.
TERMINAL_VARIABLES = ("COLUMNS", "LINES")


def terminal_environment(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The controller's terminal variables (None: unset), for the workers."""
    return {name: environ.get(name) for name in TERMINAL_VARIABLES}


def restore_terminal_environment(environ: MutableMapping[str, str],
                                 wanted: Mapping[str, str | None]) -> None:
    """Make a worker's terminal variables the controller's."""
    for name in TERMINAL_VARIABLES:
        value = wanted.get(name)
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
