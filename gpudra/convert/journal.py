"""A convert that writes several files finishes what it started, even when it is killed.

Each file is replaced atomically (writer.write_atomic), but a run writes many: a kill -9 or
Ctrl-C between two of them leaves workloads converted and others not, or templates without
the kustomization that lists them. Before the first write, the whole plan goes to a journal
(the new content of every file and a hash of what each held when planned); after the last
write the journal is removed. A run that finds a journal finishes it first, then plans as
usual: the tree ends exactly as the uninterrupted run would have left it.

The journal is `.gpudra-convert.journal` in the common directory of the paths given (the same
command finds it again); it is JSON, and not a manifest suffix, so no scan reads it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpudra.convert.writer import (
    PlannedWrites,
    WriteRefused,
    remove_stale_temps,
    write_atomic_chunks,
)

JOURNAL_NAME = ".gpudra-convert.journal"
_VERSION = 1


@dataclass(frozen=True)
class Entry:
    path: str            # absolute
    old: str | None      # sha256 of the bytes it was planned from; None: the file was new
    new: bytes


def journal_path(base: Path) -> Path:
    return base / JOURNAL_NAME


def begin(base: Path, entries: Iterable[Entry]) -> Path:
    """Write the journal (atomically: a kill leaves all of it or none), one entry at a time:
    the new content of 2,000 files is never in memory at once. The text is what json.dumps
    gives for {"version": 1, "files": [...]}."""
    path = journal_path(base)
    write_atomic_chunks(path, _journal_text(entries))
    return path


def _journal_text(entries: Iterable[Entry]) -> Iterator[bytes]:
    yield f'{{"version": {_VERSION}, "files": ['.encode()
    for index, e in enumerate(entries):
        entry = {"path": e.path, "old": e.old, "new": base64.b64encode(e.new).decode("ascii")}
        yield (", " if index else "").encode() + json.dumps(entry).encode("utf-8")
    yield b"]}"


def end(path: Path) -> None:
    path.unlink(missing_ok=True)


def digest(data: bytes | None) -> str | None:
    # Imported here: hashlib maps OpenSSL's libcrypto, 3.4 MB of a convert --check's memory
    # that only a run that writes uses.
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


def pending(base: Path) -> list[Entry] | None:
    """The entries of an unfinished run's journal, or None when there is none. A journal that
    cannot be read is treated as none (it was never complete: begin() writes atomically)."""
    path = journal_path(base)
    try:
        document = json.loads(path.read_bytes())
        return [Entry(str(f["path"]), f["old"], base64.b64decode(f["new"]))
                for f in document["files"]] if document.get("version") == _VERSION else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def finish(base: Path, roots: tuple[str, ...]) -> tuple[int, list[tuple[str, str]]]:
    """Finish an interrupted run: write every file of its journal that still holds what it was
    planned from; a file changed since is left as it is and reported. Returns (files written,
    [(path, problem)]). The journal is removed afterwards."""
    entries = pending(base)
    if entries is None:
        return 0, []
    written = 0
    problems: list[tuple[str, str]] = []
    for directory in {Path(e.path).parent for e in entries}:
        remove_stale_temps(directory)
    writes = PlannedWrites(roots)
    for entry in entries:
        path = Path(entry.path)
        try:
            current = path.read_bytes() if path.exists() else None
        except OSError as exc:
            problems.append((entry.path, f"cannot read: {exc.strerror or exc}"))
            continue
        if current == entry.new:
            continue
        if digest(current) != entry.old:
            problems.append((entry.path, "changed since an interrupted convert planned it; "
                                         "left as it is"))
            continue
        try:
            writes.write(path, current, entry.new)
            written += 1
        except (OSError, WriteRefused) as exc:
            problems.append((entry.path, _reason(exc)))
    end(journal_path(base))
    return written, problems


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"cannot write: {exc.strerror or exc}"
    return str(exc)


def relative_label(path: str) -> str:
    """How a journal path is named in messages: relative to the working directory if under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
