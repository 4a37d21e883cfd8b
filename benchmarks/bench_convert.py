#!/usr/bin/env python3
"""Benchmark `gpudra convert TREE --check` and `gpudra convert COPY` (in place) against
`gpudra audit TREE -o json`, in the same run.

    python benchmarks/bench_convert.py [--tree DIR] [--files 10000] [--seed 1] [--rounds 5]
                                       [--gpudra PATH] [--keep] [--json OUT]

Without --tree a tree is generated with gen_tree.py in a temporary directory (removed at the
end unless --keep). Besides the pristine tree two copies are made: NOGPU, the tree without its
GPU files (every file containing `nvidia.com/`), and COPY, which convert rewrites in place.
COPY is re-created from the pristine tree before every round, outside the timed region, flushed
to disk (os.sync) so that write-back of the copy does not land in the timed run, then read once
and flushed again: the first read of a freshly copied file updates its access time (relatime:
the copy's ctime is newer than its atime), a metadata write per file that the audit's tree,
read many times already, no longer pays.

Each round runs, one after the other (alternated), as child processes:
  audit   gpudra audit TREE -o json
  check   gpudra convert TREE --check      (plans and edits every GPU file, writes nothing)
  convert gpudra convert COPY              (in place: writes only the GPU files)
  nogpu   gpudra convert NOGPU             (same walk, nothing to convert or write)
Every command starts through the same small launcher (python -c, then gpudra's __main__), which
also times os.fsync: convert fsyncs every file it writes and its journal, and that time (the
disk's, not gpudra's) is reported separately and subtracted for the "in place, without fsync"
ratio.
then, untimed, the correctness checks on COPY: exactly the GPU files changed (byte comparison
with TREE), the summary says one rewrite per GPU file, `gpudra convert COPY --check` exits 0
and `gpudra audit COPY -o json` has no GPU101.

Reported: median, min and max wall time, CPU (user+sys) median and peak RSS per command; the
ratios to the audit measured in the same run: check (target <= 1.3x), in place without fsync
(target <= 1.5x), peak RSS (target <= 1.2x); and the cost per converted document: the median
over rounds of (convert - nogpu) / converted documents. See benchmarks/README.md for why.
Wall time and RSS are measured as in bench_audit.py, whose helpers this script imports.
The exit status is 1 only when a correctness check fails. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tree
from bench_audit import Run, child_env, find_gpudra, rss_floor_mb, run, stats, warm_cache

TARGET_RATIO = 1.5  # in place, fsyncs excluded
TARGET_CHECK = 1.3
TARGET_RSS = 1.2
# Runs gpudra's __main__ with os.fsync timed; the total goes to $BENCH_FSYNC_OUT.
LAUNCHER = """
import os, sys, time, runpy
spent, count, fsync = [0.0], [0], os.fsync
def timed(fd):
    t = time.perf_counter()
    try:
        return fsync(fd)
    finally:
        spent[0] += time.perf_counter() - t
        count[0] += 1
os.fsync = timed
sys.argv[0] = "gpudra"
try:
    runpy.run_module("gpudra", run_name="__main__", alter_sys=True)
finally:
    with open(os.environ["BENCH_FSYNC_OUT"], "w") as out:
        out.write(f"{spent[0]} {count[0]}")
"""
GPU_MARK = b"nvidia.com/"
SUMMARY = re.compile(r"^(\d+) files? scanned, [^;]*; (\d+) files? (?:changed|would change)"
                     r"(?:; workloads: (.*)|; nothing to convert)$", re.MULTILINE)


def files_of(tree: str) -> list[str]:
    """Relative paths of every file under tree, the generator's meta file excepted."""
    out = []
    for dirpath, _, filenames in os.walk(tree):
        out += [os.path.relpath(os.path.join(dirpath, n), tree) for n in filenames]
    return sorted(f for f in out if f != gen_tree.META_NAME)


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def changed_files(copy: str, tree: str) -> set[str]:
    """Files of copy that differ from (or are missing in) tree; one file in memory at a time,
    so that this process's peak RSS (the children's RSS floor) stays small."""
    changed = set()
    for rel in files_of(copy):
        original = os.path.join(tree, rel)
        if not os.path.exists(original) or read(original) != read(os.path.join(copy, rel)):
            changed.add(rel)
    return changed


def fresh_copy(src: str, dst: str, skip: set[str] = frozenset()) -> None:
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=lambda d, names: [
        n for n in names if os.path.relpath(os.path.join(d, n), src) in skip])
    os.sync()
    warm_cache(dst)  # settles every file's access time (see the module's docstring)
    os.sync()


def summary(out: bytes) -> dict[str, int]:
    """The last line of convert's table output as numbers."""
    matches = list(SUMMARY.finditer(out.decode(errors="replace")))
    match = matches[-1] if matches else None
    if match is None:
        return {}
    counts = {"files_scanned": int(match.group(1)), "files_changed": int(match.group(2))}
    for part in (match.group(3) or "").split(", "):
        if part:
            n, _, strategy = part.partition(" ")
            counts[strategy] = int(n)
    return counts


def launched(python: str, args: list[str], env: dict, fsync_out: str) -> Run:
    """One gpudra run through LAUNCHER; `fsync_s` and `fsyncs` are set on the Run."""
    r = run([python, "-c", LAUNCHER, *args], {**env, "BENCH_FSYNC_OUT": fsync_out})
    with open(fsync_out) as fh:
        spent, count = fh.read().split()
    r.fsync_s, r.fsyncs = float(spent), int(count)
    return r


def check_round(gpudra: str, env: dict, copy: str, tree: str, gpu_files: set[str],
                converted: Run) -> tuple[list[str], int, int]:
    """(problems, files changed, documents converted) for one converted COPY."""
    problems = []
    if converted.rc != 0:
        problems.append(f"convert exited {converted.rc}")
    changed = changed_files(copy, tree)
    if changed != gpu_files:
        problems.append(f"{len(changed)} files changed, expected the {len(gpu_files)} GPU files "
                        f"({len(changed - gpu_files)} others, {len(gpu_files - changed)} missed)")
    counts = summary(converted.stdout)
    if counts.get("files_changed") != len(changed):
        problems.append(f"summary says {counts.get('files_changed')} files changed, "
                        f"{len(changed)} did")
    if counts.get("rewrite") != len(gpu_files) or set(counts) - {"files_scanned", "files_changed",
                                                                  "rewrite"}:
        problems.append(f"summary {counts}: expected {len(gpu_files)} rewrites and nothing else")
    check = run([gpudra, "convert", copy, "--check"], env)
    if check.rc != 0:
        problems.append(f"convert --check on the converted copy exited {check.rc}")
    audit = run([gpudra, "audit", copy, "-o", "json"], env)
    try:
        report = json.loads(audit.stdout)
        left = [f for f in report.get("findings", []) if f["rule"] == "GPU101"]
        if left:
            problems.append(f"audit of the converted copy: {len(left)} GPU101 findings")
        if report.get("errors"):
            problems.append(f"audit of the converted copy: {len(report['errors'])} input errors")
    except ValueError as exc:
        problems.append(f"audit output is not JSON: {exc}")
    return problems, len(changed), counts.get("rewrite", 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", help="existing tree (e.g. from gen_tree.py); default: generate one")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--gpudra", help="gpudra executable (default: the one beside this python)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    a = p.parse_args(argv)

    gpudra = find_gpudra(a.gpudra)
    env = child_env()
    tmp = tempfile.mkdtemp(prefix="gpudra-bench-convert-")
    try:
        if a.tree:
            tree = os.path.abspath(a.tree)
        else:
            tree = os.path.join(tmp, "tree")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, gen_tree.__file__, tree, "--files", str(a.files),
                            "--seed", str(a.seed)], check=True, stdout=subprocess.DEVNULL)
            print(f"generated {tree} in {time.perf_counter() - t0:.1f}s")
        copy, nogpu = os.path.join(tmp, "copy"), os.path.join(tmp, "nogpu")
        all_files = files_of(tree)
        gpu_files = {f for f in all_files if GPU_MARK in read(os.path.join(tree, f))}
        fresh_copy(tree, nogpu, skip=gpu_files)
        warm_cache(tree)
        n_files = len(all_files)
        n_bytes = sum(os.path.getsize(os.path.join(tree, f)) for f in all_files)
        warm_cache(nogpu)
        print(f"python {platform.python_version()}  {platform.platform()}  cpus={os.cpu_count()}")
        print(f"gpudra: {gpudra}")
        print(f"tree: {n_files} files, {n_bytes / 1e6:.1f} MB, {len(gpu_files)} GPU files; "
              f"NOGPU: {n_files - len(gpu_files)} files")

        python = os.path.join(os.path.dirname(gpudra), "python")
        python = python if os.path.exists(python) else sys.executable
        fsync_out = os.path.join(tmp, "fsync")
        commands = {"audit": ["audit", tree, "-o", "json"],
                    "check": ["convert", tree, "--check"],
                    "convert": ["convert", copy],
                    "nogpu": ["convert", nogpu]}
        # Warm-up (untimed): page cache, .pyc files, imports' pages.
        fresh_copy(tree, copy)
        for args in commands.values():
            launched(python, args, env, fsync_out)

        results: dict[str, list[Run]] = {name: [] for name in commands}
        problems: list[str] = []
        changed_counts, doc_counts, per_doc, per_doc_cpu = [], [], [], []
        print(f"\n{'round':>5} {'command':<8} {'wall s':>8} {'cpu s':>7} {'fsync s':>8} "
              f"{'peak RSS MB':>12} {'rc':>3}")
        for i in range(1, a.rounds + 1):
            fresh_copy(tree, copy)  # outside the timed region
            for name, args in commands.items():
                r = launched(python, args, env, fsync_out)
                results[name].append(r)
                print(f"{i:>5} {name:<8} {r.wall:>8.3f} {r.cpu:>7.3f} {r.fsync_s:>8.3f} "
                      f"{r.rss_mb:>12.1f} {r.rc:>3}")
                if name == "nogpu" and (r.rc != 0 or summary(r.stdout).get("files_changed")):
                    problems.append(f"convert NOGPU: rc {r.rc}, {summary(r.stdout)}")
                if name == "check" and (r.rc != 1 or summary(r.stdout).get("files_changed")
                                        != len(gpu_files)):
                    problems.append(f"convert --check: rc {r.rc}, {summary(r.stdout)}")
            found, changed, docs = check_round(gpudra, env, copy, tree, gpu_files,
                                               results["convert"][-1])
            problems += found
            changed_counts.append(changed)
            doc_counts.append(docs)
            if docs:
                per_doc.append((results["convert"][-1].wall - results["nogpu"][-1].wall) / docs)
                per_doc_cpu.append((results["convert"][-1].cpu - results["nogpu"][-1].cpu) / docs)
            for r in (results[n][-1] for n in commands):
                r.stdout = b""

        print(f"\n{'':<10} {'median':>8} {'min':>8} {'max':>8} {'cpu median':>11} "
              f"{'fsync median':>13} {'peak RSS MB (max)':>18}")
        table: dict[str, dict] = {}
        for name, runs in results.items():
            med, lo, hi = stats([r.wall for r in runs])
            cpu = statistics.median(r.cpu for r in runs)
            fsync = statistics.median(r.fsync_s for r in runs)
            rss = max(r.rss_mb for r in runs)
            table[name] = {"median_s": med, "min_s": lo, "max_s": hi, "cpu_median_s": cpu,
                           "fsync_median_s": fsync, "fsyncs": runs[-1].fsyncs,
                           "without_fsync_median_s": statistics.median(
                               r.wall - r.fsync_s for r in runs),
                           "peak_rss_mb": rss, "runs_s": [r.wall for r in runs],
                           "cpu_s": [r.cpu for r in runs], "fsync_s": [r.fsync_s for r in runs]}
            print(f"{name:<10} {med:>8.3f} {lo:>8.3f} {hi:>8.3f} {cpu:>11.3f} {fsync:>13.3f} "
                  f"{rss:>18.1f}")
        audit = table["audit"]

        def ratios(name: str, target: float, wall_key: str = "median_s") -> dict:
            row = table[name]
            out = {"wall": row[wall_key] / audit["median_s"],
                   "min": row["min_s"] / audit["min_s"],
                   "cpu": row["cpu_median_s"] / audit["cpu_median_s"],
                   "rss": row["peak_rss_mb"] / audit["peak_rss_mb"]}
            # Wall time is the user's; CPU tells apart a loaded machine (both cores taken by
            # others hide the audit's worker processes) from a slower convert.
            met = out["wall"] <= target
            print(f"{name + '/audit':<14} wall {out['wall']:.2f}x (target <= {target:g}x: "
                  f"{'met' if met else 'MISSED'}), min {out['min']:.2f}x, CPU {out['cpu']:.2f}x; "
                  f"peak RSS {out['rss']:.2f}x (target <= {TARGET_RSS:g}x: "
                  f"{'met' if out['rss'] <= TARGET_RSS else 'MISSED'})")
            return out

        print()
        check_ratio = ratios("check", TARGET_CHECK)
        ratio_all = ratios("convert", TARGET_RATIO)
        ratio = table["convert"]["without_fsync_median_s"] / audit["median_s"]
        print(f"{'in place without fsync':<14}: wall {ratio:.2f}x the audit (target <= "
              f"{TARGET_RATIO:g}x: {'met' if ratio <= TARGET_RATIO else 'MISSED'}); the "
              f"{table['convert']['fsyncs']} fsyncs took {table['convert']['fsync_median_s']:.3f} s "
              "(median)")
        docs = statistics.median(doc_counts)
        cost = statistics.median(per_doc) if per_doc else float("nan")
        cost_cpu = statistics.median(per_doc_cpu) if per_doc_cpu else float("nan")
        print(f"files changed per round: {sorted(set(changed_counts))} "
              f"(GPU files: {len(gpu_files)}); documents converted: {docs:g}")
        print(f"cost per converted document (median of per-round (convert - nogpu) / docs): "
              f"{cost * 1000:.2f} ms wall, {cost_cpu * 1000:.2f} ms CPU; "
              f"nogpu/audit ratio of medians: "
              f"{table['nogpu']['median_s'] / audit['median_s']:.2f}x")
        print(f"RSS floor (this process's peak; a child cannot report less): "
              f"{rss_floor_mb():.1f} MB")
        problems = list(dict.fromkeys(problems))
        print("correctness: " + ("ok (only the GPU files changed; --check exits 0; no GPU101 left)"
                                 if not problems else "FAILED\n  " + "\n  ".join(problems)))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump({"tree": {"files": n_files, "bytes": n_bytes,
                                    "gpu_files": len(gpu_files)},
                           "results": table, "ratio_without_fsync": ratio,
                           "check_ratios": check_ratio, "in_place_ratios": ratio_all,
                           "files_changed": changed_counts, "documents_converted": doc_counts,
                           "cost_per_document_s": cost, "per_round_cost_s": per_doc,
                           "cost_per_document_cpu_s": cost_cpu, "per_round_cost_cpu_s": per_doc_cpu,
                           "problems": problems, "rss_floor_mb": rss_floor_mb(),
                           "python": platform.python_version()}, fh, indent=2)
        return 1 if problems else 0
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
