"""Getting converted bytes to disk safely, and showing them as a diff."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from gpudra.convert.linediff import unified
from gpudra.errors import UnreadableInputError
from gpudra.kustomize.tree import inside, inside_real
from gpudra.printable import quote_name
from gpudra.safe_write import (
    TEMP_SUFFIX,
    WriteRefused,
    existing,
    read_regular,
    replace_file,
    what_is,
)

__all__ = ["TEMP_SUFFIX", "PlannedWrites", "WriteRefused", "color_diff", "remove_stale_temps",
           "unified_diff", "write_atomic", "write_atomic_chunks", "write_under"]


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace `path` with `data` only if it differs (gpudra.safe_write.replace: atomic, and a
    link, FIFO, device or directory at `path` is refused). Returns True when it wrote."""
    info = existing(path)
    if info is not None and info.st_size == len(data) and read_regular(path, len(data)) == data:
        return False
    replace_file(path, (data,), info)
    return True


def write_atomic_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """write_atomic for content made piece by piece (the journal of a large convert), never
    held whole; it is written even when it equals what the file holds."""
    replace_file(path, chunks, existing(path))


_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[^.]+" + re.escape(TEMP_SUFFIX) + "$")


class PlannedWrites:
    """Writes of files planned from what they held, confined to `roots` (the real paths the
    user named). A directory's real path is worked out once: a tree's changes share them, and
    resolving every path from the root is most of what checking a write costs."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self._roots = roots
        self._real_directories: dict[str, str] = {}

    def write(self, path: Path, planned_from: bytes | None, new: bytes) -> bool:
        """Replace `path` (or the file a symlink names) with `new`, atomically as write_atomic
        does. Returns False when it already holds `new`. Raises WriteRefused for a target
        outside the roots (a symlink out of the tree, `../` in a name), and for a file that no
        longer has the bytes it was planned from (`planned_from`; None: it did not exist): it
        was edited meanwhile, and the user's version wins."""
        target, real, info = self._resolved(path)
        if not inside_real(real, self._roots):
            raise WriteRefused(f"leads to {real}, outside the paths given on the command line "
                               "(a symbolic link?); not written")
        kind = what_is(info) if info is not None else None
        if kind is not None:
            raise WriteRefused(f"is {kind}; gpudra writes only regular files, not written")
        current = self._current(target, info, planned_from, new)
        if current not in (planned_from, new):
            raise WriteRefused("changed since convert read it; not written, your version is "
                               "kept (run convert again)" if planned_from is not None else
                               "created by something else since convert looked; not written")
        if current == new:
            return False
        replace_file(target, (new,), info if current is not None else None)
        return True

    def read(self, path: Path, limit: int) -> bytes | None:
        """What `path` (or the file a symlink names) holds, None when nothing is there, read
        only once it is known to be a regular file under the roots (WriteRefused else)."""
        target, real, info = self._resolved(path)
        if not inside_real(real, self._roots):
            raise WriteRefused(f"leads to {real}, outside the paths given on the command line; "
                               "not read")
        if info is None:
            return None
        kind = what_is(info)
        if kind is not None:
            raise WriteRefused(f"is {kind}; gpudra writes only regular files, not written")
        try:
            return read_regular(target, limit)
        except UnreadableInputError as exc:
            raise WriteRefused(f"{exc}; not written") from None

    @staticmethod
    def _current(target: Path, info: os.stat_result | None, planned_from: bytes | None,
                 new: bytes) -> bytes | None:
        """What `target` (a regular file, lstat `info`) holds. A file of neither expected size
        was changed, whatever it holds: it is not read (a sentinel stands for it)."""
        if info is None:
            return None
        if info.st_size not in (len(new), -1 if planned_from is None else len(planned_from)):
            return b"\0changed"
        try:
            return read_regular(target, info.st_size)
        except UnreadableInputError as exc:
            raise WriteRefused(f"{exc}; not written") from None

    def _resolved(self, path: Path) -> tuple[Path, str, os.stat_result | None]:
        """The file to write (a symlink's target), its real path, and its stat (None: none)."""
        directory, name = os.path.split(path)
        try:
            info: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            info = None
        if name in ("", ".", "..") or (info is not None and stat.S_ISLNK(info.st_mode)):
            real = os.path.realpath(path)
            try:
                info = os.lstat(real)
            except FileNotFoundError:
                info = None
            return Path(real), real, info
        real_directory = self._real_directories.get(directory)
        if real_directory is None:
            real_directory = self._real_directories[directory] = \
                os.path.realpath(directory or os.curdir)
        return path, os.path.join(real_directory, name), info


def remove_stale_temps(directory: Path) -> None:
    """Delete the temp files a killed convert left in `directory` (its pid is gone)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = _TEMP_NAME.match(name)
        if match and not _alive(int(match.group(1))):
            try:
                os.unlink(directory / name)
            except OSError:
                pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: not ours to judge
    return True


def unified_diff(label: str, old: bytes, new: bytes, created: bool = False) -> str:
    """A git-style unified diff; line endings are shown as they are (CRLF stays visible)."""
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
    path = _diff_path(label)
    # git's quoting: `--- "a/x\ny.yaml"` for a name that is unsafe to print; git apply reads it.
    diff = unified(old_lines, new_lines,
                   "/dev/null" if created else quote_name(f"a/{path}"), quote_name(f"b/{path}"))
    out = []
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_path(label: str) -> str:
    """`./apps/job.yaml` and `/srv/apps/job.yaml` as git writes them after `a/` and `b/`:
    `apps/job.yaml`, `srv/apps/job.yaml` (so `git apply -p1` and `patch -p1` take the diff)."""
    path = label.replace(os.sep, "/")
    while True:
        trimmed = path.lstrip("/").removeprefix("./")
        if trimmed == path:
            return path
        path = trimmed


# ANSI SGR codes for a diff on a terminal, as git colours one by default.
_BOLD, _CYAN, _RED, _GREEN, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[0m"


def color_diff(diff: str) -> str:
    """One file's `diff` (from unified_diff) with its two header lines bold, hunk headers cyan,
    removed lines red and added lines green. The caller decides whether colour is wanted.
    (Only the first two lines are headers: a removed `-- x` line also reads `--- x`.)"""
    out = []
    for number, line in enumerate(diff.splitlines(keepends=True)):
        body = line.rstrip("\n")
        if number < 2 and line.startswith(("--- ", "+++ ")):
            style = _BOLD
        elif line.startswith("@@"):
            style = _CYAN
        elif line.startswith("-"):
            style = _RED
        elif line.startswith("+"):
            style = _GREEN
        else:
            out.append(line)
            continue
        out.append(f"{style}{body}{_RESET}{line[len(body):]}")
    return "".join(out)


def write_under(out: Path, relative: Path | str, data: bytes) -> None:
    """Write `data` at `out/relative`, never outside `out`: not through `..` or an absolute
    name, nor through a symlink (raises WriteRefused)."""
    target = out / relative
    if not inside(str(target), (os.path.realpath(out),)):
        raise WriteRefused(f"{target} would be outside --output-dir {out}; not written")
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent)
    try:
        write_atomic(target, data)
    except WriteRefused as exc:
        raise WriteRefused(f"{target} {exc}") from None
