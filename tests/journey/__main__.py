"""`python -m tests.journey build`: build (or find cached) kwok for the journey tests and print its
path. .ci/run calls it before the suite, beside the control plane's build."""

from __future__ import annotations

import sys
import time

from tests.controlplane.build import Unavailable
from tests.journey import kwok


def main(argv: list[str]) -> int:
    if argv != ["build"]:
        print("usage: python -m tests.journey build", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        path = kwok.binary()
        kwok.stage_configs()
    except Unavailable as error:
        print(f"kwok: {error}", file=sys.stderr)
        return 1
    print(path)
    print(f"kwok: ready in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
