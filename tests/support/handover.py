"""The Go parts a run needs, built once by the pytest-xdist controller, on its terminal.

Under `-n 2` (pyproject.toml's addopts: the README's second command and .ci/run are the same
`python -m pytest`) the controller collects nothing: each worker collects, and a worker's lines
never reach the terminal. A cold build (the control planes, kwok, the oracles: ~15 minutes a
release) inside a worker would sit silent, and two workers would queue on its lock. So a worker
writes what its collection needs (tool name -> how many tests need it) into a directory the
controller gave it, before it tells the controller its collection is done; on the first worker's
collection the controller reads that, then builds (or finds cached) what is needed, saying so, before
xdist hands any test out. A serial run (`-n 0`) still prepares in its own collection hook.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import progress
from tests.support import toolchain

# the workerinput key naming the directory the workers write their needs into
WORKERINPUT_KEY = "gpudra_toolchain_needs"
_DIRECTORY = pytest.StashKey[Path]()
_PREPARED = pytest.StashKey[bool]()


def directory(config: pytest.Config) -> Path:
    """The controller's hand-over directory (made on first use; `remove` deletes it)."""
    if _DIRECTORY not in config.stash:
        config.stash[_DIRECTORY] = Path(tempfile.mkdtemp(prefix="gpudra-needs-"))
    return config.stash[_DIRECTORY]


def remove(config: pytest.Config) -> None:
    """Delete the hand-over directory, if this run made one."""
    if _DIRECTORY in config.stash:
        shutil.rmtree(config.stash[_DIRECTORY], ignore_errors=True)


def _file(folder: Path, worker: str) -> Path:
    return folder / f"{worker}.json"


def record(workerinput: Mapping[str, Any], wanted: dict[str, tuple[toolchain.Tool, int]]) -> None:
    """On a worker: write what its collection needs where the controller reads it."""
    folder = Path(workerinput[WORKERINPUT_KEY])
    counts = {name: count for name, (_, count) in wanted.items()}
    _file(folder, str(workerinput["workerid"])).write_text(json.dumps(counts))


def read(folder: Path, worker: str) -> dict[str, tuple[toolchain.Tool, int]]:
    """On the controller: what `worker` recorded, as toolchain.needed returns it; a name this
    checkout does not know is left out (the file is the run's own, written by its workers), and
    a worker that wrote nothing (its collection failed: pytest reports it) needs nothing."""
    path = _file(folder, worker)
    if not path.exists():
        return {}
    counts = json.loads(path.read_text())
    return {name: (toolchain.TOOLS[name], int(count)) for name, count in counts.items()
            if name in toolchain.TOOLS}


def prepare_once(config: pytest.Config, worker: str, say: progress.Say) -> None:
    """On the controller, at a worker's end of collection: build what the run needs, once."""
    if config.stash.get(_PREPARED, False):
        return
    config.stash[_PREPARED] = True
    toolchain.stop_if_required(toolchain.provide(read(directory(config), worker), say))
