"""The file source on every core: large trees are read, pre-scanned and parsed by worker
processes, and their items come back in the order one process would yield them.

The walk stays in this process (it is cheap and fixes the order). Its entries go out in
batches; each batch comes back as one message holding, per entry, the items it gave (most
files give none: the pre-scan found no needle) and the batch's stats, merged in batch order,
so that counts, skipped documents and every item are the same as
gpudra.sources.reading.scan_entries' in one process. Objects that share data (the items of a
List) are pickled together and so still share it.

convert takes the reading and the pre-scan (read_pooled), a file without a needle coming back
without its bytes; the function it hands over (`after`) plans and edits the others in the
workers too, and its result comes back with the file.

The workers start when the pool is made, before the caller takes the first item: it can do
other work meanwhile (plan reads its inventory while the workers read its tree).
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from gpudra.results.model import InputError
from gpudra.sources import Item, ScanStats
from gpudra.sources.discovery import STDIN, InputFile
from gpudra.sources.reading import ReadFile, load_items, read_entries, scan_entries
from gpudra.sources.workers import context

Entry = InputFile | InputError
# An entry as a batch carries it to a worker: an InputFile as its fields (label, path, chart,
# role), a third of the pickling of the dataclass
Sent = InputError | tuple[str, str | None, str | None, str]
# Entries per message: large enough that a message costs little beside the work (a few ms of
# reading), small enough that both workers start at once and the last batch ends soon.
BATCH = 500
# Batches read ahead of the caller: enough that no worker waits while the caller works through
# one, few enough that a slow caller (convert planning every GPU file) holds little.
AHEAD = 8


def scan_pooled(entries: Iterable[Entry], *, stats: ScanStats,
                stdin: Callable[[], bytes] | None = None,
                on_file: Callable[[str], None] | None = None, lines: bool = True,
                workers: int = 2, ahead: int | None = AHEAD) -> Pooled:
    """gpudra.sources.reading.scan_entries with `workers` processes, which start at once: the
    caller may do other work (plan reads its inventory) while they read, as far as `ahead`
    batches (Pooled). stdin (`-`) is read here, in its place: it belongs to this process."""
    def here(entry: InputFile) -> Iterator[Item]:
        return scan_entries([entry], stats=stats, stdin=stdin, on_file=on_file, lines=lines)

    return Pooled(entries, _scan_batch, lines, here, stats, on_file, workers, ahead)


def read_pooled(entries: Iterable[Entry], *, stats: ScanStats,
                stdin: Callable[[], bytes] | None = None,
                on_file: Callable[[str], None] | None = None,
                workers: int = 2,
                after: tuple[Callable[[ReadFile, Any], Any], Any] | None = None) -> Pooled:
    """gpudra.sources.reading.read_entries with `workers` processes reading and pre-scanning
    (convert, which parses what it edits itself). A file no needle picked comes back without
    its bytes: nothing reads them, and they would be most of the messages. `after` is
    read_all's: run by the worker on each file with text, its result rides back with it."""
    def here(entry: InputFile) -> Iterator[ReadFile | InputError]:
        return read_entries([entry], stats=stats, stdin=stdin, on_file=on_file)

    return Pooled(entries, _read_batch, after, here, stats, on_file, workers,
                  absent=(_WITHOUT_TEXT,))


class Pooled(Iterator[Any]):
    """What a batch function gives for each entry, in the entries' order, from `workers`
    processes that start on construction. At most `ahead` batches are read before the caller
    takes them (None: no bound, for a caller that keeps every item anyway), so memory does not
    grow when the caller is the slower. The pool ends with the last item, or with close()."""

    def __init__(self, entries: Iterable[Entry],
                 work: Callable[[tuple[list[Sent], Any]], tuple[ScanStats, dict[int, list[Any]]]],
                 option: Any, here: Callable[[InputFile], Iterator[Any]], stats: ScanStats,
                 on_file: Callable[[str], None] | None, workers: int,
                 ahead: int | None = AHEAD, absent: tuple[Any, ...] = ()) -> None:
        self._sent: collections.deque[list[Entry]] = collections.deque()  # the feeder appends
        # What the batch function is given with each batch: a batch takes the value this has
        # when the feeder hands it out, so a caller may change it while the pool reads.
        self.option = option
        self._room = threading.Semaphore(ahead) if ahead is not None else None
        self._absent = absent  # what an entry a batch's results leave out gave
        self._ended = False
        self._pool = context().Pool(workers)
        results = self._pool.imap(work, self._tasks(entries))
        self._items = self._drain(results, here, stats, on_file)

    def __next__(self) -> Any:
        return next(self._items)

    def close(self) -> None:
        self._items.close()
        self._end()

    def _end(self) -> None:
        if self._ended:  # close() after the last item, or twice
            return
        self._ended = True
        if self._room is not None:
            self._room.release()  # a feeder waiting for room returns (the pool joins it)
        self._pool.terminate()

    def _tasks(self, entries: Iterable[Entry]) -> Iterator[tuple[list[Sent], Any]]:
        """Run by the pool's feeder thread."""
        for batch in _batches(entries):
            if self._room is not None:
                self._room.acquire()
            if self._ended:
                return
            self._sent.append(batch)
            # Plain tuples: a third of the pickling of the dataclasses.
            yield [(e.label, e.path, e.chart, e.role) if isinstance(e, InputFile) else e
                   for e in batch], self.option

    def _drain(self, results: Iterator[tuple[ScanStats, dict[int, list[Any]]]],
               here: Callable[[InputFile], Iterator[Any]], stats: ScanStats,
               on_file: Callable[[str], None] | None) -> Generator[Any, None, None]:
        try:
            for batch_stats, found in results:
                batch = self._sent.popleft()
                if self._room is not None:
                    self._room.release()
                for index, entry in enumerate(batch):
                    if isinstance(entry, InputFile) and entry.label == STDIN:
                        yield from here(entry)
                        continue
                    if on_file is not None and isinstance(entry, InputFile):
                        on_file(entry.label)
                    for item in found.get(index, self._absent):
                        # A read file travels as (bytes, text, ahead): the parent has its
                        # entry.
                        yield ReadFile(entry, *item) if item.__class__ is tuple \
                            and isinstance(entry, InputFile) else item
                stats.add(batch_stats)
        finally:
            self._end()


def _batches(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    it = iter(entries)
    while batch := list(itertools.islice(it, BATCH)):
        yield batch


def _entries_of(batch: list[Sent]) -> Iterator[tuple[int, InputFile | InputError]]:
    """A batch's entries as the parent sent them, by index; stdin is the parent's to read."""
    for index, raw in enumerate(batch):
        entry = raw if isinstance(raw, InputError) else InputFile(*raw)
        if not (isinstance(entry, InputFile) and entry.label == STDIN):
            yield index, entry


def _scan_batch(task: tuple[list[Sent], bool]) -> tuple[ScanStats, dict[int, list[Item]]]:
    """In a worker: the items scan_entries gives for each entry of a batch, by the entry's
    index (most files give none)."""
    batch, lines = task
    stats = ScanStats()
    found: dict[int, list[Item]] = {}
    for index, entry in _entries_of(batch):
        items: list[Item] = []
        for read in read_entries([entry], stats=stats):
            if isinstance(read, InputError):
                items.append(read)
            else:
                items += load_items(read, stats, lines=lines)
        if items:
            found[index] = items
    return stats, found


def _read_batch(task: tuple[list[Sent], tuple[Callable[[ReadFile, Any], Any], Any] | None]
                ) -> tuple[ScanStats, dict[int, list[Any]]]:
    """In a worker: what read_entries gives for each entry of a batch, by the entry's index;
    a read file as (bytes, text, ahead), its bytes left out when it has no text, `ahead` what
    the caller's function made of it (read_pooled's `after`). An entry that gave only a file
    without text is left out."""
    batch, after = task
    stats = ScanStats()
    found: dict[int, list[Any]] = {}
    for index, entry in _entries_of(batch):
        items = [item if isinstance(item, InputError) else
                 _WITHOUT_TEXT if item.text is None else
                 (item.raw, item.text, after[0](item, after[1]) if after else None)
                 for item in read_entries([entry], stats=stats)]
        if items != [_WITHOUT_TEXT]:  # most files: left out, read_pooled's `absent`
            found[index] = items
    return stats, found


_WITHOUT_TEXT = (b"", None, None)  # a file read that no needle picked: nothing more to send
