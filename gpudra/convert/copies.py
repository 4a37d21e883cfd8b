"""convert --output-dir DIR: the copies, and the record in DIR of the files copies wrote.

A second run into the same DIR replaces the copies of the first; a file in DIR that no copy
wrote (the user's own `job.yaml`) is never replaced. The record, `DIR/.gpudra-copies`, names
the files copies wrote there (JSON: {"version": 1, "files": [relative paths]}); it is read as
untrusted input (no link, capped, a list of strings), and one that cannot be read counts as
empty: then no existing file is replaced, the safe side.
"""

from __future__ import annotations

import json
import os
from collections.abc import Set
from pathlib import Path

from gpudra.convert.writer import WriteRefused, write_under
from gpudra.errors import UnreadableInputError
from gpudra.safe_write import existing, read_regular, replace

RECORD_NAME = ".gpudra-copies"
_RECORD_LIMIT = 64 * 1024 * 1024
_VERSION = 1


def recorded(out: Path) -> set[str]:
    """The relative paths earlier copies into `out` wrote; empty when there is no record or
    it cannot be read."""
    try:
        data = read_regular(out / RECORD_NAME, _RECORD_LIMIT)
        document = json.loads(data) if data is not None else None
    except (OSError, UnreadableInputError, ValueError):
        return set()
    if not isinstance(document, dict) or document.get("version") != _VERSION:
        return set()
    files = document.get("files")
    if not isinstance(files, list):
        return set()
    return {name for name in files if isinstance(name, str)}


def write(out: Path, relative: str, data: bytes, recorded_names: Set[str]) -> None:
    """The copy `out/relative`; WriteRefused when a different file is there that no copy
    wrote, and for what write_under refuses (a link, a FIFO, a path out of `out`)."""
    target = out / relative
    try:
        info = existing(target)
    except (OSError, WriteRefused):
        info = None  # a link, a FIFO...: write_under says what is wrong with it
    if info is not None and relative not in recorded_names and not _holds(target, info, data):
        raise WriteRefused(f"{target} exists and no earlier convert --output-dir wrote it; "
                           "not replaced (move it, or choose another directory)")
    write_under(out, relative, data)


def _holds(target: Path, info: os.stat_result, data: bytes) -> bool:
    if info.st_size != len(data):
        return False
    try:
        return read_regular(target, len(data)) == data
    except (OSError, UnreadableInputError):
        return False


def record(out: Path, names: Set[str]) -> None:
    """Record `names` (every copy in `out`, of this run and earlier ones) in `out`."""
    if not names or not out.is_dir():
        return
    text = json.dumps({"version": _VERSION, "files": sorted(names)}, indent=1) + "\n"
    replace(out / RECORD_NAME, (text.encode("utf-8", "surrogateescape"),))
