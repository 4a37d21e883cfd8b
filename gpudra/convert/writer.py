"""Getting converted bytes to disk safely, and showing them as a diff."""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace `path` with `data` only if it differs. Returns True when it wrote.

    The new content goes to a temporary file in the same directory (same filesystem), is
    fsynced, gets the old file's mode, and is renamed over the original: a reader, a crash or
    Ctrl-C sees either the old file or the new one, never half of one.
    """
    # Write through a symlink to the file it names; replacing the link would orphan the target.
    path = path.resolve() if path.is_symlink() else path
    try:
        if path.read_bytes() == data:
            return False
        info = path.stat()
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    except FileNotFoundError:
        mode, owner = 0o644 & ~_umask(), None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".gpudra-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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
    return True


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def unified_diff(label: str, old: bytes, new: bytes, created: bool = False) -> str:
    """A git-style unified diff; line endings are shown as they are (CRLF stays visible)."""
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, new_lines,
                                fromfile="/dev/null" if created else f"a/{label.lstrip('/')}",
                                tofile=f"b/{label.lstrip('/')}")
    out = []
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
