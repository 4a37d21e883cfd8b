"""Worker processes of the file source: when they pay, whether this process may start them,
how they start, and the documents of one big file parsed by them (parse_ahead).

One big YAML file (an inventory of 100,000 devices) is one entry, so its documents are
handed out instead: workers parse them in batches while the caller takes them in order;
nothing else about the file's reading changes. The pools of many files are `files_pool`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from gpudra.sources.documents import Chunk, ParsedDocument, ParseError, parse_chunk

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

    from gpudra.k8s.objects import LineIndex

# A chunk's parse as a worker sends it back: (True, data, lines), or its ParseError as
# (False, message, line, not_an_object) (the exception itself does not survive pickling).
_Outcome = tuple[Literal[True], Any, "LineIndex"] | tuple[Literal[False], str, int | None, bool]

CHUNK_BATCH = 100  # documents of one big file per message


def pool_pays(size: int, threshold: int) -> bool:
    """Worker processes for work of `size` (files, or a file's characters): from `threshold`
    on, and only with another CPU to run them on."""
    return size >= threshold and usable_cpus() > 1


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def pool_allowed() -> bool:
    """False in a worker of a pool (its processes cannot have children)."""
    import multiprocessing  # here: a run that starts no worker never pays for its import

    return not multiprocessing.current_process().daemon


def context() -> BaseContext:
    """The start method of every pool: fork where there is one (the workers inherit what the
    parent imported)."""
    import multiprocessing  # here: a run that starts no worker never pays for its import

    return multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else None)


def parse_ahead(chunks: list[Chunk], *, lines: bool = True,
                workers: int = 2) -> Callable[[Chunk], ParsedDocument]:
    """A parse_chunk for `chunks` (in their order) that workers run ahead of the caller; it
    raises the ParseError parse_chunk raised. The pool ends with the last chunk taken."""
    if not chunks:
        return parse_chunk
    batches = [chunks[i:i + CHUNK_BATCH] for i in range(0, len(chunks), CHUNK_BATCH)]
    results = _parsed_in_order(batches, lines, workers)
    done: dict[int, _Outcome] = {}

    def parse(chunk: Chunk) -> ParsedDocument:
        while chunk.first_line not in done:
            first_line, outcome = next(results)
            done[first_line] = outcome
        result = done.pop(chunk.first_line)
        if result[0] is False:
            raise ParseError(result[1], result[2], result[3])
        return ParsedDocument(result[1], result[2], chunk)

    return parse


def _parsed_in_order(batches: list[list[Chunk]], lines: bool,
                     workers: int) -> Iterator[tuple[int, _Outcome]]:
    with context().Pool(min(workers, len(batches))) as pool:
        for parsed in pool.imap(_parse_batch, ((batch, lines) for batch in batches)):
            yield from parsed


def _parse_batch(task: tuple[list[Chunk], bool]) -> list[tuple[int, _Outcome]]:
    """In a worker: each chunk's (True, data, lines), without the chunk's text, which the
    parent has; or its ParseError as (False, message, line, not_an_object) (the exception
    itself does not survive pickling)."""
    batch, lines = task
    out: list[tuple[int, _Outcome]] = []
    for chunk in batch:
        try:
            parsed = parse_chunk(chunk, lines=lines)
        except ParseError as exc:
            out.append((chunk.first_line, (False, exc.message, exc.line, exc.not_an_object)))
        else:
            out.append((chunk.first_line, (True, parsed.data, parsed.lines)))
    return out
