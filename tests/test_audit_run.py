"""The audit command's use case (gpudra.audit.run), out of the CLI: the baseline recorded and
applied, the level the exit code is judged at, the files the run writes never read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudra.audit.run import AuditRunRequest, run_audit_command
from gpudra.results.baseline import load_baseline
from gpudra.results.model import ExitCode, FailOn
from gpudra.run_context import RunContext

EXAMPLES = str(Path(__file__).resolve().parent.parent / "examples")


def _findings(**fields: object) -> tuple[int, FailOn, ExitCode, int | None]:
    result = run_audit_command(AuditRunRequest(RunContext(), (EXAMPLES,), **fields))
    return len(result.report.findings), result.fail_on, result.exit_code(), result.recorded


def test_recording_a_baseline_records_every_finding_and_fails_on_nothing(tmp_path: Path
                                                                          ) -> None:
    found, level, code, _ = _findings()
    assert found > 0 and (level, code) == (FailOn.WARNING, ExitCode.FINDINGS)
    base = tmp_path / "base.json"
    assert _findings(write_baseline=base) == (found, FailOn.NEVER, ExitCode.OK, found)
    # held back by the baseline just written: nothing new
    assert _findings(baseline=load_baseline(base)) == (0, FailOn.WARNING, ExitCode.OK, None)


@pytest.mark.parametrize("level", list(FailOn))
def test_the_level_is_the_request_s_unless_a_baseline_is_recorded(level: FailOn) -> None:
    assert _findings(fail_on=level)[1] is level
