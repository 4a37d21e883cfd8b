"""The command line. Thin: parse options into a request, call one core function, render, choose
the exit code.

One module per command (or command group); root.py holds the app and the one place errors
become exit codes, options.py the options several commands share, output.py every format and
the code that writes it, terminal.py colour, width and progress. Importing a command's module
registers it on `app`; COMMANDS is the order `gpudra --help` lists them in."""

from __future__ import annotations

import sys
from pathlib import PureWindowsPath

import typer

from gpudra.cli import (  # noqa: F401 - each registers its command(s) on app
    audit, catalogue, convert, cutover, guard, plan, preflight, rbac, report, verify,
)
from gpudra.cli.collector import paced_collector
from gpudra.cli.kubectl_args import global_options_after_command
from gpudra.cli.root import INTERRUPTED, app
from gpudra.results.model import ExitCode

__all__ = ["app", "main", "program_name"]

# The workflow's order: find, change, check readiness, place, prove, roll out; then the
# catalogues and helpers. `gpudra report ...` (a group) follows them.
COMMANDS = ("audit", "convert", "preflight", "plan", "verify", "cutover", "guard", "checks",
            "rbac", "rules", "controllers", "explain")
app.registered_commands.sort(
    key=lambda command: COMMANDS.index(getattr(command.callback, "__name__", "")))

KUBECTL_PLUGIN = "kubectl-gpudra"


def program_name(argv0: str) -> str | None:
    """`kubectl gpudra` when run as the kubectl plugin (kubectl execs `kubectl-gpudra`), so that
    usage lines show what the user typed; None lets click name it (`gpudra`,
    `python -m gpudra`)."""
    name = PureWindowsPath(argv0).name.lower()  # splits on slashes and backslashes alike
    return "kubectl gpudra" if name.removesuffix(".exe") == KUBECTL_PLUGIN else None


def main() -> None:
    """Console-script entry point (gpudra and kubectl-gpudra)."""
    try:
        with paced_collector():
            app(args=global_options_after_command(sys.argv[1:]),
                prog_name=program_name(sys.argv[0]) if sys.argv else None)
    except KeyboardInterrupt:  # before or after a command runs (imports, option parsing)
        typer.echo(INTERRUPTED, err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
