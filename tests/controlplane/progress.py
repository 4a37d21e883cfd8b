"""Saying what a long build does while it does it: the control plane's (~15 min a release) and
kwok's (~5 min) builds, before the suite (.ci/run) or from the first test that needs them.

Issue 36: the README's second command printed nothing for a quarter of an hour while a test
waited on the build, or on another run's build lock. So a build says what it builds and how
long it usually takes before it starts, then every `every` seconds how long it has run and how
many Go packages it has compiled (`go build -v` names each); a lock held by another run says
who holds it (the holder writes its pid, what it builds and since when into the lock file)
and that this run waits, and says so again while it waits.

Where the lines go is the caller's `say`: stderr from `python -m tests.controlplane build`,
the terminal past pytest's output capture from the suite (tests/conftest.py).
"""

from __future__ import annotations

import collections
import fcntl
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, UTC
from pathlib import Path

Say = Callable[[str], None]
Clock = Callable[[], float]

HEARTBEAT = 30.0  # seconds between two "still building" lines
LOCK_POLL = 1.0  # seconds between two tries of a held lock


class BuildFailed(Exception):
    """The build step exited non-zero; the message ends with its stderr's last lines."""


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `1h02m`: elapsed times in progress lines."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


@contextmanager
def held_lock(path: Path, holder: str, say: Say, *, every: float = HEARTBEAT,
              poll: float = LOCK_POLL, clock: Clock = time.monotonic,
              sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
    """Hold the exclusive lock `path` (one build at a time across runs), saying who holds it
    when another run does and that this one waits. While held, the file names `holder`."""
    with open(path, "a+") as lock:  # never "w": that would erase the holder's note
        started = clock()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            said = clock()
            say(f"waiting for {path}: held by {_holder(lock)}; this run goes on when it is "
                "released (the holder builds what this run needs, then it is cached)")
            while True:
                sleep(poll)
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if clock() - said >= every:
                        said = clock()
                        say(f"still waiting for {path} ({duration(said - started)}): held by "
                            f"{_holder(lock)}")
            say(f"got {path} after {duration(clock() - started)}")
        try:
            lock.seek(0)
            lock.truncate()
            lock.write(f"pid {os.getpid()} ({holder}) since "
                       f"{datetime.now(UTC):%H:%M:%S} UTC\n")
            lock.flush()
            yield
        finally:
            lock.seek(0)
            lock.truncate()
            lock.flush()
            fcntl.flock(lock, fcntl.LOCK_UN)


def _holder(lock) -> str:
    lock.seek(0)
    note = lock.read().strip()
    return note or "another process (it left no note: an older checkout's build?)"


def run_build(argv: list[str], what: str, estimate: str, say: Say, *,
              cwd: Path | None = None, env: Mapping[str, str] | None = None,
              nice: bool = False, every: float = HEARTBEAT, timeout: float | None = None,
              clock: Clock = time.monotonic) -> str:
    """Run a build step that names each package it compiles on stderr (`go build -v`),
    saying `what` and `estimate` first, a progress line every `every` seconds, and how long
    it took at the end. Returns its stdout; raises BuildFailed when it exits non-zero or
    runs past `timeout` seconds (then it is killed)."""
    say(f"building {what} (usually {estimate}); a line every {duration(every)} until done")
    started = clock()
    # A cold build takes both cores for a quarter of an hour: at low priority, so the machine
    # stays usable meanwhile.
    process = subprocess.Popen(argv, cwd=cwd, env=dict(env) if env is not None else None,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=(lambda: os.nice(10)) if nice else None)
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []
    readers = [threading.Thread(target=_pump, args=(process.stderr, lines), daemon=True),
               threading.Thread(target=lambda: output.append(process.stdout.read()),
                                daemon=True)]
    for reader in readers:
        reader.start()
    packages, last = 0, ""
    tail: collections.deque[str] = collections.deque(maxlen=40)
    beat = started
    while True:
        try:
            # At least a tick between two waits: a clock that runs fast (a test's) never spins.
            line = lines.get(timeout=max(0.05, beat + every - clock()))
        except queue.Empty:
            line = ""
        if line is None:
            break
        if line:
            tail.append(line)
            if _is_package(line):
                packages, last = packages + 1, line
        if timeout is not None and clock() - started > timeout:
            process.kill()
            process.wait()
            raise BuildFailed(f"{' '.join(argv[:2])} took more than {duration(timeout)}: "
                              + "\n".join(tail)[-2000:])
        if clock() - beat >= every:
            beat = clock()
            say(f"still building {what}: {duration(beat - started)} of {estimate}, "
                f"{packages} packages compiled" + (f" (last: {last})" if last else
                                                   " (downloading modules or linking)"))
    for reader in readers:
        reader.join()
    code = process.wait()
    if code != 0:
        raise BuildFailed(f"{' '.join(argv[:2])} failed ({code}): " + "\n".join(tail)[-2000:])
    say(f"built {what} in {duration(clock() - started)} ({packages} packages compiled)")
    return "".join(output)


def _pump(stream, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _is_package(line: str) -> bool:
    # `go build -v` prints each package's import path alone on a line; errors and download
    # notes have spaces or colons.
    return bool(line) and " " not in line and ":" not in line
