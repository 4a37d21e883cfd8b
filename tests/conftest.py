"""Fixtures shared by every test directory: the Kubernetes oracle (tests/oracle), and a cache
directory of each test's own (convert's journals never go to the user's ~/.cache); and, once
collected, the control planes and kwok the tests need (tests/support/toolchain.py), and under
pytest-xdist the groups of tests that share a worker (tests/support/workers.py)."""

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.fixtures import oracle, oracle_132, oracles  # noqa: F401
from tests.support import handover, toolchain, workers


@pytest.hookimpl(tryfirst=True)  # on a worker: before xdist tells the controller it is done
def pytest_collection_finish(session: pytest.Session) -> None:
    # The control planes and kwok the collected tests need, built (or found cached) before the
    # first test, with progress on the terminal rather than inside a silent fixture. Under
    # pytest-xdist a worker only says what it needs, and the controller builds it
    # (tests/support/handover.py).
    if hasattr(session.config, "workerinput"):
        handover.record(session.config.workerinput, toolchain.needed(session.items))
        return
    collect_only = session.config.option.collectonly
    missing = toolchain.prepare(session.items, toolchain.terminal(session.config),
                                make=not collect_only)
    if not collect_only:
        toolchain.stop_if_required(missing)


@pytest.hookimpl(optionalhook=True)  # an xdist hook, on the controller, before any test is sent
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    handover.prepare_once(node.config, node.workerinput["workerid"],
                          toolchain.terminal(node.config))


def pytest_unconfigure(config: pytest.Config) -> None:
    handover.remove(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # On a pytest-xdist worker (addopts: -n 2), the groups that take longest go first
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
    node.workerinput[handover.WORKERINPUT_KEY] = str(handover.directory(node.config))  # type: ignore[attr-defined]


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
