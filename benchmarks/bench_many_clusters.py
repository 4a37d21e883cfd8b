#!/usr/bin/env python3
"""`gpudra audit --context ... ` over several clusters: one at a time against concurrently.

    python benchmarks/bench_many_clusters.py [--clusters 3] [--latency 0.02] [--rounds 5]

Starts `--clusters` fake API servers (tests/fakeapi, plain HTTP, in this process), each with
tests/cluster/states/midmigration.yaml and every request answered `--latency` seconds late
(a cluster across a network; 0 for localhost), and writes one kubeconfig with a context per
server. Each round runs, alternated so drift hits both alike, as child processes:

  sequential  gpudra audit --context c0 ... --max-parallel 1 -o json
  concurrent  gpudra audit --context c0 ... --max-parallel N -o json   (N = --clusters)

Wall time per run, medians and the ratio. Correctness: both reports must parse, hold every
cluster with no error, and agree on every count. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.fakeapi import FakeCluster  # noqa: E402

STATE = REPO / "tests" / "cluster" / "states" / "midmigration.yaml"


def kubeconfig(servers: list[FakeCluster], token: str, path: Path) -> list[str]:
    names = [f"c{i}" for i in range(len(servers))]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": names[0],
        "clusters": [{"name": n, "cluster": {"server": s.url}} for n, s in zip(names, servers)],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in names]}))
    return names


def run(args: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"gpudra failed ({done.returncode}): {done.stderr}")
    return wall, json.loads(done.stdout)


def counts(report: dict) -> list:
    return [(c["name"], c["error"], c["summary"]["objects_read"], c["summary"]["findings"],
             c["summary"]["gpu_workloads"]) for c in report["clusters"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    state = yaml.safe_load(STATE.read_text())
    state.setdefault("faults", {})["latency"] = args.latency
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        servers = [stack.enter_context(FakeCluster(state, tls=False))
                   for _ in range(args.clusters)]
        names = kubeconfig(servers, state["token"], Path(tmp) / "kubeconfig")
        base = [sys.executable, "-m", "gpudra", "audit", "--kubeconfig",
                str(Path(tmp) / "kubeconfig"), "-q", "-o", "json"]
        for name in names:
            base += ["--context", name]
        modes = {"sequential": base + ["--max-parallel", "1"],
                 "concurrent": base + ["--max-parallel", str(args.clusters)]}
        requests = 0
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        reports: dict[str, dict] = {}
        run(modes["concurrent"])  # warm: bytecode, page cache
        for server in servers:
            server.clear_requests()
        for _ in range(args.rounds):
            for mode, command in modes.items():
                wall, reports[mode] = run(command)
                times[mode].append(wall)
        requests = sum(len(s.requests) for s in servers) // (2 * args.rounds)
    ok = counts(reports["sequential"]) == counts(reports["concurrent"]) and all(
        error is None for _, error, *_ in counts(reports["concurrent"]))
    print(f"{args.clusters} clusters (states/midmigration.yaml), {args.latency * 1000:g} ms "
          f"per request, {requests} requests per audit, {args.rounds} rounds")
    for mode, values in times.items():
        print(f"  {mode:<10}  median {statistics.median(values):6.2f} s   "
              f"min {min(values):6.2f}   max {max(values):6.2f}   "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(times["sequential"]) / statistics.median(times["concurrent"])
    print(f"  sequential / concurrent: {ratio:.2f}x")
    print(f"  reports agree, every cluster read: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
