"""The CLI maps every command's result to its exit code in one place (gpudra.cli.root.guarded):
a command returns its ExitCode, an error becomes 2 or 3, nothing returned is 0."""

from __future__ import annotations

import pytest
import typer

from gpudra.cli.root import guarded
from gpudra.errors import UnreadableInputError, UsageError
from gpudra.results.model import ExitCode


def _raise(error: Exception) -> None:
    raise error


CASES = {
    "a result's code": (lambda: ExitCode.FINDINGS, 1),
    "blocked": (lambda: ExitCode.BLOCKED, 4),
    "ok": (lambda: ExitCode.OK, 0),
    "a usage error": (lambda: _raise(UsageError("bad")), 2),
    "an unreadable input": (lambda: _raise(UnreadableInputError("gone")), 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_result_and_error_becomes_its_exit_code(case: str) -> None:
    command, code = CASES[case]
    with pytest.raises(typer.Exit) as exit_:
        guarded(command)()
    assert exit_.value.exit_code == code


def test_a_command_that_returns_nothing_returns() -> None:
    assert guarded(lambda: None)() is None
