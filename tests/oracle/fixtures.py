"""Session fixtures for the Go oracle (loaded by tests/conftest.py).

``oracle`` is Kubernetes 1.37 (k8s.io v0.37.2), ``oracle_132`` 1.32 (v0.32.13); each is built
on first use in a run (cached across runs, see :mod:`tests.oracle.client`) and kept running
for the session. ``oracles`` picks the one for a gpudra target release: 1.32 for 1.32, 1.37
for 1.33-1.37 (their resource.k8s.io types are subsets of 1.37's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from gpudra.dra.versions import TargetVersion
from tests.oracle.client import GoMissing, Oracle, build, go_required


def _start(release: str) -> Oracle:
    try:
        binary = build(release)
    except GoMissing as exc:
        if go_required():
            pytest.fail(f"{exc}; CI requires it (CI or GPUDRA_REQUIRE_GO is set)", pytrace=False)
        pytest.skip(f"{exc}; install Go to run the Kubernetes oracle tests")
    return Oracle(binary)


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    running = _start("1.37")
    yield running
    running.close()


@pytest.fixture(scope="session")
def oracle_132() -> Iterator[Oracle]:
    running = _start("1.32")
    yield running
    running.close()


@pytest.fixture(scope="session")
def oracles(request: pytest.FixtureRequest) -> Callable[[TargetVersion], Oracle]:
    """The oracle for a target release (1.32's is started only when asked for)."""

    def pick(target: TargetVersion) -> Oracle:
        name = "oracle_132" if target.minor == 32 else "oracle"
        return request.getfixturevalue(name)

    return pick
