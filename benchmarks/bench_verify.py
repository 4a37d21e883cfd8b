#!/usr/bin/env python3
"""`gpudra verify` of a whole cluster against `gpudra audit` of the same cluster, on one fake
server.

    python benchmarks/bench_verify.py [--state FILE] [--rounds 3] [--gpudra PATH]

Without --state the cluster is gen_cluster.py's: 2,000 Deployments, 20,000 pods (5% with
GPUs), 500 nodes, DaemonSets, Jobs, quotas, DRA objects. Each round runs, alternated:

  audit    gpudra audit --kubeconfig K -o json   (the reference)
  verify   gpudra verify --kubeconfig K -o json  (its exit 1, "a workload is not running on
           its claims", counts as a normal result: run through `sh -c`)

Per run: wall time, CPU, peak RSS. Correctness: verify's JSON must parse and judge at least
one workload. The target (issue 19): verify's wall time within 1.5x the audit's. Numbers are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.bench_fakeapi import generated_state, run_rounds, start_server, state_meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="state file (default: generate one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpudra", default=str(Path(sys.executable).with_name("gpudra")))
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    try:
        return run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    state, meta = (generated_state(workdir) if args.state is None
                   else (args.state, state_meta(args.state)))
    kubeconfig = workdir / "kubeconfig"
    server, url, startup = start_server(state, kubeconfig)
    print(f"server {url} ready in {startup:.1f} s; {meta['kinds']['Pod']} pods, "
          f"{sum(meta['kinds'].values())} objects")
    os.environ.update({"HOME": str(workdir), "KUBECONFIG": ""})
    verify = f"{args.gpudra} verify --kubeconfig {kubeconfig} -o json -q; test $? -le 1"
    clients = {"audit": [args.gpudra, "audit", "--kubeconfig", str(kubeconfig), "-o", "json",
                         "--fail-on", "never", "-q"],
               "verify": ["sh", "-c", verify]}

    def judge(name: str, out: Path, output: bytes) -> tuple[int, bool, str]:
        try:
            report = json.loads(out.read_text())
        except ValueError:
            return -1, False, "no JSON report"
        if name == "audit":
            return -1, True, f"findings {len(report['findings'])}"
        summary = report["summary"]
        return -1, summary["workloads"] > 0, (
            f"workloads {summary['workloads']} (ok {summary['ok']}, not ok "
            f"{summary['not_ok']}, device plugin {summary['on_device_plugin']}), objects "
            f"read {summary['objects_read']}")

    runs, failures = run_rounds(clients, args.rounds, server, workdir, judge)
    medians = {name: (statistics.median(r.wall for r in series),
                      statistics.median(r.rss_mb for r in series))
               for name, series in runs.items()}
    print(f"\nmedian of {args.rounds} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    for name, (wall, rss) in medians.items():
        print(f"{name:7} wall {wall:6.2f} s  peak rss {rss:6.0f} MB")
    ratios = [v.wall / a.wall for v, a in zip(runs["verify"], runs["audit"])]
    print(f"verify/audit wall, per round: {', '.join(f'{r:.2f}' for r in ratios)}; median "
          f"{statistics.median(ratios):.2f} (target <= 1.50)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
