#!/usr/bin/env python3
"""Benchmark `gpudra convert COPY` (in place) against `gpudra audit TREE -o json`.

    python benchmarks/bench_convert.py [--tree DIR] [--files 10000] [--seed 1] [--rounds 5]
                                       [--gpudra PATH] [--keep] [--json OUT]

Without --tree a tree is generated with gen_tree.py in a temporary directory (removed at the
end unless --keep). Besides the pristine tree two copies are made: NOGPU, the tree without its
GPU files (every file containing `nvidia.com/`), and COPY, which convert rewrites in place.
COPY is re-created from the pristine tree before every round, outside the timed region, and
flushed to disk (os.sync) so that write-back of the copy does not land in the timed run.

Each round runs, one after the other, as child processes:
  audit   gpudra audit TREE -o json
  convert gpudra convert COPY              (in place: writes only the GPU files)
  nogpu   gpudra convert NOGPU             (same walk, nothing to convert or write)
then, untimed, the correctness checks on COPY: exactly the GPU files changed (byte comparison
with TREE), the summary says one rewrite per GPU file, `gpudra convert COPY --check` exits 0
and `gpudra audit COPY -o json` has no GPU101.

Reported: median, min and max wall time and peak RSS per command, the ratio of the convert
and audit medians (target <= 1.5x) and the cost per converted document: the median over
rounds of (convert - nogpu) / converted documents. See benchmarks/README.md for why.
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

TARGET_RATIO = 1.5
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


def summary(out: bytes) -> dict[str, int]:
    """The last line of convert's table output as numbers."""
    match = None
    for match in SUMMARY.finditer(out.decode(errors="replace")):
        pass
    if match is None:
        return {}
    counts = {"files_scanned": int(match.group(1)), "files_changed": int(match.group(2))}
    for part in (match.group(3) or "").split(", "):
        if part:
            n, _, strategy = part.partition(" ")
            counts[strategy] = int(n)
    return counts


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

        commands = {"audit": [gpudra, "audit", tree, "-o", "json"],
                    "convert": [gpudra, "convert", copy],
                    "nogpu": [gpudra, "convert", nogpu]}
        # Warm-up (untimed): page cache, .pyc files, imports' pages.
        fresh_copy(tree, copy)
        for cmd in commands.values():
            run(cmd, env)

        results: dict[str, list[Run]] = {name: [] for name in commands}
        problems: list[str] = []
        changed_counts, doc_counts, per_doc, per_doc_cpu = [], [], [], []
        print(f"\n{'round':>5} {'command':<8} {'wall s':>8} {'cpu s':>7} {'peak RSS MB':>12} "
              f"{'rc':>3}")
        for i in range(1, a.rounds + 1):
            fresh_copy(tree, copy)  # outside the timed region
            for name, cmd in commands.items():
                r = run(cmd, env)
                results[name].append(r)
                print(f"{i:>5} {name:<8} {r.wall:>8.3f} {r.cpu:>7.3f} {r.rss_mb:>12.1f} {r.rc:>3}")
                if name == "nogpu" and (r.rc != 0 or summary(r.stdout).get("files_changed")):
                    problems.append(f"convert NOGPU: rc {r.rc}, {summary(r.stdout)}")
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
              f"{'peak RSS MB (max)':>18}")
        table: dict[str, dict] = {}
        for name, runs in results.items():
            med, lo, hi = stats([r.wall for r in runs])
            cpu = statistics.median(r.cpu for r in runs)
            rss = max(r.rss_mb for r in runs)
            table[name] = {"median_s": med, "min_s": lo, "max_s": hi, "cpu_median_s": cpu,
                           "peak_rss_mb": rss, "runs_s": [r.wall for r in runs],
                           "cpu_s": [r.cpu for r in runs]}
            print(f"{name:<10} {med:>8.3f} {lo:>8.3f} {hi:>8.3f} {cpu:>11.3f} {rss:>18.1f}")
        ratio = table["convert"]["median_s"] / table["audit"]["median_s"]
        ratio_min = table["convert"]["min_s"] / table["audit"]["min_s"]
        ratio_cpu = table["convert"]["cpu_median_s"] / table["audit"]["cpu_median_s"]
        docs = statistics.median(doc_counts)
        cost = statistics.median(per_doc) if per_doc else float("nan")
        cost_cpu = statistics.median(per_doc_cpu) if per_doc_cpu else float("nan")
        print(f"\nconvert/audit ratio of medians: {ratio:.2f}x (target <= {TARGET_RATIO:g}x: "
              f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}); of minimums {ratio_min:.2f}x; "
              f"of CPU medians {ratio_cpu:.2f}x")
        print(f"files changed per round: {sorted(set(changed_counts))} "
              f"(GPU files: {len(gpu_files)}); documents converted: {docs:g}")
        print(f"cost per converted document (median of per-round (convert - nogpu) / docs): "
              f"{cost * 1000:.2f} ms wall, {cost_cpu * 1000:.2f} ms CPU; "
              f"nogpu/audit ratio of medians: "
              f"{table['nogpu']['median_s'] / table['audit']['median_s']:.2f}x")
        print(f"RSS floor (this process's peak; a child cannot report less): "
              f"{rss_floor_mb():.1f} MB")
        problems = list(dict.fromkeys(problems))
        print("correctness: " + ("ok (only the GPU files changed; --check exits 0; no GPU101 left)"
                                 if not problems else "FAILED\n  " + "\n  ".join(problems)))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump({"tree": {"files": n_files, "bytes": n_bytes,
                                    "gpu_files": len(gpu_files)},
                           "results": table, "ratio": ratio, "ratio_of_minimums": ratio_min,
                           "ratio_of_cpu_medians": ratio_cpu,
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
