"""The contents of changed files, kept on disk until they are written or shown.

A tree with thousands of GPU files changes thousands of files, and convert writes none before
every file is planned (and the journal lists them all). Held in memory, their old and new
bytes grow with the tree, and interleaved with each file's short-lived parse they fragment
the heap to several times their size. An unlinked temporary file holds them instead; without
a writable temporary directory they stay in memory.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import IO


class Spool:
    def __init__(self) -> None:
        self._file: IO[bytes] | None
        try:
            self._file = tempfile.TemporaryFile(prefix="gpudra-convert-")
        except OSError:
            self._file = None
        self._end = 0
        self._unflushed = False

    def keep(self, data: bytes) -> bytes | Spooled:
        if self._file is None or not data:
            return data
        self._file.write(data)
        self._unflushed = True
        stored = Spooled(self, self._end, len(data))
        self._end += len(data)
        return stored

    def read(self, offset: int, length: int) -> bytes:
        if self._file is None:  # keep() hands out a Spooled only when there is a file
            raise OSError("convert's temporary file is gone")
        if self._unflushed:
            self._file.flush()
            self._unflushed = False
        data = os.pread(self._file.fileno(), length, offset)
        while len(data) < length:  # pread may return less than asked for
            more = os.pread(self._file.fileno(), length - len(data), offset + len(data))
            if not more:
                raise OSError(f"convert's temporary file lost data at offset {offset}")
            data += more
        return data


@dataclass(frozen=True, slots=True)
class Spooled:
    spool: Spool
    offset: int
    length: int

    def data(self) -> bytes:
        return self.spool.read(self.offset, self.length)


def contents(stored: bytes | Spooled) -> bytes:
    return stored if isinstance(stored, bytes) else stored.data()
