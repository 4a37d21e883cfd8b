"""The journeys' numbers for the closing note of a migration: per cluster, strategy and wave, how
long the runbook's block took to run as written (wall time, the waits included) and how many
manifests the strategy changed in that wave, as JSON lines appended to the file that
GPUDRA_JOURNEY_RECORD names (default off: nothing is written). The machine's load average is
recorded with each line: the journeys share their machine, and the seconds mean little
without it. Numbers are measured, never asserted (no timed assertion in a test)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "GPUDRA_JOURNEY_RECORD"

# What a wave's folder holds that the strategy changed (gpudra.cutover.manifests and
# gpudra.cutover.bridge: the layout `gpudra cutover --output-dir` writes), by the name recorded.
CHANGED = {
    "workloads": ("converted/replace", "converted/recreate"),
    "claim_templates": ("converted/claims",),
    "quotas": ("converted/quotas",),
    "device_classes": ("mapping",),
}
UNCHANGED = ("bridged",)  # the workloads left as they are for the bridge (restarted, not edited)


def _files(folder: Path) -> int:
    return sum(1 for path in folder.rglob("*") if path.is_file()) if folder.is_dir() else 0


def manifests(output_dir: Path, wave: int) -> dict[str, int]:
    """Per kind of change, how many files the wave's folder holds; `unchanged`: the workloads
    it restarts as they are."""
    where = output_dir / f"wave-{wave}"
    counted = {name: sum(_files(where / sub) for sub in subs) for name, subs in CHANGED.items()}
    return {**counted, "changed": sum(counted.values()),
            "unchanged": sum(_files(where / sub) for sub in UNCHANGED)}


@dataclass(frozen=True)
class Record:
    """Where one journey's lines go: its cluster, strategy and cutover output directory."""

    cluster: str
    strategy: str
    output_dir: Path

    @contextmanager
    def timed(self, wave: int, block: str, output_dir: Path | None = None) -> Iterator[None]:
        """Times the body (one wave's Steps or Rollback, run as written) and appends its line
        when GPUDRA_JOURNEY_RECORD names a file and the body succeeded. `output_dir`: the
        cutover run that wrote this wave, when not the record's (a second plan)."""
        start = time.monotonic()
        yield
        seconds = time.monotonic() - start
        path = os.environ.get(ENV)
        if path:
            append(Path(path), self.line(wave, block, seconds, output_dir))

    def line(self, wave: int, block: str, seconds: float, output_dir: Path | None = None
             ) -> dict[str, Any]:
        return {"cluster": self.cluster, "strategy": self.strategy, "wave": wave,
                "block": block, "seconds": round(seconds, 2),
                "manifests": manifests(output_dir or self.output_dir, wave),
                "load1": round(os.getloadavg()[0], 2)}


def append(path: Path, line: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")
