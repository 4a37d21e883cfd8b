"""The one way gpudra puts bytes on disk: converted files, claims files, exports, reports,
baselines, runbooks and journals all go through `replace` (or `replace_file`, once
gpudra.convert.writer has looked at the name itself).

A name gpudra writes may come from a tree it does not trust (a committed `gpudra.sarif` that is
a symbolic link to a file elsewhere, a FIFO named `job.yaml`), so the last component is looked
at without following it: a link, a FIFO, a device, a socket or a directory is refused, never
written through. A regular file is replaced atomically: the bytes go to a new temporary file in
the same directory, are fsynced, get the old file's mode (and owner, for root), and are renamed
over the name. A rename replaces the directory entry itself, so a link swapped in after the
check is replaced, not followed. Where a write is confined (convert's to the paths given, a
copy's to --output-dir), gpudra.convert.writer checks the real path first.

`read_regular` is the matching reader for files gpudra reads back (the journal, the files a
journal names): no link followed, no FIFO opened for long, a size cap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gpudra.errors import GpudraError, UnreadableInputError
from gpudra.regular_file import NotRegularFileError, open_regular, read_bounded

# The suffix of the temporary files; the pid in their names lets a later run tell one a killed
# run left from one a running gpudra is writing (gpudra.convert.writer.remove_stale_temps).
TEMP_SUFFIX = ".gpudra-tmp"


class WriteRefused(GpudraError):
    """A write that must not happen; the message says why, in one line."""


def what_is(info: os.stat_result) -> str | None:
    """None for a regular file, else what it is, as a message names it."""
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def existing(path: str | Path) -> os.stat_result | None:
    """The lstat of `path` when it is a regular file, None when nothing is there; WriteRefused
    for anything else (a link is never followed)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise WriteRefused("a component of the path is not a directory; not written") from None
    kind = what_is(info)
    if kind is not None:
        raise WriteRefused(f"is {kind}; gpudra writes only regular files, not written")
    return info


def replace(path: str | Path, chunks: Iterable[bytes]) -> None:
    """Write `chunks` as the whole content of `path`, atomically, refusing (WriteRefused) a
    link, FIFO, device, socket or directory at `path`. OSError when the disk says no."""
    replace_file(Path(path), chunks, existing(path))


def replace_file(path: Path, chunks: Iterable[bytes], info: os.stat_result | None) -> None:
    """`replace` once `path` is checked: `info` its lstat (a regular file), None when absent."""
    if info is not None:
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    else:
        mode, owner = 0o644 & ~_umask(), None
    fd, tmp = _temporary(path)
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


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside `path`, `.<name>.<pid>.<random>.gpudra-tmp`, created exclusively
    (O_EXCL: never an existing file or a link) and readable by its owner only until chmod.
    (tempfile.mkstemp does the same but costs 14 ms of imports on every command's path.)"""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}"
                                         f"{TEMP_SUFFIX}")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def read_regular(path: str | Path, limit: int) -> bytes | None:
    """The bytes of the regular file `path`, None when there is none; UnreadableInputError for
    a link, a FIFO, a device, a socket or a directory (opened without following a link, and
    without blocking on a FIFO), and for a file over `limit` bytes."""
    try:
        fd, info = open_regular(path, follow_links=False)
    except FileNotFoundError:
        return None
    except NotRegularFileError as exc:
        raise UnreadableInputError(f"is {what_is(exc.info)}; gpudra reads back only regular "
                                   "files") from None
    except OSError as exc:
        found = _lstat(path)  # a link (ELOOP) is refused by what it is
        if found is not None and what_is(found) is not None:
            raise UnreadableInputError(f"is {what_is(found)}; gpudra reads back only regular "
                                       "files") from None
        raise exc
    try:
        if info.st_size > limit:
            raise UnreadableInputError(f"is {info.st_size:,} bytes, over the {limit:,}-byte "
                                       "cap on what gpudra reads back")
        data = read_bounded(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableInputError(f"is over the {limit:,}-byte cap on what gpudra reads back")
    return data


def _lstat(path: str | Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
