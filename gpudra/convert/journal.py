"""A convert that writes several files finishes what it started, even when it is killed.

Each file is replaced atomically (gpudra.safe_write), but a run writes many: a kill -9 or
Ctrl-C between two of them leaves workloads converted and others not, or templates without
the kustomization that lists them. Before the first write, the whole plan goes to a journal
(the new content of every file and a hash of what each held when planned); after the last
write the journal is removed. A run that finds a journal finishes it first, then plans as
usual: the tree ends exactly as the uninterrupted run would have left it.

The journal lives in the user's cache directory, never in the tree: `$GPUDRA_CACHE_DIR`, else
`$XDG_CACHE_HOME/gpudra`, else `~/.cache/gpudra`, then `journals/<checksum of the real paths
given>.json`, so the same command finds it again and no commit, archive or pull request can
carry one. It is still read as untrusted input (journal_of): never through a link, at most
JOURNAL_LIMIT bytes, typed at its edge, and only when this host and these paths wrote it. A
rerun finishes only writes to files under the paths given whose current bytes are what the
interrupted run read or wrote.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpudra.convert.writer import (
    PlannedWrites,
    WriteRefused,
    remove_stale_temps,
    write_atomic_chunks,
)
from gpudra.errors import GpudraError, UnreadableInputError
from gpudra.safe_write import read_regular

_VERSION = 2
# The journal holds the new content of every file a run changes (base64): 256 MiB is far over
# what a tree of 100,000 manifests needs, and keeps the read of a hostile one under 1 GB.
JOURNAL_LIMIT = 256 * 1024 * 1024
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class JournalRefused(GpudraError):
    """A journal that is not finished: the message says why, in one line."""


@dataclass(frozen=True)
class Entry:
    path: str            # absolute
    old: str | None      # sha256 of the bytes it was planned from; None: the file was new
    new: bytes


def cache_directory(environ: Mapping[str, str] = os.environ) -> Path:
    """Where gpudra keeps what outlives a run: GPUDRA_CACHE_DIR, else the XDG cache.
    FileNotFoundError when there is no home directory to put it in."""
    if environ.get("GPUDRA_CACHE_DIR"):
        if not os.path.isabs(environ["GPUDRA_CACHE_DIR"]):  # never a cache inside the tree
            raise FileNotFoundError("GPUDRA_CACHE_DIR must be an absolute path")
        return Path(environ["GPUDRA_CACHE_DIR"])
    xdg = environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "gpudra"
    home = environ.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home):  # no home: never a relative `~/.cache` in the tree
        raise FileNotFoundError("no home directory for gpudra's cache (set GPUDRA_CACHE_DIR)")
    return Path(home) / ".cache" / "gpudra"


def journal_path(roots: Iterable[str], environ: Mapping[str, str] = os.environ) -> Path:
    """The journal of a convert of `roots` (real paths, as PlannedWrites takes them). The
    name is 64 bits of checksums of the paths, not a sha256: hashlib maps OpenSSL's libcrypto,
    3.4 MB that a --check, which looks for a journal, must not pay. Two sets of paths that
    share a name are told apart by the roots the journal records."""
    import zlib

    key = "\0".join(sorted(set(roots))).encode("utf-8", "surrogateescape")
    name = f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}.json"
    return cache_directory(environ) / "journals" / name


def _host() -> str:
    return os.uname().nodename


def begin(roots: tuple[str, ...], entries: Iterable[Entry],
          environ: Mapping[str, str] = os.environ) -> Path:
    """Write the journal (atomically: a kill leaves all of it or none), one entry at a time:
    the new content of 2,000 files is never in memory at once. OSError (or JournalRefused,
    for a plan over JOURNAL_LIMIT or a cache directory that is not the user's own) means no
    journal: the write order alone then keeps every state of the tree valid."""
    path = journal_path(roots, environ)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(path.parent)
    remove_stale_temps(path.parent)  # of a journal a killed run was writing
    try:
        write_atomic_chunks(path, _capped(_journal_text(roots, entries)))
    except WriteRefused as exc:  # a link or a FIFO where the journal goes
        raise JournalRefused(f"{path} {exc}; no journal") from None
    return path


def _check_private(directory: Path) -> None:
    """The journal directory must be a real directory of this user: no link, nobody else's."""
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise JournalRefused(f"{directory} is not a directory of this user; no journal")


def _capped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > JOURNAL_LIMIT:
            raise JournalRefused(f"the plan is over {JOURNAL_LIMIT:,} bytes; no journal")
        yield chunk


def _journal_text(roots: tuple[str, ...], entries: Iterable[Entry]) -> Iterator[bytes]:
    head = json.dumps({"version": _VERSION, "host": _host(), "roots": sorted(set(roots))})
    yield head[:-1].encode("utf-8", "surrogateescape") + b', "files": ['
    for index, e in enumerate(entries):
        entry = {"path": e.path, "old": e.old, "new": base64.b64encode(e.new).decode("ascii")}
        yield (", " if index else "").encode() + \
            json.dumps(entry).encode("utf-8", "surrogateescape")
    yield b"]}"


def end(path: Path) -> None:
    path.unlink(missing_ok=True)


def digest(data: bytes | None) -> str | None:
    # Imported here: hashlib maps OpenSSL's libcrypto, 3.4 MB of a convert --check's memory
    # that only a run that writes uses.
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


def journal_of(path: Path, roots: tuple[str, ...]) -> list[Entry] | None:
    """The entries of the journal at `path`, None when there is none. JournalRefused, in one
    line, for one that is a link, a FIFO, a device, over JOURNAL_LIMIT, another user's, not a
    journal of this version, written on another host or for other paths, or with an entry
    that is not an absolute, normal path and a sha256."""
    try:
        data = read_regular(path, JOURNAL_LIMIT)
    except UnreadableInputError as exc:
        raise JournalRefused(f"{exc}; not read") from None
    except OSError as exc:
        raise JournalRefused(f"cannot read: {exc.strerror or exc}") from None
    if data is None:
        return None
    try:
        owner = os.lstat(path).st_uid
    except OSError:
        owner = None  # removed since it was read
    if owner != os.getuid():
        raise JournalRefused("not written by this user; not read")
    import msgspec

    from gpudra.convert.journal_format import Journal

    try:
        document = msgspec.json.decode(data, type=Journal)
    except msgspec.DecodeError as exc:  # ValidationError included: it names the field
        raise JournalRefused(f"not a gpudra journal ({exc}); not read") from None
    if document.version != _VERSION:
        raise JournalRefused(f"a journal of version {document.version}, not {_VERSION}; "
                             "not read")
    if document.host != _host():
        raise JournalRefused("written on another host; not read")
    if sorted(document.roots) != sorted(set(roots)):
        raise JournalRefused("written for other paths; not read")
    for index, f in enumerate(document.files):
        if not os.path.isabs(f.path) or os.path.normpath(f.path) != f.path or "\0" in f.path:
            raise JournalRefused(f"`$.files[{index}].path` is not an absolute, normal path; "
                                 "not read")
        if f.old is not None and not _DIGEST.match(f.old):
            raise JournalRefused(f"`$.files[{index}].old` is not a sha256; not read")
    return [Entry(f.path, f.old, f.new) for f in document.files]


def finish(roots: tuple[str, ...], environ: Mapping[str, str] = os.environ
           ) -> tuple[int, list[tuple[str, str]]]:
    """Finish an interrupted run: write every file of its journal that is under `roots` and
    still holds what it was planned from; a file changed since is left as it is and
    reported. Returns (files written, [(path, problem)]). The journal is removed afterwards,
    and so is one that is refused (it is reported once)."""
    try:
        path = journal_path(roots, environ)
    except OSError:
        return 0, []  # no cache directory: no run could have left a journal
    try:
        entries = journal_of(path, roots)
    except JournalRefused as exc:
        _discard(path)
        return 0, [(str(path), f"an interrupted convert's journal: {exc}")]
    if entries is None:
        return 0, []
    writes = PlannedWrites(roots)
    written = 0
    problems: list[tuple[str, str]] = []
    cleaned: set[Path] = set()
    for entry in entries:
        target = Path(entry.path)
        try:
            current = writes.read(target, JOURNAL_LIMIT)
        except WriteRefused as exc:
            problems.append((entry.path, str(exc)))
            continue
        except OSError as exc:
            problems.append((entry.path, f"cannot read: {exc.strerror or exc}"))
            continue
        if target.parent not in cleaned:  # only directories under the roots
            cleaned.add(target.parent)
            remove_stale_temps(target.parent)
        if current == entry.new:
            continue
        if digest(current) != entry.old:
            problems.append((entry.path, "changed since an interrupted convert planned it; "
                                         "left as it is"))
            continue
        try:
            writes.write(target, current, entry.new)
            written += 1
        except (OSError, WriteRefused) as exc:
            problems.append((entry.path, _reason(exc)))
    end(path)
    return written, problems


def _discard(path: Path) -> None:
    """Remove a refused journal (a link itself, never its target)."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            path.unlink()
    except OSError:
        pass


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"cannot write: {exc.strerror or exc}"
    return str(exc)


def relative_label(path: str) -> str:
    """How a journal path is named in messages: relative to the working directory if under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
