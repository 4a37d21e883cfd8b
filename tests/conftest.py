"""Fixtures shared by every test directory: the Kubernetes oracle (tests/oracle), and a cache
directory of each test's own (convert's journals never go to the user's ~/.cache); and, once
collected, the control planes and kwok the tests need (tests/support/toolchain.py), and under
pytest-xdist the groups of tests that share a worker (tests/support/workers.py)."""

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
    # On a pytest-xdist worker (.ci/run: -n 2), the tests that share an expensive fixture go
    # to one worker, longest groups first (tests/support/workers.py).
    if hasattr(config, "workerinput"):
        items[:] = workers.assign(items)


@pytest.fixture(autouse=True)
def _own_cache_directory(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("GPUDRA_CACHE_DIR", str(cache))
    return cache
