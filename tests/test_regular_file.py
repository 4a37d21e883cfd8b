"""Every reader of files opens through gpudra.regular_file and keeps its own refusals: a FIFO,
a device and a directory are never read; each cap is its reader's; only the read-back of what
gpudra wrote (safe_write) refuses a link. One table: reader x what the path names."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gpudra.errors import UnreadableInputError
from gpudra.input_files import read_small
from gpudra.preflight.node.host import open_regular as host_open
from gpudra.regular_file import NotRegularFileError
from gpudra.safe_write import read_regular as read_back
from gpudra.sources.file_bytes import read_regular as read_input

LIMIT = 64 << 10  # above the first read's 64 KiB, so the cap is met in the loop
DATA = b"kind: Job\n" * 100


def _host(path: str) -> bytes:
    with host_open(Path(path)) as handle:
        return handle.read()


READERS: dict[str, Callable[[str], bytes | None]] = {
    "input_files": lambda path: read_small(path, LIMIT),
    "sources": lambda path: read_input(path, LIMIT),
    "safe_write": lambda path: read_back(path, LIMIT),
    "host": _host,
}


def _make(tmp_path: Path, what: str) -> str:
    path = tmp_path / "input"
    if what == "regular":
        path.write_bytes(DATA)
    elif what == "large":
        path.write_bytes(b"x" * (LIMIT + 1))
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "directory":
        path.mkdir()
    elif what == "device":
        return os.devnull
    elif what == "link":
        (tmp_path / "target").write_bytes(DATA)
        path.symlink_to(tmp_path / "target")
    return str(path)


NOT_REGULAR = (UnreadableInputError, "not a regular file (a device, FIFO or socket is never read)")
# (reader, what the path names) -> bytes read, None, or (exception, part of its message)
OUTCOMES: dict[tuple[str, str], object] = {
    **{(reader, "regular"): DATA for reader in READERS},
    ("input_files", "large"): (UnreadableInputError, "larger than 64 KiB"),
    ("sources", "large"): (UnreadableInputError, "the most gpudra reads from one input"),
    ("safe_write", "large"): (UnreadableInputError, "over the 65,536-byte cap"),
    ("host", "large"): b"x" * (LIMIT + 1),  # its reader (read_text) caps what it reads
    ("input_files", "fifo"): NOT_REGULAR,
    ("sources", "fifo"): NOT_REGULAR,
    ("safe_write", "fifo"): (UnreadableInputError, "is a FIFO"),
    ("host", "fifo"): (NotRegularFileError, "not a regular file (a FIFO)"),
    ("input_files", "directory"): NOT_REGULAR,
    ("sources", "directory"): NOT_REGULAR,
    ("safe_write", "directory"): (UnreadableInputError, "is a directory"),
    ("host", "directory"): (IsADirectoryError, "is a directory"),
    ("input_files", "device"): NOT_REGULAR,
    ("sources", "device"): NOT_REGULAR,
    ("safe_write", "device"): (UnreadableInputError, "is a device"),
    ("host", "device"): (NotRegularFileError, "not a regular file (a character device)"),
    ("input_files", "link"): DATA,
    ("sources", "link"): DATA,
    ("safe_write", "link"): (UnreadableInputError, "is a symbolic link"),
    ("host", "link"): DATA,
    ("input_files", "missing"): (UnreadableInputError, "cannot read: No such file"),
    ("sources", "missing"): (FileNotFoundError, "No such file"),
    ("safe_write", "missing"): None,
    ("host", "missing"): (FileNotFoundError, "No such file"),
}


@pytest.mark.parametrize(("reader", "what"), sorted(OUTCOMES))
def test_each_reader_keeps_its_refusals(reader: str, what: str, tmp_path: Path) -> None:
    path = _make(tmp_path, what)
    expected = OUTCOMES[reader, what]
    if isinstance(expected, tuple):
        error, message = expected
        with pytest.raises(error) as caught:
            READERS[reader](path)
        assert message in str(caught.value)
    else:
        assert READERS[reader](path) == expected
