"""`python -m tests.journey build`: build (or find cached) kwok for the journey tests and print its
path, ahead of the suite (which otherwise builds it before the first journey test)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.controlplane.build import build_command
from tests.journey import kwok


def _kwok_and_its_stages() -> Path:
    path = kwok.binary()
    kwok.stage_configs()  # the module download, checked before any test needs it
    return path


if __name__ == "__main__":
    sys.exit(build_command(sys.argv[1:], "tests.journey", "kwok", _kwok_and_its_stages))
