#!/usr/bin/env python3
"""What the test control plane (tests/controlplane) costs the suite: its bring-up, a request
on a kept-alive connection against one that opens a connection (a TLS handshake) each time.

    python benchmarks/bench_controlplane.py [--requests 300]

Needs the cached Kubernetes 1.37 control plane (`python -m tests.controlplane build`). Prints
wall seconds, and CPU seconds of this process (the client's side); the API server's CPU is in
its own process and is not counted. On the shared 2-core machine wall times carry its noise:
compare CPU, and runs made one after the other. Nothing is enforced: the exit status is 1
only when the control plane cannot start.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.controlplane import build  # noqa: E402
from tests.controlplane.cluster import Client, ControlPlane  # noqa: E402
from tests.controlplane.releases import NEWEST  # noqa: E402


def measured(what: str, work: Callable[[], object], count: int = 1) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    each = f" ({wall / count * 1000:.1f} ms wall, {cpu / count * 1000:.2f} ms CPU each)" \
        if count > 1 else ""
    print(f"{what:<52} {wall:7.2f} s wall {cpu:7.2f} s CPU{each}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    try:
        binary = build.binary(NEWEST)
    except build.Unavailable as error:
        print(f"bench_controlplane: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-controlplane-") as tmp:
        plane = ControlPlane(binary, Path(tmp))
        measured("bring-up (etcd, API server, scheduler, KCM)", plane.start)
        try:
            client: Client = plane.admin

            def fresh() -> None:
                for _ in range(args.requests):
                    client._drop()  # what every request did before keep-alive: a handshake
                    client.get("/api/v1/namespaces/default")

            def kept() -> None:
                for _ in range(args.requests):
                    client.get("/api/v1/namespaces/default")

            measured(f"{args.requests} GETs, a new connection each", fresh, args.requests)
            measured(f"{args.requests} GETs, one kept-alive connection", kept, args.requests)

        finally:
            measured("stop", plane.stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
