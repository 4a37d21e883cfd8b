"""Getting converted bytes to disk safely, and showing them as a diff."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gpudra.convert.linediff import unified
from gpudra.kustomize.tree import inside, inside_real
from gpudra.printable import quote_name


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace `path` with `data` only if it differs. Returns True when it wrote.

    The new content goes to a temporary file in the same directory (same filesystem), is
    fsynced, gets the old file's mode, and is renamed over the original: a reader, a crash or
    Ctrl-C sees either the old file or the new one, never half of one.
    """
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    _replace(path, (data,))
    return True


def write_atomic_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """write_atomic for content made piece by piece (the journal of a large convert), never
    held whole; it is written even when it equals what the file holds."""
    _replace(path, chunks)


def _replace(path: Path, chunks: Iterable[bytes]) -> None:
    # Write through a symlink to the file it names; replacing the link would orphan the target.
    path = path.resolve() if path.is_symlink() else path
    try:
        info: os.stat_result | None = path.stat()
    except FileNotFoundError:
        info = None
    _replace_file(path, chunks, info)


def _replace_file(path: Path, chunks: Iterable[bytes], info: os.stat_result | None) -> None:
    """_replace for a `path` that is no symlink, `info` its stat (None: it does not exist)."""
    if info is not None:
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    else:
        mode, owner = 0o644 & ~_umask(), None
    # The pid in the name lets a later run tell a temp file a killed run left (removed by
    # remove_stale_temps) from one a running convert is writing.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                               suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if owner is not None and owner != (os.getuid(), os.getgid()):
            try:  # root editing a user's file must not hand it to root
                os.chown(tmp, *owner)
            except PermissionError:
                pass  # only root can give a file away; others keep their own files anyway
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


TEMP_SUFFIX = ".gpudra-tmp"
_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[^.]+" + re.escape(TEMP_SUFFIX) + "$")


class WriteRefused(Exception):
    """A planned write that must not happen; the message says why, in one line."""


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
        try:
            current: bytes | None = target.read_bytes()
        except FileNotFoundError:
            current = None
        if current not in (planned_from, new):
            raise WriteRefused("changed since convert read it; not written, your version is "
                               "kept (run convert again)" if planned_from is not None else
                               "created by something else since convert looked; not written")
        if current == new:
            return False
        _replace_file(target, (new,), info if current is not None else None)
        return True

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
                info = os.stat(real)
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


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


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
    name, nor through a symlink inside `out` (raises WriteRefused)."""
    target = out / relative
    if not inside(str(target), (os.path.realpath(out),)):
        raise WriteRefused(f"{target} would be outside --output-dir {out}; not written")
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent)
    write_atomic(target, data)
