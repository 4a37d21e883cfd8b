"""The bridge strategy's recommendation (issue 33, item 3): said when the target is 1.37 or
later and at least four in five of the GPU workloads still on the device plugin ask for whole
GPUs; never below 1.37, never for a fleet of mostly MIG or shared GPUs. Judged on the advice
function, then in audit's and cutover's summaries, each output format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.strategy_advice import COMMAND, FleetMix, bridge_advice
from gpudra.dra.versions import TargetVersion
from tests.verify import fleet as f

POOL = f.POOL_LABEL


@pytest.mark.parametrize(("minor", "whole", "partial", "said"), [
    (37, 4, 1, True),    # exactly four in five: mostly whole
    (37, 3, 1, False),   # three in four: below the threshold
    (37, 79, 21, False),
    (37, 80, 20, True),
    (37, 1, 0, True),
    (37, 0, 0, False),   # nothing left on the device plugin
    (37, 0, 3, False),
    (36, 5, 0, False),   # the bridge is beta before 1.37: not recommended
    (34, 5, 0, False),
    (32, 5, 0, False),
])
def test_the_threshold_and_the_release(minor: int, whole: int, partial: int, said: bool) -> None:
    advice = bridge_advice(TargetVersion(minor), FleetMix(whole, partial))
    assert (advice is not None) == said
    if advice is not None:
        assert COMMAND in advice
        assert f"{whole} of the {whole + partial} GPU workloads" in advice
        assert ("MIG or shared" in advice) == bool(partial)


def _write(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return path


def _mig_spec() -> dict[str, Any]:
    spec = f.pod_spec()
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    return spec


def whole_fleet() -> list[dict[str, Any]]:
    return [f.deployment("ml", f"web-{i}", f.pod_spec(gpus=1)) for i in range(4)] + \
        [f.deployment("ml", "mig", _mig_spec())]


def mig_fleet() -> list[dict[str, Any]]:
    return [f.deployment("ml", "web", f.pod_spec(gpus=1))] + \
        [f.deployment("ml", f"mig-{i}", _mig_spec()) for i in range(2)]


def _audit(path: Path, target: str, fmt: str) -> str:
    run = subprocess.run([sys.executable, "-m", "gpudra", "audit", str(path), "--target-version",
                          target, "-o", fmt], capture_output=True, text=True, timeout=120,
                         env={"NO_COLOR": "1", "COLUMNS": "400", "PATH": "/usr/bin:/bin"})
    assert run.returncode in (0, 1), run.stderr
    return run.stdout


@pytest.mark.parametrize(("fleet", "target", "said"), [
    (whole_fleet, "1.37", True), (whole_fleet, "1.36", False), (mig_fleet, "1.37", False)])
def test_audit_summaries_say_it(tmp_path: Path, fleet: Any, target: str, said: bool) -> None:
    path = _write(tmp_path, fleet())
    summary = json.loads(_audit(path, target, "json"))["summary"]
    assert (summary["recommendation"] is not None) == said
    for fmt in ("table", "markdown"):
        assert (COMMAND in _audit(path, target, fmt)) == said, fmt
    if said:
        assert summary["recommendation"].startswith("recommended: the bridge strategy")
        assert "4 of the 5 GPU workloads" in summary["recommendation"]


def _nodes(time_sliced: bool = False) -> list[dict[str, Any]]:
    shared = {"nvidia.com/gpu.replicas": "4"} if time_sliced else {}
    return [f.node("a-1", 8, pool="a", labels=shared), f.node("b-1", 8, pool="b")]


@pytest.mark.parametrize(("docs", "target", "said"), [
    (lambda: _nodes() + whole_fleet(), "1.37", True),
    (lambda: _nodes() + whole_fleet(), "1.36", False),
    (lambda: _nodes() + mig_fleet(), "1.37", False),
    # time-slicing keeps the name nvidia.com/gpu; cutover reads the node's GFD replicas: the
    # whole-GPU workloads that may run on the time-sliced pool count as shared
    (lambda: _nodes(time_sliced=True) + whole_fleet(), "1.37", False),
])
def test_cutover_summaries_say_it(tmp_path: Path, docs: Any, target: str, said: bool) -> None:
    path = _write(tmp_path, docs())
    outputs = {}
    for fmt in ("json", "table", "markdown"):
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(path),
                              "--target-version", target, "-o", fmt], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode in (0, 1), run.stderr
        outputs[fmt] = run.stdout
    recommendation = json.loads(outputs["json"])["recommendation"]
    assert (recommendation is not None) == said
    assert (COMMAND in outputs["table"]) == said
    assert ("**Strategy:**" in outputs["markdown"]) == said


def test_the_command_it_names_exists() -> None:
    """The recommendation names a command and option this gpudra has (`--help` lists it)."""
    words = COMMAND.split()
    assert words[0] == "gpudra"
    options = [w for w in words[1:] if w.startswith("--")]
    command = [w for w in words[1:] if not w.startswith("-")][:1]
    run = subprocess.run([sys.executable, "-m", "gpudra", *command, "--help"],
                         capture_output=True, text=True, timeout=60,
                         env={"NO_COLOR": "1", "COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    for option in options:
        assert option in run.stdout, option
