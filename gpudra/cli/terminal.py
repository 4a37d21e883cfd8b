"""What the CLI asks of the terminal: colour, width, and progress on stderr."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from types import TracebackType
from typing import IO, TYPE_CHECKING

from gpudra.k8s.objects import plural
from gpudra.printable import escape_text, quote_name

if TYPE_CHECKING:  # rich loads only when a terminal shows progress; the cluster package, with it
    from rich.progress import Progress, TaskID
    from rich.status import Status

    from gpudra.cluster.records import ListProgress as PageProgress


def color(stream: IO[str]) -> bool:
    # https://no-color.org: any non-empty NO_COLOR disables colour.
    if os.environ.get("NO_COLOR"):
        return False
    return terminal(stream)


def terminal(stream: IO[str]) -> bool:
    """Output for a person at a terminal; FORCE_COLOR (https://force-color.org) asks for it
    where there is no terminal, e.g. in CI logs."""
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def width() -> int | None:
    """Columns for tables: $COLUMNS when set (as ls and git honour it), else the terminal's;
    None when stdout is no terminal: nothing wraps, so files and pipes get whole lines."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


class ListProgress:
    """Objects read per resource type, on stderr, only when stderr is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._enabled = not quiet and sys.stderr.isatty()

    def __enter__(self) -> Callable[[PageProgress], None] | None:
        if not self._enabled:
            return None
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn

        console = Console(stderr=True, no_color=not color(sys.stderr))
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),
                                  TextColumn("{task.completed:>9,.0f} objects"),
                                  console=console, transient=True)
        self._progress.__enter__()
        return self._page

    def _page(self, progress: PageProgress) -> None:
        if self._progress is None:
            return
        name = progress.resource.qualified_name
        task = self._tasks.get(name)
        if task is None:
            task = self._tasks[name] = self._progress.add_task(escape_text(name), total=None)
        self._progress.update(task, completed=progress.objects)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, error, traceback)


class FileProgress:
    """A spinner on stderr with the current file, only when stderr is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self._status: Status | None = None
        self._count = 0
        self._enabled = not quiet and sys.stderr.isatty()

    def __enter__(self) -> Callable[[str], None] | None:
        if not self._enabled:
            return None
        from rich.console import Console

        console = Console(stderr=True, no_color=not color(sys.stderr))
        self._status = console.status("scanning")
        self._status.__enter__()
        return self._tick

    def _tick(self, label: str) -> None:
        self._count += 1
        if self._count % 50 == 0 and self._status is not None:
            from rich.text import Text

            # A Text, not a string: rich would read a path such as [/srv/x] as markup.
            self._status.update(Text(f"scanning: {plural(self._count, 'file')} "
                                     f"({quote_name(label)})"))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._status is not None:
            self._status.__exit__(kind, error, traceback)
