"""Reading one input whole: a regular file or stdin, bounded, never a device or FIFO."""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable

from gpudra.errors import UnreadableInputError
from gpudra.regular_file import NotRegularFileError, open_regular, read_bounded


def read_input(path: str | None, stdin: Callable[[], bytes] | None = None) -> bytes:
    """Read a whole input: the file at `path`, or stdin when there is none (an InputFile's
    path). Raises UnreadableInputError with a one-line reason."""
    try:
        if path is None:
            return (stdin or _read_stdin)()
        return read_regular(path)
    except OSError as exc:
        raise UnreadableInputError(exc.strerror or str(exc)) from None


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
    try:
        fd, info = open_regular(path)
    except NotRegularFileError:
        raise UnreadableInputError(
            "not a regular file (a device, FIFO or socket is never read)") from None
    try:
        if info.st_size > limit:
            raise UnreadableInputError(_too_large(limit))
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int) -> bytes:
    data = read_bounded(fd, limit)
    if len(data) > limit:  # the file grew after fstat, or a pipe (stdin)
        raise UnreadableInputError(_too_large(limit))
    return data


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


# kubectl reads a file through a byte-order-mark sniffer (cli-runtime FileVisitor, x/text's
# BOMOverride): a UTF-16 mark in either order makes the file UTF-16, a UTF-8 mark is dropped,
# anything else is UTF-8. It knows no UTF-32 mark: FF FE 00 00 reads as UTF-16 with NULs in
# it, which no YAML parser takes, so gpudra names it instead of guessing (docs/facts.md).
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
WIDE_BOMS = UTF32_BOMS + UTF16_BOMS  # UTF-32 first: its LE mark begins with UTF-16 LE's


def decode(data: bytes) -> str:
    """A file's text as kubectl reads it: UTF-16 after a UTF-16 byte order mark, else UTF-8
    (its mark tolerated). Raises UnicodeDecodeError, for UTF-32 too (`undecodable` says
    which in one line)."""
    if data.startswith(WIDE_BOMS):
        if data.startswith(UTF32_BOMS):
            raise UnicodeDecodeError("utf-32", data, 0, 4, "UTF-32 is not read by kubectl")
        return data.decode("utf-16")  # the mark picks the byte order and is dropped
    return data.decode("utf-8-sig")


def undecodable(exc: UnicodeDecodeError) -> str:
    """The one-line reason `decode` refused a file."""
    if exc.encoding == "utf-32":
        return "UTF-32 text (by its byte order mark): kubectl reads UTF-8 and UTF-16 only"
    name = "UTF-16" if exc.encoding.startswith("utf-16") else "UTF-8"
    return f"not {name} text (byte {exc.start})"
