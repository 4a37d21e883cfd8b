#!/usr/bin/env python3
"""`gpudra audit` of a whole cluster against `kubectl get pods -A -o json`, on one fake server.

    python benchmarks/bench_cluster_audit.py [--state FILE] [--rounds 5] [--gpudra PATH]

Without --state a cluster is generated with gen_cluster.py: 2,000 Deployments, 2,000
ReplicaSets, 20,000 pods (5% with GPUs), 500 nodes, DaemonSets, Jobs, CronJobs, quotas, DRA
objects. The fake API server (tests/fakeapi) runs as its own process over TLS. Each round runs,
one after the other (alternated, so drift hits both alike):

  gpudra   gpudra audit --kubeconfig K -o json: every resource type it reads, owner
           resolution, all rules, the JSON report (written to a file)
  kubectl  kubectl get pods -A -o json (chunks of 500), output to a file

Per run: wall time, CPU, peak RSS of the whole process. Correctness: the audit's JSON must
parse, report one GPU101 finding per GPU Deployment (not per pod), and read every object; the
kubectl output must hold every pod. The target (issue 7): gpudra's wall time <= kubectl's and
peak memory <= 200 MB. Numbers are printed, never asserted.
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
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_fakeapi import (
    count_kubectl_json,
    generated_state,
    kubectl_get_pods,
    run_rounds,
    start_server,
    state_meta,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="state file (default: generate one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gpudra", default=str(Path(sys.executable).with_name("gpudra")))
    parser.add_argument("--kubectl", default=shutil.which("kubectl"))
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-audit-"))
    try:
        return run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    state = args.state
    if state is None:
        state, meta = generated_state(workdir)
    else:
        meta = state_meta(state)
    pods = meta["kinds"]["Pod"]
    objects = sum(meta["kinds"].values())
    gpu_deployments = meta.get("gpu_deployments")
    kubeconfig = workdir / "kubeconfig"
    server, url, startup = start_server(state, kubeconfig)
    print(f"server {url} ready in {startup:.1f} s; {pods} pods, {objects} objects")
    clients = {"gpudra": [args.gpudra, "audit", "--kubeconfig", str(kubeconfig), "-o", "json",
                          "--fail-on", "never"]}
    if args.kubectl:
        clients["kubectl"] = [*kubectl_get_pods(args.kubectl, kubeconfig, workdir), "-o", "json"]
    env_home = {"HOME": str(workdir), "KUBECONFIG": ""}
    os.environ.update(env_home)

    def judge(name: str, out: Path, output: bytes) -> tuple[int, bool, str]:
        if name == "kubectl":
            seen = count_kubectl_json(out)
            return seen, seen == pods, f"pods {seen}"
        ok, detail = _check_audit(out, objects, gpu_deployments)
        return -1, ok, detail

    runs, failures = run_rounds(clients, args.rounds, server, workdir, judge)
    print(f"\nmedian of {args.rounds} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    medians = {}
    for name, series in runs.items():
        medians[name] = {"wall": statistics.median(r.wall for r in series),
                         "cpu": statistics.median(r.cpu for r in series),
                         "rss_mb": statistics.median(r.rss_mb for r in series)}
        print(f"{name:8} wall {medians[name]['wall']:6.2f} s  cpu {medians[name]['cpu']:6.2f} s  "
              f"rss {medians[name]['rss_mb']:6.0f} MB")
    if "kubectl" in medians:
        ratios = [g.wall / k.wall for g, k in zip(runs["gpudra"], runs["kubectl"])]
        print(f"gpudra/kubectl wall, per round: {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"median {statistics.median(ratios):.2f} (target <= 1.00); gpudra peak "
              f"{medians['gpudra']['rss_mb']:.0f} MB (target <= 200 MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(medians, indent=2) + "\n")
    return 1 if failures else 0


def _check_audit(out: Path, objects: int, gpu_deployments: int | None) -> tuple[bool, str]:
    try:
        report = json.loads(out.read_text())
    except ValueError:
        return False, "no JSON report"
    summary = report["summary"]
    deployments = {(f["namespace"], f["name"]) for f in report["findings"]
                   if f["rule"] == "GPU101" and f["kind"] == "Deployment"}
    per_pod = [f for f in report["findings"] if f["kind"] in ("Pod", "ReplicaSet")
               and f["rule"] == "GPU101"]
    ok = summary["objects_read"] >= objects * 0.95 and not per_pod and \
        (gpu_deployments is None or len(deployments) == gpu_deployments)
    return ok, (f"objects read {summary['objects_read']}, GPU Deployments {len(deployments)}, "
                f"findings {len(report['findings'])}, errors {len(report['errors'])}")


if __name__ == "__main__":
    sys.exit(main())
