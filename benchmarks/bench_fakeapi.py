#!/usr/bin/env python3
"""How fast the fake API server (tests/fakeapi) serves 20,000 pods, and what its clients cost.

    python benchmarks/bench_fakeapi.py [--state FILE] [--rounds 3] [--limit 500] [--seed 1]
                                       [--kubectl PATH] [--json OUT]

Without --state a cluster is generated with gen_cluster.py (2,000 Deployments, 20,000 pods)
into a temporary JSON file. The server runs as its own process (`python -m tests.fakeapi`),
so its CPU time can be read from /proc and never competes with a client for the GIL.

Each round runs these clients as child processes, one after the other:
  raw        http.client, paged GET /api/v1/pods?limit=N over TLS, bytes only (transport floor)
  raw+json   the same, plus json.loads of every page and a duplicate check
  client     official kubernetes client, list_pod_for_all_namespaces(limit=N,
             _preload_content=False) + json.loads, following continue
  kubectl    kubectl get pods -A -o json (kubectl pages by 500 itself), output to a file
  kubectl-n  kubectl get pods -A -o name
Reported per client: wall time, the child's CPU (user+sys), the server's CPU during the run,
and the child's peak RSS. Correctness: every client must see each pod exactly once; the exit
status is 1 if one does not. Timings are printed, never asserted. Linux only (/proc, wait4).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import resource
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON_CLIENTS = ("raw", "raw+json", "client")


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float  # the child's user+sys seconds
    server_cpu: float
    rss_mb: float
    pods: int  # pods the client saw (-1: not checked)


# --- the child side: python clients -----------------------------------------------------------

def _kubeconfig_target(kubeconfig: str) -> tuple[str, int, ssl.SSLContext, str]:
    import yaml

    document = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = document["clusters"][0]["cluster"]
    token = document["users"][0]["user"]["token"]
    host, port = cluster["server"].split("://", 1)[1].rsplit(":", 1)
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return host, int(port), context, token


def child(mode: str, kubeconfig: str, limit: int) -> None:
    """Run one Python client and print the number of distinct pods it saw."""
    if mode == "client":
        from kubernetes import client, config

        core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        seen: set[tuple[str, str]] = set()
        count, token = 0, None
        while True:
            response = core.list_pod_for_all_namespaces(limit=limit, _continue=token,
                                                        _preload_content=False)
            page = json.loads(response.data)
            count += len(page["items"])
            seen.update((p["metadata"]["namespace"], p["metadata"]["name"]) for p in page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        print(len(seen) if len(seen) == count else -2)
        return
    host, port, context, token_value = _kubeconfig_target(kubeconfig)
    connection = http.client.HTTPSConnection(host, port, context=context)
    headers = {"Authorization": f"Bearer {token_value}", "Accept": "application/json"}
    seen = set()
    count, cont = 0, ""
    while True:
        path = f"/api/v1/pods?limit={limit}" + (f"&continue={cont}" if cont else "")
        connection.request("GET", path, headers=headers)
        body = connection.getresponse().read()
        if mode == "raw":  # find the token without decoding the page
            start = body.find(b'"continue":"', 0, 512)
            cont = body[start + 12:body.index(b'"', start + 12)].decode() if start >= 0 else ""
            count = -1
        else:
            page = json.loads(body)
            count += len(page["items"])
            seen.update((p["metadata"]["namespace"], p["metadata"]["name"]) for p in page["items"])
            cont = page["metadata"].get("continue", "")
        if not cont:
            break
    print(-1 if mode == "raw" else (len(seen) if len(seen) == count else -2))


# --- the parent side --------------------------------------------------------------------------

def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(argv: list[str], server_pid: int, stdout_path: Path) -> tuple[Run, bytes]:
    before = server_cpu(server_pid)
    stderr_path = stdout_path.with_suffix(".err")
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({process.returncode}): "
                           f"{stderr_path.read_text()[-2000:]}")
    run = Run(wall, usage.ru_utime + usage.ru_stime, server_cpu(server_pid) - before,
              usage.ru_maxrss / 1024, -1)
    return run, stdout_path.read_bytes() if stdout_path.stat().st_size < 10_000_000 else b""


def count_kubectl_json(path: Path) -> int:
    """Pods in `kubectl -o json` output without decoding 170 MB: one kind line per item.

    Read in blocks: a child's peak RSS can't be below the parent's (see benchmarks/README.md),
    so the parent must stay small."""
    needle = b'\n            "kind": "Pod",\n'
    count, tail = 0, b""
    with open(path, "rb") as data:
        while block := data.read(1 << 20):
            chunk = tail + block
            count += chunk.count(needle)
            tail = chunk[-(len(needle) - 1):]  # too short to hold a whole match again
    return count


def generated_state(workdir: Path, seed: int = 1, options: Sequence[str] = ()
                    ) -> tuple[Path, dict]:
    """A cluster from gen_cluster.py (`options`: more of its arguments) and its meta (counts by
    kind). Generated in a child: a child's peak RSS can't be reported below the parent's."""
    state = workdir / "cluster.json"
    subprocess.run([sys.executable, str(HERE / "gen_cluster.py"), str(state), "--seed", str(seed),
                    *options], check=True, stdout=subprocess.DEVNULL)
    return state, state_meta(state)


def state_meta(state: Path) -> dict:
    return json.loads(Path(f"{state}.meta").read_text())


def kubectl_get_pods(kubectl: str, kubeconfig: Path, workdir: Path, chunk: int = 500
                     ) -> list[str]:
    """`kubectl get pods -A` paged like gpudra, with a cache directory of its own; add -o."""
    return [kubectl, f"--kubeconfig={kubeconfig}", f"--cache-dir={workdir / 'cache'}", "get",
            "pods", "-A", f"--chunk-size={chunk}"]


def run_rounds(clients: dict[str, list[str]], rounds: int, server: subprocess.Popen[str],
               workdir: Path, judge: Callable[[str, Path, bytes], tuple[int, bool, str]]
               ) -> tuple[dict[str, list[Run]], int]:
    """Each round runs every client once, one after the other (alternated, so drift hits all
    alike); `judge(name, stdout_path, stdout)` gives the pods seen, whether the output is right,
    and a note. Stops the server at the end. Returns the runs by client and the failures."""
    runs: dict[str, list[Run]] = {name: [] for name in clients}
    width = max(map(len, clients))
    failures = 0
    try:
        for round_index in range(rounds):
            for name, argv in clients.items():
                out = workdir / f"{name}.out"
                run, output = measure(argv, server.pid, out)
                pods, ok, note = judge(name, out, output)
                failures += not ok
                runs[name].append(Run(run.wall, run.cpu, run.server_cpu, run.rss_mb, pods))
                print(f"round {round_index + 1} {name:{width}} wall {run.wall:6.2f} s  cpu "
                      f"{run.cpu:6.2f} s  server cpu {run.server_cpu:5.2f} s  rss "
                      f"{run.rss_mb:6.0f} MB  {note}{'' if ok else '  CHECK FAILED'}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return runs, failures


def start_server(state: Path, kubeconfig: Path) -> tuple[subprocess.Popen[str], str, float]:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "tests.fakeapi", "--state", str(state),
                                "--kubeconfig-out", str(kubeconfig)],
                               cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url:
        raise RuntimeError("the fake API server did not start")
    return process, url, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="state file (default: generate one)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--kubectl", default=shutil.which("kubectl"))
    parser.add_argument("--json", type=Path, help="write the runs here")
    parser.add_argument("--child", choices=PYTHON_CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.kubeconfig, args.limit)
        return 0

    workdir = Path(tempfile.mkdtemp(prefix="bench-fakeapi-"))
    try:
        return run_benchmark(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_benchmark(args: argparse.Namespace, workdir: Path) -> int:
    state, expected = args.state, None
    if state is not None and Path(f"{state}.meta").exists():  # written by gen_cluster.py
        expected = state_meta(state)["kinds"]["Pod"]
    if state is None:
        start = time.perf_counter()
        state, meta = generated_state(workdir, args.seed)
        expected = meta["kinds"]["Pod"]
        print(f"generated {expected} pods ({state.stat().st_size / 1e6:.0f} MB JSON) "
              f"in {time.perf_counter() - start:.1f} s")
    kubeconfig = workdir / "kubeconfig"
    server, url, startup = start_server(state, kubeconfig)
    print(f"server {url} ready in {startup:.1f} s (load + encode)")
    clients: dict[str, list[str]] = {
        mode: [sys.executable, str(Path(__file__).resolve()), "--child", mode,
               "--kubeconfig", str(kubeconfig), "--limit", str(args.limit)]
        for mode in PYTHON_CLIENTS}
    if args.kubectl:
        base = kubectl_get_pods(args.kubectl, kubeconfig, workdir, args.limit)
        clients["kubectl"] = [*base, "-o", "json"]
        clients["kubectl-n"] = [*base, "-o", "name"]

    def judge(name: str, out: Path, output: bytes) -> tuple[int, bool, str]:
        if name == "kubectl":
            pods = count_kubectl_json(out)
        elif name == "kubectl-n":
            pods = len(set(output.split()))
        else:
            pods = int(output.strip() or -2)
        return pods, pods == -1 or expected is None or pods == expected, f"pods {pods}"

    runs, failures = run_rounds(clients, args.rounds, server, workdir, judge)
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nmedian of {args.rounds} (limit={args.limit}; {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}); server = the fake's own CPU while the client ran; "
          f"RSS floor (this script's peak) {floor:.0f} MB")
    print(f"{'client':10} {'wall s':>7} {'cpu s':>7} {'server s':>8} {'rss MB':>7}")
    for name, series in runs.items():
        print(f"{name:10} {statistics.median(r.wall for r in series):7.2f} "
              f"{statistics.median(r.cpu for r in series):7.2f} "
              f"{statistics.median(r.server_cpu for r in series):8.2f} "
              f"{statistics.median(r.rss_mb for r in series):7.0f}")
    if args.json:
        args.json.write_text(json.dumps({name: [r.__dict__ for r in series]
                                         for name, series in runs.items()}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
