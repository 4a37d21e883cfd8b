"""Fixtures shared by every test directory: the Kubernetes oracle (tests/oracle), and a cache
directory of each test's own (convert's journals never go to the user's ~/.cache); and, once
collected, the control planes and kwok the tests need (tests/support/toolchain.py), and under
pytest-xdist the groups of tests that share a worker (tests/support/workers.py)."""

import os
from pathlib import Path

import pytest

from tests.oracle.fixtures import oracle, oracle_132, oracles  # noqa: F401
from tests.support import toolchain, workers


def pytest_collection_finish(session: pytest.Session) -> None:
    # The control planes and kwok the collected tests need, built (or found cached) before the
    # first test, with progress on the terminal rather than inside a silent fixture.
    toolchain.prepare(session.items, toolchain.terminal(session.config),
                      make=not session.config.option.collectonly)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # On a pytest-xdist worker (.ci/run: -n 2), the groups that take longest go first
    # (tests/support/workers.py); a serial run keeps the collection's order.
    if hasattr(config, "workerinput"):
        items[:] = workers.reorder(items)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: xdist is a test extra
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    # --dist loadgroup: the tests that share a cluster or a module fixture share a worker
    # (tests/support/workers.py says which, and why not xdist's own xdist_group mark).
    if config.getvalue("dist") == "loadgroup":
        return workers.scheduler(config, log)
    return None


@pytest.hookimpl(optionalhook=True)  # an xdist hook, on the controller
def pytest_configure_node(node: object) -> None:
    node.workerinput["terminal"] = workers.terminal_environment(os.environ)  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    # A worker runs with the controller's COLUMNS and LINES, not the ones it was given
    # (tests/support/workers.py says where those come from).
    if hasattr(config, "workerinput"):
        workers.restore_terminal_environment(os.environ,
                                             config.workerinput.get("terminal", {}))


@pytest.fixture(autouse=True)
def _own_cache_directory(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("GPUDRA_CACHE_DIR", str(cache))
    return cache
