#!/usr/bin/env python3
"""Benchmark `gpudra audit TREE -o json` against `grep -rlF nvidia.com/ TREE`.

    python benchmarks/bench_audit.py [--tree DIR] [--files 10000] [--seed 1] [--rounds 5]
                                     [--startup-runs 10] [--gpudra PATH] [--keep] [--json OUT]

Without --tree a tree is generated with gen_tree.py in a temporary directory (removed at the
end unless --keep). The page cache is warmed (every file read once, then one untimed run of
each command), then grep and audit run alternately, --rounds times each, as child processes.
For every child the wall time (time.perf_counter around spawn..reap) and the peak RSS
(ru_maxrss from os.wait4) are recorded. The audit's JSON is parsed and checked against the
generator's expectations (gen_tree.meta): finding count == number of GPU requests.
With taskset on a machine of several CPUs, `audit-1cpu` (the same audit pinned to one CPU,
so the file source stays in one process) alternates with them: the pool's gain, wall and CPU.
Finally `gpudra --version`, a one-file audit, `python -c 'import yaml'` and a bare
`python -c pass` are timed (--startup-runs each, alternated).

Children run without PYTHONDONTWRITEBYTECODE, so the warm-up run leaves __pycache__ behind
and the timed runs import compiled bytecode, as an installed gpudra does. Peak RSS on Linux
cannot be lower than this script's own peak (printed as the RSS floor).

Targets (issues 2 and 18): audit median wall time within 5x of grep's, and within 3x at
100,000 files, where worker processes read the tree; audit peak RSS < 150 MB; a one-file audit
within 3x of `python -c 'import yaml'`.
They are reported, not enforced: the exit status is 1 only when a correctness check fails.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tree  # noqa: E402

TARGET_RATIO = 5.0
TARGET_RATIO_100K = 3.0
TARGET_STARTUP_RATIO = 3.0
TARGET_RSS_MB = 150.0
ONE_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: trainer}\nspec:\n  containers:\n"
           "  - name: main\n    image: pytorch\n    resources: {limits: {nvidia.com/gpu: 1}}\n")


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # user + system CPU seconds of the child: steadier than wall on a busy machine
    rss_mb: float  # peak resident set size of the child
    rc: int
    stdout: bytes


def run(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    """Spawn cmd, collect stdout, reap it with wait4 for its resource usage."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                env=env)
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped; keep Popen quiet
        if proc.returncode not in (0, 1):
            err.seek(0)
            sys.stderr.write(err.read().decode(errors="replace")[-2000:])
    # ru_maxrss: KiB on Linux, bytes on macOS.
    rss = usage.ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else usage.ru_maxrss / 1024
    return Run(wall, usage.ru_utime + usage.ru_stime, rss, proc.returncode, out)


def child_env() -> dict[str, str]:
    """Children read/write __pycache__ like an installed package would: with
    PYTHONDONTWRITEBYTECODE set (common in containers) every run would recompile gpudra's
    sources, which measures the compiler rather than gpudra."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    return env


def rss_floor_mb() -> float:
    """Linux counts the spawning process's peak RSS into a child's ru_maxrss (subprocess uses
    vfork, and exec records the old address space's high-water mark), so no child can report
    less than this process's own peak. Values at this floor mean "this much or less"."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return own / (1024 * 1024) if sys.platform == "darwin" else own / 1024


def warm_cache(tree: str) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, filenames in os.walk(tree):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                size += len(fh.read())
            files += 1
    return files, size


def stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def find_gpudra(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(sys.executable), "gpudra")
    found = beside if os.access(beside, os.X_OK) else shutil.which("gpudra")
    if not found:
        sys.exit("bench_audit: no `gpudra` executable (activate the venv or pass --gpudra)")
    return found


def check_audit(out: bytes, meta: dict | None) -> list[str]:
    """Problems with the audit's JSON report (empty list: all good)."""
    try:
        report = json.loads(out)
    except ValueError as exc:
        return [f"audit output is not JSON: {exc}"]
    problems = []
    findings = report.get("findings", [])
    if report.get("errors"):
        problems.append(f"audit reported {len(report['errors'])} input errors")
    if meta is None:
        return problems
    if len(findings) != meta["gpu_requests"]:
        problems.append(f"{len(findings)} findings, expected {meta['gpu_requests']} "
                        "(one per generated GPU request)")
    by_rule = dict(Counter(f["rule"] for f in findings))
    if by_rule != meta["expected_findings"]:
        problems.append(f"findings by rule {by_rule}, expected {meta['expected_findings']}")
    scanned = report.get("summary", {}).get("files_scanned")
    if scanned != meta["files"]:
        problems.append(f"files_scanned {scanned}, expected {meta['files']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", help="existing tree (e.g. from gen_tree.py); default: generate one")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--startup-runs", type=int, default=10)
    p.add_argument("--gpudra", help="gpudra executable (default: the one beside this python)")
    p.add_argument("--keep", action="store_true", help="keep the generated tree")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    a = p.parse_args(argv)

    gpudra = find_gpudra(a.gpudra)
    grep = shutil.which("grep") or sys.exit("bench_audit: grep not found")
    env = child_env()
    tmp = None
    if a.tree:
        tree = a.tree
        meta_path = os.path.join(tree, gen_tree.META_NAME)
        meta = json.load(open(meta_path)) if os.path.exists(meta_path) else None
        if meta is None:
            print(f"note: no {gen_tree.META_NAME} in {tree}; finding counts are not checked")
    else:
        tmp = tempfile.mkdtemp(prefix="gpudra-bench-")
        tree = os.path.join(tmp, "tree")
        t0 = time.perf_counter()
        # In a child process: this process's own peak RSS is the floor of every child's
        # ru_maxrss (see rss_floor_mb), so it must stay small.
        subprocess.run([sys.executable, gen_tree.__file__, tree, "--files", str(a.files),
                        "--seed", str(a.seed)], check=True, stdout=subprocess.DEVNULL)
        meta = json.load(open(os.path.join(tree, gen_tree.META_NAME)))
        print(f"generated {tree} in {time.perf_counter() - t0:.1f}s")

    try:
        n_files, n_bytes = warm_cache(tree)
        print(f"python {platform.python_version()}  {platform.platform()}  cpus={os.cpu_count()}")
        print(f"gpudra: {gpudra}")
        print(f"tree: {n_files} files, {n_bytes / 1e6:.1f} MB"
              + (f", {meta['gpu_files']} GPU files / {meta['gpu_requests']} GPU requests, "
                 f"{meta['decoy_files']} decoy files (seed {meta['seed']})" if meta else ""))

        grep_cmd = [grep, "-rlF", "nvidia.com/", tree]
        audit_cmd = [gpudra, "audit", tree, "-o", "json"]
        run(grep_cmd, env)  # warm-up: page cache, grep binary
        warm = run(audit_cmd, env)  # warm-up: .pyc files, imports' pages
        problems = check_audit(warm.stdout, meta)

        commands = [("grep", grep_cmd), ("audit", audit_cmd)]
        taskset = shutil.which("taskset")
        if taskset and len(os.sched_getaffinity(0)) > 1:
            cpu = str(min(os.sched_getaffinity(0)))
            commands.append(("audit-1cpu", [taskset, "-c", cpu, *audit_cmd]))
        results: dict[str, list[Run]] = {name: [] for name, _ in commands}
        print(f"\n{'round':>5} {'tool':<10} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12} {'rc':>3}")
        for i in range(1, a.rounds + 1):
            for name, cmd in commands:
                r = run(cmd, env)
                results[name].append(r)
                print(f"{i:>5} {name:<10} {r.wall:>8.3f} {r.cpu:>8.3f} {r.rss_mb:>12.1f} {r.rc:>3}")
                if name == "grep":
                    matched = len(r.stdout.splitlines())
                    if meta and matched != meta["grep_matches"]:
                        problems.append(f"grep listed {matched} files, expected {meta['grep_matches']}")
                else:
                    if r.rc not in (0, 1):
                        problems.append(f"audit exited {r.rc}")
                    problems += check_audit(r.stdout, meta)
                r.stdout = b""  # keep this process small: its peak RSS is the children's floor

        pod = os.path.join(tmp or tempfile.mkdtemp(prefix="gpudra-bench-"), "pod.yaml")
        with open(pod, "w") as fh:
            fh.write(ONE_POD)
        startup_cmds = {"python -c pass": [sys.executable, "-c", "pass"],
                        "python -c 'import yaml'": [sys.executable, "-c", "import yaml"],
                        "gpudra --version": [gpudra, "--version"],
                        "one-file audit": [gpudra, "audit", pod, "-o", "json"]}
        startup: dict[str, list[Run]] = {name: [] for name in startup_cmds}
        for cmd in startup_cmds.values():
            run(cmd, env)
        for _ in range(a.startup_runs):
            for name, cmd in startup_cmds.items():
                startup[name].append(run(cmd, env))
        if not tmp:
            shutil.rmtree(os.path.dirname(pod), ignore_errors=True)

        print(f"\n{'':<24} {'median':>8} {'min':>8} {'max':>8} {'CPU med':>8} "
              f"{'peak RSS MB (max)':>18}")
        summary: dict[str, dict] = {}
        for name, runs in [*results.items(), *startup.items()]:
            med, lo, hi = stats([r.wall for r in runs])
            cpu = statistics.median(r.cpu for r in runs)
            rss = max(r.rss_mb for r in runs)
            summary[name] = {"median_s": med, "min_s": lo, "max_s": hi, "cpu_median_s": cpu,
                             "peak_rss_mb": rss, "runs_s": [r.wall for r in runs]}
            print(f"{name:<24} {med:>8.3f} {lo:>8.3f} {hi:>8.3f} {cpu:>8.3f} {rss:>18.1f}")

        ratio = summary["audit"]["median_s"] / summary["grep"]["median_s"]
        rss = summary["audit"]["peak_rss_mb"]
        target = TARGET_RATIO_100K if n_files >= 100_000 else TARGET_RATIO
        cpu_ratio = summary["audit"]["cpu_median_s"] / summary["grep"]["cpu_median_s"]
        print(f"\naudit/grep ratio of medians: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
              f"(target <= {target:g}x: {'met' if ratio <= target else 'MISSED'})")
        if "audit-1cpu" in summary:
            one = summary["audit-1cpu"]
            print(f"one CPU (no pool): {one['median_s'] / summary['grep']['median_s']:.2f}x "
                  f"grep's wall; the pool's gain {one['median_s'] / summary['audit']['median_s']:.2f}x "
                  f"wall at {summary['audit']['cpu_median_s'] / one['cpu_median_s']:.2f}x the CPU")
        boot = summary["one-file audit"]["median_s"] / summary["python -c 'import yaml'"]["median_s"]
        boot_cpu = summary["one-file audit"]["cpu_median_s"] / \
            summary["python -c 'import yaml'"]["cpu_median_s"]
        print(f"one-file audit / python -c 'import yaml': {boot:.2f}x wall, {boot_cpu:.2f}x CPU "
              f"(target <= {TARGET_STARTUP_RATIO:g}x: "
              f"{'met' if boot <= TARGET_STARTUP_RATIO else 'MISSED'})")
        print(f"RSS floor (this process's peak; a child cannot report less): {rss_floor_mb():.1f} MB")
        print(f"audit peak RSS: {rss:.1f} MB (target < {TARGET_RSS_MB:g} MB: "
              f"{'met' if rss < TARGET_RSS_MB else 'MISSED'})")
        startup_extra = summary["gpudra --version"]["median_s"] - summary["python -c pass"]["median_s"]
        print(f"gpudra --version: {summary['gpudra --version']['median_s'] * 1000:.0f} ms "
              f"({startup_extra * 1000:.0f} ms over a bare interpreter)")
        problems = list(dict.fromkeys(problems))
        print("correctness: " + ("ok (findings == generated GPU requests)" if not problems and meta
                                 else "ok (not checked: no meta)" if not problems
                                 else "FAILED\n  " + "\n  ".join(problems)))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump({"tree": {"files": n_files, "bytes": n_bytes, "meta": meta},
                           "results": summary, "ratio": ratio, "problems": problems,
                           "rss_floor_mb": rss_floor_mb(),
                           "python": platform.python_version()}, fh, indent=2)
        return 1 if problems else 0
    finally:
        if tmp and not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp:
            print(f"kept {tree}")


if __name__ == "__main__":
    sys.exit(main())
