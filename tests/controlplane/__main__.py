"""`python -m tests.controlplane build`: build (or find cached) the control-plane binary of
each release (releases.py) and print their paths. .ci/run calls it before the suite, so a cold
build is not counted as test time."""

from __future__ import annotations

import sys

from tests.controlplane import build

if __name__ == "__main__":
    sys.exit(build.build_command(sys.argv[1:], "tests.controlplane", "controlplane",
                                 build.all_binaries))
