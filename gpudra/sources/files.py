"""Manifest trees as a source: every object, template text and input error under some paths,
read in this process (`reading`) or, from POOL_FROM files on, by worker processes
(`files_pool`), with the same items, stats and order either way.
"""

from __future__ import annotations

import itertools
import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpudra.results.model import InputError
from gpudra.sources import FileTree, Item, ScanStats
from gpudra.sources.discovery import InputFile, discover
from gpudra.sources.files_pool import AHEAD, Pooled, read_pooled, scan_pooled
from gpudra.sources.reading import ReadFile, read_entries, scan_entries
from gpudra.sources.workers import pool_pays, usable_cpus

# From this many files on, worker processes read and parse them. Below it a pool's start-up
# and transfer cost about what it saves; benchmarks/bench_audit.py (audit vs audit-1cpu)
# measures the gain. The walk stays in the parent: about a third of the single-process CPU.
POOL_FROM = 10_000


class Reads(Protocol):
    """read_all's files, one by one: close it when it is left before its end, so that the
    worker processes reading ahead, if any, stop."""

    def __iter__(self) -> Iterator[ReadFile | InputError]: ...

    def __next__(self) -> ReadFile | InputError: ...

    def close(self) -> None: ...


def read_all(entries: Sequence[InputFile | InputError], *, stats: ScanStats,
             stdin: Callable[[], bytes] | None = None,
             on_file: Callable[[str], None] | None = None,
             pool_from: int = POOL_FROM,
             after: tuple[Callable[[ReadFile, Any], Any], Any] | None = None
             ) -> Reads:
    """read_entries; from `pool_from` entries on, worker processes read and pre-scan
    (gpudra.sources.files_pool.read_pooled: a file without text comes without its bytes).
    `after` (function, argument): with worker processes, each of them calls
    function(read, argument) on every file it read with text, and a result other than None
    comes back as that ReadFile's `ahead` (the function must be picklable by name).
    Close the iterator when it is left before its end."""
    if pool_pays(len(entries), pool_from):
        return read_pooled(entries, stats=stats, stdin=stdin, on_file=on_file,
                           workers=usable_cpus(), after=after)
    return read_entries(entries, stats=stats, stdin=stdin, on_file=on_file)


@dataclass(frozen=True)
class Listing:
    """A walk's entries, all listed, and their reading, which worker processes began while the
    walk went on (list_and_read)."""

    entries: list[InputFile | InputError]
    reads: Reads

    def hand_over(self, after: tuple[Callable[[ReadFile, Any], Any], Any] | None) -> None:
        """read_all's `after` for the files the workers have not been given yet."""
        if isinstance(self.reads, Pooled):
            self.reads.option = after

    def release_entries(self) -> None:
        """Let go of the listed entries (the reading holds its own): the caller has what it
        needed of them, and a large tree's are a fifth of a convert's memory."""
        self.entries.clear()

    def close(self) -> None:
        self.reads.close()


def list_and_read(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                  stdin: Callable[[], bytes] | None = None,
                  pool_from: int = POOL_FROM,
                  after: tuple[Callable[[ReadFile, Any], Any], Any] | None = None) -> Listing:
    """read_all over entries still being found (a walk, `discover`), for a caller that needs
    them all listed before it takes the first read (convert: a kustomization anywhere changes
    how every file is planned). From `pool_from` entries on, worker processes start reading
    the first of them while this process lists the rest (as far as they read ahead of the
    caller), running `after` (read_all's) on them until the caller hands over another (or
    None). Close the Listing when it is left before the end of its reads."""
    walk = iter(entries)
    listed = list(itertools.islice(walk, pool_from))
    if not pool_pays(len(listed), pool_from):
        listed += walk
        return Listing(listed, read_all(listed[:], stats=stats, stdin=stdin,
                                        pool_from=pool_from))
    handed: queue.SimpleQueue[InputFile | InputError | None] = queue.SimpleQueue()
    listing = Listing(listed, read_pooled(itertools.chain(listed[:], iter(handed.get, None)),
                                          stats=stats, stdin=stdin, workers=usable_cpus(),
                                          after=after))
    try:
        for entry in walk:
            listed.append(entry)
            handed.put(entry)
    except BaseException:
        handed.put(None)  # first: the pool's feeder waits for the walk's end to stop
        listing.close()
        raise
    handed.put(None)
    return listing


def scan(paths: Iterable[str], excludes: Iterable[str] = (), *, stats: ScanStats,
         stdin: Callable[[], bytes] | None = None,
         on_file: Callable[[str], None] | None = None, lines: bool = True,
         pool_from: int = POOL_FROM, read_ahead: bool = False,
         outputs: frozenset[str] = frozenset()) -> Iterator[Item]:
    """The whole file source: every object, template text and input error under `paths`.
    From `pool_from` files on, files are read, pre-scanned and parsed by worker processes
    (gpudra.sources.files_pool), which start on this call and read a few batches ahead of the
    caller (`read_ahead`: the whole tree, for a caller that keeps every item and has other
    work meanwhile); the items, the stats and the order are the same. Close the iterator when
    it is left before its end."""
    entries = discover(paths, excludes, outputs=outputs)
    head = list(itertools.islice(entries, pool_from))
    if pool_pays(len(head), pool_from):
        return scan_pooled(itertools.chain(head, entries), stats=stats, stdin=stdin,
                           on_file=on_file, lines=lines, workers=usable_cpus(),
                           ahead=None if read_ahead else AHEAD)
    return scan_entries(itertools.chain(head, entries), stats=stats, stdin=stdin,
                        on_file=on_file, lines=lines)








@dataclass
class FileSource:
    """Manifest files and directories (and `-` for stdin) as a source."""

    paths: Iterable[str]
    excludes: Iterable[str] = ()
    stdin: Callable[[], bytes] | None = None
    on_file: Callable[[str], None] | None = None
    kind: str = "file"
    lines: bool = True  # False: objects without a line index (an inventory: nothing cites it)
    pool_from: int = POOL_FROM  # from this many files on, worker processes read them
    read_ahead: bool = False  # True: the workers read the whole tree ahead (see scan)
    stats: ScanStats = field(default_factory=ScanStats)
    read: list[str] = field(default_factory=list)  # the labels of every file read
    outputs: frozenset[str] = frozenset()  # real paths of the files this run writes: not input

    def __post_init__(self) -> None:
        self.paths = list(self.paths)  # read by the scan and again for `tree`

    def items(self) -> Iterator[Item]:
        return scan(self.paths, self.excludes, stats=self.stats, stdin=self.stdin,
                    on_file=self._seen, lines=self.lines, pool_from=self.pool_from,
                    read_ahead=self.read_ahead, outputs=self.outputs)

    def _seen(self, label: str) -> None:
        self.read.append(label)
        if self.on_file is not None:
            self.on_file(label)

    @property
    def tree(self) -> FileTree:
        return FileTree(tuple(self.paths), tuple(self.read))
