"""Reading one input whole: a regular file or stdin, bounded, never a device or FIFO."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable

from gpudra.errors import UnreadableInputError
from gpudra.sources.discovery import InputFile


def read_input(entry: InputFile, stdin: Callable[[], bytes] | None = None) -> bytes:
    """Read a whole input. Raises UnreadableInputError with a one-line reason."""
    try:
        if entry.path is None:
            return (stdin or _read_stdin)()
        return read_regular(entry.path)
    except OSError as exc:
        raise UnreadableInputError(exc.strerror or str(exc)) from None


# O_NONBLOCK: opening a FIFO must not wait for a writer (the fstat below then refuses it).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | \
    getattr(os, "O_NONBLOCK", 0)
# The largest input read. Kubernetes objects are at most ~1.5 MiB (etcd's request limit), but a
# file can be a List of many: a `kubectl get pods -A -o json` dump of 20,000 pods is 84 MB. 256
# MiB holds such dumps with room to spare, while /dev/zero or a runaway generator stops at a
# bounded allocation instead of exhausting memory.
MAX_FILE_BYTES = 256 << 20


def read_regular(path: str, limit: int | None = None) -> bytes:
    """A whole regular file, at most `limit` bytes (MAX_FILE_BYTES). FIFOs, devices and
    sockets (a kustomize patch `path: /dev/zero`) are refused, not read: they can block forever
    or never end. Raises OSError; UnreadableInputError past the cap."""
    limit = MAX_FILE_BYTES if limit is None else limit
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableInputError(
                "not a regular file (a device, FIFO or socket is never read)")
        if info.st_size > limit:
            raise UnreadableInputError(_too_large(limit))
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int) -> bytes:
    """Via os.read: a third of Path.read_bytes' cost (no io objects)."""
    data = os.read(fd, 65536)
    if not data:
        return data
    parts = [data]
    size = len(data)
    while True:
        more = os.read(fd, 1 << 20)
        if not more:
            break
        size += len(more)
        if size > limit:  # the file grew after fstat, or a pipe (stdin)
            raise UnreadableInputError(_too_large(limit))
        parts.append(more)
    return data if len(parts) == 1 else b"".join(parts)


def _too_large(limit: int) -> str:
    return f"larger than {limit >> 20} MiB, the most gpudra reads from one input"


def _read_stdin() -> bytes:
    if _has_fileno():
        return _read_fd(sys.stdin.buffer.fileno(), MAX_FILE_BYTES)
    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableInputError(_too_large(MAX_FILE_BYTES))
    return data


def _has_fileno() -> bool:
    try:
        sys.stdin.buffer.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # a test's in-memory stdin
    return True


def decode(data: bytes) -> str:
    """UTF-8 (BOM tolerated; kubectl accepts it). Raises UnicodeDecodeError otherwise."""
    return data.decode("utf-8-sig")
