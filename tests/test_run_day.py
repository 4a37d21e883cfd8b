"""The day waivers and vouches are judged on is the CLI's: it reads the clock once and passes
`today` in the RunContext, and cutover's per-wave convert judges on the request's own day. The
core's clock is made to fail here, so a run that reads it itself fails."""

from __future__ import annotations

import datetime
import types
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.verify import fleet as f

EXAMPLES = str(Path(__file__).resolve().parents[1] / "examples")


class _NoClock(datetime.date):
    @classmethod
    def today(cls) -> _NoClock:
        raise AssertionError("the core read the clock: the CLI's day was not passed")


def _fleet(tmp_path: Path) -> str:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all([
        f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"),
        f.deployment("ml", "web", f.pod_spec(gpus=2, node_selector={f.POOL_LABEL: "a"}))]),
        encoding="utf-8")
    return str(source)


COMMANDS = {
    "audit": lambda tmp: ["audit", EXAMPLES, "-o", "json"],
    "convert": lambda tmp: ["convert", EXAMPLES, "--output-dir", str(tmp / "out")],
    "cutover --output-dir": lambda tmp: ["cutover", "--from", _fleet(tmp), "-o", "json",
                                         "--output-dir", str(tmp / "waves")],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_the_core_never_reads_the_clock(name: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run with the core's clock failing ends as the run with it working does."""
    (tmp_path / "clock").mkdir()
    (tmp_path / "no-clock").mkdir()
    with_clock = CliRunner().invoke(app, COMMANDS[name](tmp_path / "clock"))
    no_clock = types.SimpleNamespace(date=_NoClock)
    for module in ("gpudra.run_context", "gpudra.audit.engine"):
        monkeypatch.setattr(f"{module}.datetime", no_clock)
    without = CliRunner().invoke(app, COMMANDS[name](tmp_path / "no-clock"))
    assert not isinstance(without.exception, AssertionError), without.exception
    assert without.exit_code == with_clock.exit_code, without.output
    assert without.stdout.replace("no-clock", "clock") == with_clock.stdout
