"""`python -m tests.controlplane build`: build (or find cached) the control-plane binary of
each release (releases.py) and print their paths, ahead of the suite (which otherwise builds
what its tests need before the first one: tests/support/handover.py)."""

from __future__ import annotations

import sys

from tests.controlplane import build

if __name__ == "__main__":
    sys.exit(build.build_command(sys.argv[1:], "tests.controlplane", "controlplane",
                                 build.all_binaries))
