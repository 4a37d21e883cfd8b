"""Fixtures of the journey: the small tests' shared cluster (tests/journey/cluster.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.journey.cluster import Cluster, journey_cluster_at


@pytest.fixture(scope="session")
def journey_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster the journey's small tests share (each pins its pods to its own nodes)."""
    with journey_cluster_at(tmp_path_factory.mktemp("journey")) as cluster:
        yield cluster
