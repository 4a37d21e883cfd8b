#!/usr/bin/env python3
"""`gpudra verify` of a whole cluster against `gpudra audit` of the same cluster, on one fake
server.

    python benchmarks/bench_verify.py [--state FILE] [--deployments 10000] [--claim-percent 10]
                                      [--rounds 3] [--gpudra PATH] [--against PATH]

Without --state the cluster is gen_cluster.py's (`--deployments` Deployments of 10 pods: by
default 10,000, so 100,000 pods, as the live audit row of bench_table.py; 5% of the
Deployments with GPUs, 500 nodes of which 20 run the DRA driver, DaemonSets, Jobs, quotas)
in mid-migration: `--claim-percent` (default 10) of the GPU Deployments are on
ResourceClaimTemplates, their pods Running on the DRA nodes with allocated claims while devices
last and Pending with an unallocated claim and a FailedScheduling event after that. Each round
runs, alternated:

  audit    gpudra audit --kubeconfig K -o json   (the reference)
  verify   gpudra verify --kubeconfig K -o json  (its exit 1, "a workload is not running on
           its claims", counts as a normal result: run through `sh -c`)

With `--against PATH` (another build's gpudra, e.g. main's), each round also runs that build's
audit and verify, so both builds' ratios come from the same rounds (the machine's drift hits
both alike); both builds' reports must be byte-identical but for `read_at`.

Per run: wall time, CPU, peak RSS. Correctness: verify's JSON must parse and judge at least
one workload; on a generated cluster, the workloads on claims and the ones among them that are
not running must be the generator's counts. The target (issue 32): on 100,000 pods verify
takes at most 1.1x the audit's time (issue 19's was 1.5x on 20,000 pods); the medians of both
and the ratios, wall and CPU (the steady one on a shared machine), are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.bench_fakeapi import generated_state, run_rounds, start_server, state_meta

TARGET = 1.10  # verify / audit of the same cluster (issue 32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="state file (default: generate one)")
    parser.add_argument("--deployments", type=int, default=10000,
                        help="for a generated cluster: Deployments of 10 pods (default 10,000: "
                             "100,000 pods)")
    parser.add_argument("--claim-percent", type=float, default=10.0,
                        help="for a generated cluster: percent of the GPU Deployments on "
                             "claims (default 10)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpudra", default=str(Path(sys.executable).with_name("gpudra")))
    parser.add_argument("--against", help="another build's gpudra, alternated in each round")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    try:
        return run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    options = ["--claim-percent", str(args.claim_percent), "--deployments", str(args.deployments)]
    state, meta = (generated_state(workdir, options=options)
                   if args.state is None else (args.state, state_meta(args.state)))
    kubeconfig = workdir / "kubeconfig"
    server, url, startup = start_server(state, kubeconfig)
    print(f"server {url} ready in {startup:.1f} s; {meta['kinds']['Pod']} pods, "
          f"{sum(meta['kinds'].values())} objects; GPU Deployments {meta['gpu_deployments']}, "
          f"on claims {meta.get('claim_deployments', 0)} ({meta.get('claim_pods', 0)} pods, "
          f"{meta.get('claim_pods_pending', 0)} Pending, in "
          f"{meta.get('claim_deployments_pending', 0)} Deployments), FailedScheduling events "
          f"{meta.get('failed_scheduling_events', 0)}")
    os.environ.update({"HOME": str(workdir), "KUBECONFIG": ""})
    builds = {"": args.gpudra, **({"@against": args.against} if args.against else {})}
    clients: dict[str, list[str]] = {}
    for suffix, gpudra in builds.items():
        verify = f"{gpudra} verify --kubeconfig {kubeconfig} -o json -q; test $? -le 1"
        clients[f"audit{suffix}"] = [gpudra, "audit", "--kubeconfig", str(kubeconfig), "-o",
                                     "json", "--fail-on", "never", "-q"]
        clients[f"verify{suffix}"] = ["sh", "-c", verify]
    reports: dict[str, bytes] = {}

    def judge(name: str, out: Path, output: bytes) -> tuple[int, bool, str]:
        try:
            report = json.loads(out.read_text())
        except ValueError:
            return -1, False, "no JSON report"
        kind = name.partition("@")[0]
        text = _READ_AT.sub(b"", out.read_bytes())
        same = reports.setdefault(kind, text) == text  # every build, every round
        if not same:
            return -1, False, "not the same report as the first run's (read_at aside)"
        if kind == "audit":
            return -1, True, f"findings {len(report['findings'])}"
        summary = report["summary"]
        ok = summary["workloads"] > 0
        if "claim_deployments" in meta:  # a generated cluster: its counts are known
            ok = ok and (summary["on_claims"], summary["not_ok"]) == (
                meta["claim_deployments"], meta["claim_deployments_pending"])
        return -1, ok, (
            f"workloads {summary['workloads']} (ok {summary['ok']}, not ok "
            f"{summary['not_ok']}, on claims {summary['on_claims']}, device plugin "
            f"{summary['on_device_plugin']}), objects read {summary['objects_read']}")

    runs, failures = run_rounds(clients, args.rounds, server, workdir, judge)
    print(f"\nmedian of {args.rounds} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    for name, series in runs.items():
        print(f"{name:7} wall {statistics.median(r.wall for r in series):6.2f} s  cpu "
              f"{statistics.median(r.cpu for r in series):6.2f} s  peak rss "
              f"{statistics.median(r.rss_mb for r in series):6.0f} MB")
    for suffix, gpudra in builds.items():
        for unit in ("wall", "cpu"):
            ratios = [getattr(v, unit) / getattr(a, unit)
                      for v, a in zip(runs[f"verify{suffix}"], runs[f"audit{suffix}"])]
            median = statistics.median(ratios)
            # The least of each: what a neighbour's load added least to (it only ever adds)
            least = min(getattr(v, unit) for v in runs[f"verify{suffix}"]) / min(
                getattr(a, unit) for a in runs[f"audit{suffix}"])
            print(f"{gpudra}: verify/audit {unit}, per round: "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}; median {median:.2f} (target <= "
                  f"{TARGET:.2f}: {'met' if median <= TARGET else 'MISSED'}); least against "
                  f"least {least:.2f}")
    return 1 if failures else 0


_READ_AT = re.compile(rb'"read_at": "[^"]*"')


if __name__ == "__main__":
    sys.exit(main())
