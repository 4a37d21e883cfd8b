"""Every wave of a cutover runbook ends with `gpudra verify --wave-of DIR/wave-N`; the line must
run as written, so every wave has its folder, the waves that only switch nodes (their pool has
GPU nodes but no workload moves with it) too. Checked for both strategies by running each
wave's verify line, as the runbook writes it, against the fleet's cluster."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.verify import fleet as f
from tests.verify.test_cutover import cutover, safe_fleet
from tests.verify.test_verify import verify


def idle_pool_fleet() -> list[dict[str, Any]]:
    """safe_fleet with a pool of GPU nodes no workload needs: its wave moves nothing."""
    return [*safe_fleet(), f.node("c-1", 8, pool="c")]


def verify_args(step: str) -> list[str]:
    """The arguments of a runbook's `gpudra verify` line, as the shell would split them."""
    words = shlex.split(step, comments=True)
    assert words[:2] == ["gpudra", "verify"], step
    return words[2:]


@pytest.mark.parametrize("strategy", ["rewrite", "bridge"])
def test_every_waves_verify_line_runs_as_written(tmp_path: Path, strategy: str) -> None:
    objects = idle_pool_fleet()
    out = tmp_path / "out"
    code, report, err = cutover(tmp_path, objects, "--output-dir", str(out),
                                "--strategy", strategy, "--target-version", "1.36")
    assert code == 0, err
    idle = [w for w in report["waves"] if w["nodes"] and not w["workloads"]]
    assert idle, "the fleet must have a wave that switches nodes and moves no workload"
    for wave in report["waves"]:
        args = verify_args(wave["steps"][-1])
        assert args == ["--wave-of", f"{out}/wave-{wave['wave']}"]
        # the cluster as before the wave: nothing it moves has moved yet
        code, _, err = verify(f.state(*objects), *args)
        expected = 1 if wave["workloads"] else 0
        assert code == expected, (wave["wave"], err)
