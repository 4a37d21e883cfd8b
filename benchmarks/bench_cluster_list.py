#!/usr/bin/env python3
"""gpudra's cluster access layer listing every pod, against `kubectl get pods -A -o json`.

    python benchmarks/bench_cluster_list.py [--state FILE] [--rounds 3] [--no-kubectl]

Without --state a cluster is generated with gen_cluster.py (20,000 pods) into a temporary
file. The fake API server (tests/fakeapi) runs as its own process over TLS, as in
bench_fakeapi.py, whose process helpers this script reuses. Each round runs, as child
processes one after the other:

  gpudra       connect() + discovery + cluster.list(pods), all namespaces, limit=500: the
               objects are iterated page by page and counted (each uid must appear once)
  gpudra-orjson  the same with orjson.loads swapped in (a comparison; gpudra uses json)
  kubectl      kubectl get pods -A -o json (chunks of 500), output to a file

Reported per client: wall time, CPU (user+sys), peak RSS; the whole process, imports included.
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
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


def child(kubeconfig: str, parser: str) -> None:
    """List every pod with gpudra's layer; print the number of distinct pods."""
    started = time.perf_counter()
    from gpudra.cluster import ClusterOptions, connect

    if parser == "orjson":  # for comparison only: gpudra decodes with json
        import orjson

        from gpudra.cluster import jsonparse

        jsonparse._loads = orjson.loads
    imported = time.perf_counter()
    uids: set[str] = set()
    count = 0
    cluster = connect(ClusterOptions(kubeconfig=kubeconfig, all_namespaces=True))
    connected = time.perf_counter()  # the kubernetes import and the kubeconfig load
    with cluster:
        pods = cluster.resource("", "pods")
        assert pods is not None
        listing = cluster.list(pods)
        for page in listing:
            count += len(page)
            uids.update(pod["metadata"]["uid"] for pod in page)
            assert page[0]["kind"] == "Pod" and page[0]["apiVersion"] == "v1"
        assert listing.complete and not cluster.errors
    done = time.perf_counter()
    print(len(uids) if len(uids) == count else -2)
    print(f"import {imported - started:.2f} s, connect {connected - imported:.2f} s, "
          f"discover+list {done - connected:.2f} s, {listing.pages} pages", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="state file (default: generate one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kubectl", default=shutil.which("kubectl"))
    parser.add_argument("--no-kubectl", action="store_true")
    parser.add_argument("--child", choices=("json", "orjson"), help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.kubeconfig, args.child)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-list-"))
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
    expected = meta["kinds"]["Pod"]
    kubeconfig = workdir / "kubeconfig"
    server, url, startup = start_server(state, kubeconfig)
    print(f"server {url} ready in {startup:.1f} s; {expected} pods")
    me = [sys.executable, str(Path(__file__).resolve()), "--kubeconfig", str(kubeconfig)]
    clients: dict[str, list[str]] = {"gpudra": [*me, "--child", "json"]}
    try:
        import orjson  # noqa: F401

        clients["gpudra-orjson"] = [*me, "--child", "orjson"]
    except ImportError:
        print("orjson not installed: gpudra-orjson skipped")
    if args.kubectl and not args.no_kubectl:
        clients["kubectl"] = [*kubectl_get_pods(args.kubectl, kubeconfig, workdir), "-o", "json"]

    def judge(name: str, out: Path, output: bytes) -> tuple[int, bool, str]:
        if name == "kubectl":
            pods = count_kubectl_json(out)
            return pods, pods == expected, f"pods {pods}"
        pods = int(output.split()[0] or -2)
        timings = (out.with_suffix(".err").read_text().strip().splitlines() or [""])[-1]
        return pods, pods == expected, f"pods {pods}  {timings}"

    runs, failures = run_rounds(clients, args.rounds, server, workdir, judge)
    print(f"\nmedian of {args.rounds} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print(f"{'client':14} {'wall s':>7} {'cpu s':>7} {'rss MB':>7}")
    for name, series in runs.items():
        print(f"{name:14} {statistics.median(r.wall for r in series):7.2f} "
              f"{statistics.median(r.cpu for r in series):7.2f} "
              f"{statistics.median(r.rss_mb for r in series):7.0f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
