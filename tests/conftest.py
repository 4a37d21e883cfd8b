"""Fixtures shared by every test directory: the Kubernetes oracle (tests/oracle), and a cache
directory of each test's own (convert's journals never go to the user's ~/.cache)."""

from pathlib import Path

import pytest

from tests.oracle.fixtures import oracle, oracle_132, oracles  # noqa: F401


@pytest.fixture(autouse=True)
def _own_cache_directory(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("GPUDRA_CACHE_DIR", str(cache))
    return cache
