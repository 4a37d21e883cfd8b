"""The CLI runs each command with the collector paced for bulk reads and restores the
process's thresholds afterwards, whatever way the command ends (gpudra/cli/collector.py)."""

from __future__ import annotations

import gc
import sys

import pytest

import gpudra.cli
from gpudra.cli.collector import RUN_THRESHOLD, paced_collector


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


@pytest.mark.parametrize("ending", [None, SystemExit(1), KeyboardInterrupt()])
def test_main_runs_the_command_with_the_paced_collector(monkeypatch, thresholds, ending):
    seen = []

    def app(args, prog_name):
        seen.append(gc.get_threshold())
        if ending is not None:
            raise ending

    monkeypatch.setattr(gpudra.cli, "app", app)
    monkeypatch.setattr(sys, "argv", ["gpudra", "audit", "."])
    if ending is None:
        gpudra.cli.main()
    else:
        with pytest.raises(SystemExit):
            gpudra.cli.main()
    assert seen == [(RUN_THRESHOLD, *thresholds[1:])]
    assert gc.get_threshold() == thresholds


@pytest.mark.parametrize("previous, wanted, inside", [
    ((700, 10, 10), 100_000, (100_000, 10, 10)),
    ((700, 5, 20), 5_000, (5_000, 5, 20)),
    ((200_000, 10, 10), 100_000, (200_000, 10, 10)),  # never lowers a caller's threshold
    ((0, 10, 10), 100_000, (0, 10, 10)),  # 0: the caller turned automatic collection off
])
def test_paced_collector_raises_only_the_first_generation(thresholds, previous, wanted, inside):
    gc.set_threshold(*previous)
    with paced_collector(wanted):
        assert gc.get_threshold() == inside
    assert gc.get_threshold() == previous
