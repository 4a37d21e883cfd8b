#!/usr/bin/env python3
"""`gpudra cutover --from FILE` for a fleet of 500 GPU nodes in 10 pools and 2,000 GPU
workloads (Jobs, Deployments with replicas, StatefulSets, some pinned to a pool).

    python benchmarks/bench_cutover.py [--nodes 500] [--workloads 2000] [--rounds 3]

Per run: wall time and peak RSS of the whole process, the waves found. The targets: under 30 s
at the defaults (issue 19), under 10 s at `--nodes 2000 --workloads 10000` (issue 32). Numbers
are printed, never asserted. The fleet is tests/verify/generated_fleet.py's benchmark_fleet,
which tests/verify/test_cutover_pinned.py also plans (at 60 nodes), pinning the output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.verify.generated_fleet import benchmark_fleet


def fleet(nodes: int, workloads: int, seed: int = 1) -> list[dict]:
    return benchmark_fleet(nodes, workloads, seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpudra", default=str(Path(sys.executable).with_name("gpudra")))
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-cutover-"))
    try:
        source = workdir / "fleet.json"
        items = fleet(args.nodes, args.workloads)
        source.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        wanted = sum((o["spec"].get("replicas") or o["spec"].get("parallelism") or 1)
                     * int(o["spec"]["template"]["spec"]["containers"][0]["resources"]
                           ["limits"]["nvidia.com/gpu"]) for o in items if o["kind"] != "Node")
        print(f"{args.nodes} nodes ({args.nodes * 8} GPUs), {args.workloads} workloads "
              f"requesting {wanted} GPUs")
        walls, peaks = [], []
        for round_index in range(args.rounds):
            out = workdir / "out.json"
            start = time.perf_counter()
            with open(out, "wb") as stdout:
                process = subprocess.Popen([args.gpudra, "cutover", "--from", str(source),
                                            "-o", "json"], stdout=stdout)
                _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
            report = json.loads(out.read_text())
            walls.append(wall)
            peaks.append(usage.ru_maxrss / 1024)
            print(f"round {round_index + 1} wall {wall:6.2f} s  rss {peaks[-1]:6.0f} MB  exit "
                  f"{os.waitstatus_to_exitcode(status)}  waves {len(report['waves'])}  "
                  f"complete {report['complete']}  moved "
                  f"{sum(len(w['workloads']) for w in report['waves'])}")
        print(f"\nmedian of {args.rounds} ({os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f}): wall {statistics.median(walls):.2f} s "
              f"(target < {30 if args.workloads <= 2000 else 10} s)"
              f", peak rss {statistics.median(peaks):.0f} MB")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
