"""The `gpudra` Typer app, its root options, and the one place errors become exit codes."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer

from gpudra import __version__
from gpudra.dra.versions import checked_against
from gpudra.errors import GpudraError, UsageError
from gpudra.results.model import ExitCode, InputError
from gpudra.printable import printable_line

app = typer.Typer(
    name="gpudra",
    help=(
        "Move Kubernetes GPU workloads from the NVIDIA device plugin (nvidia.com/gpu) to "
        "Dynamic Resource Allocation (ResourceClaims, DeviceClasses, CEL selectors).\n\n"
        "Start with `gpudra audit ./manifests` (what must change), then `gpudra convert "
        "./manifests --diff` (the change itself); `gpudra rules` lists what audit checks."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_Command = TypeVar("_Command", bound=Callable[..., Any])
DEBUG_ENV = "GPUDRA_DEBUG"
INTERRUPTED = "gpudra: interrupted"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpudra {__version__}\nchecked against:")
        typer.echo("".join(f"  {line}\n" for line in checked_against().splitlines()), nl=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version, the Kubernetes releases and "
                                      "the NVIDIA DRA driver it was checked against, and "
                                      "exit."),
) -> None:
    """Root options."""


def say(message: str) -> None:
    """One line on stderr, after `gpudra: `. The one way messages reach stderr: they quote
    inputs (names, server answers, URLs), so credentials are redacted and control and
    bidirectional characters escaped (gpudra.printable)."""
    typer.echo(f"gpudra: {printable_line(message)}", err=True)


def fail(message: str, code: ExitCode) -> typer.Exit:
    say(f"error: {message}")
    return typer.Exit(int(code))


def report_errors(errors: Iterable[InputError]) -> None:
    """The inputs a run could not read, one line each on stderr."""
    for error in errors:
        say(f"{error.where}: {error.message}")


def guarded(command: _Command) -> _Command:
    """The one place results and errors become exit codes. A command returns its result's
    ExitCode (a command that returns nothing exits 0). A user's mistake (UsageError) exits 2 and
    an input that could not be read (any other GpudraError) exits 3, each with one line on stderr.
    A bug must not look like a result either: exit 0 reads as "clean", 1 as "findings", so any
    unexpected exception also becomes exit 3 with one line; GPUDRA_DEBUG=1 adds the traceback
    for the bug report."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            code = command(*args, **kwargs)
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise  # control flow and a closed pipe keep their usual handling
        except KeyboardInterrupt:
            # typer would turn Ctrl-C into a silent exit 130: say why the run stopped
            typer.echo(INTERRUPTED, err=True)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except UsageError as exc:
            raise fail(str(exc), ExitCode.USAGE) from None
        except GpudraError as exc:
            raise fail(str(exc), ExitCode.INPUT_ERROR) from None
        except Exception as exc:  # noqa: BLE001 - the point of this wrapper
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                traceback.print_exc(file=sys.stderr)
            detail = " ".join(str(exc).split())
            what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            raise fail(f"internal error: {what} (please report it)", ExitCode.INPUT_ERROR) \
                from None
        if isinstance(code, ExitCode):
            raise typer.Exit(int(code))
        return code

    return run  # type: ignore[return-value]
