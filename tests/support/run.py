"""Ways to run gpudra from a test: in this process (typer's runner), or as `python -m gpudra`
in a subprocess where the test needs a real process (limits, signals, the exit status)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from gpudra.cli import app


def invoke(*args: str, input: str | None = None, plain: bool = True) -> Result:
    """`gpudra ARGS` in this process; `plain`: with NO_COLOR set."""
    return CliRunner().invoke(app, list(args), input=input,
                              env={"NO_COLOR": "1"} if plain else None)


def said(result: Result) -> str:
    """Everything a run printed, stdout then stderr."""
    return result.stdout + result.stderr


def gpudra_process(*args: str, cwd: Path, **options: Any) -> subprocess.CompletedProcess[str]:
    """`python -m gpudra ARGS` in a subprocess, text captured, without colour."""
    return subprocess.run([sys.executable, "-m", "gpudra", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1"}, **options)
