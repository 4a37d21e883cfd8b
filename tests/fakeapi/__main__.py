"""Run the fake API server as a process (for kubectl sessions and benchmarks).

    python -m tests.fakeapi --state FILE [--port N] [--kubeconfig-out FILE]

Prints the server URL as the first line of stdout, then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from . import FakeCluster, StateError
from .codec import ENCODER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, help="state file, YAML or JSON (default: empty)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: ephemeral)")
    parser.add_argument("--kubeconfig-out", type=Path, help="write a kubeconfig here")
    args = parser.parse_args(argv)
    try:
        cluster = FakeCluster(args.state, port=args.port, kubeconfig=args.kubeconfig_out)
    except StateError as error:
        print(f"fakeapi: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with cluster:
        counts = ", ".join(f"{len(c.entries)} {c.resource.plural}"
                           for c in cluster.api.store.collections.values() if c.entries)
        print(cluster.url, flush=True)
        print(f"fakeapi: Kubernetes {cluster.state.version} at {cluster.url} ({counts}; "
              f"encoder {ENCODER}); kubeconfig {cluster.kubeconfig}", file=sys.stderr, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
