"""`python -m tests.controlplane build`: build (or find cached) the control-plane binary and
print its path. .ci/run calls it before the suite, so a cold build is not counted as test time."""

from __future__ import annotations

import sys
import time

from tests.controlplane import build


def main(argv: list[str]) -> int:
    if argv != ["build"]:
        print("usage: python -m tests.controlplane build", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        path = build.binary()
    except build.Unavailable as error:
        print(f"controlplane: {error}", file=sys.stderr)
        return 1
    print(path)
    print(f"controlplane: ready in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
