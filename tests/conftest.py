"""Fixtures shared by every test directory: the Kubernetes oracle (tests/oracle)."""

from tests.oracle.fixtures import oracle, oracle_132, oracles  # noqa: F401
