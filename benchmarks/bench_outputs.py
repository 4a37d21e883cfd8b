#!/usr/bin/env python3
"""Benchmark one audit writing several reports against the same audit writing one.

    python benchmarks/bench_outputs.py [--tree DIR] [--files 10000] [--seed 1] [--rounds 5]

`gpudra audit TREE -o json=A -o sarif=B` against `gpudra audit TREE -o json=A` on the
10,000-file tree of gen_tree.py (generated in a temporary directory unless --tree is given).
The page cache is warmed with one untimed run of each; then the two commands run alternately,
--rounds times each, as child processes. Both reports are checked: the JSON parses with one
finding per generated GPU request (gen_tree.meta), the SARIF has as many results.

Target from issue 20: the several-outputs run costs at most 1.3x the JSON-only run (median
wall time). Printed, not enforced: the exit status is 1 only when a report is wrong.
Standard library only.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tree  # noqa: E402

TARGET_RATIO = 1.3


def timed(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        stdin=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, rc


def check(json_path: str, sarif_path: str | None, meta: dict | None) -> list[str]:
    problems = []
    findings = json.load(open(json_path))["findings"]
    expected = meta.get("gpu_requests") if meta else None
    gpu = [f for f in findings if f["rule"] == "GPU101"]
    if expected is not None and len(gpu) != expected:
        problems.append(f"JSON: {len(gpu)} GPU101 findings, expected {expected}")
    if sarif_path:
        results = json.load(open(sarif_path))["runs"][0]["results"]
        if len(results) != len(findings):
            problems.append(f"SARIF: {len(results)} results for {len(findings)} findings")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", help="existing tree (from gen_tree.py); default: generate one")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gpudra-bench-outputs-")
    try:
        tree = a.tree or os.path.join(work, "tree")
        if not a.tree:
            subprocess.run([sys.executable, gen_tree.__file__, tree, "--files", str(a.files),
                            "--seed", str(a.seed)], check=True, stdout=subprocess.DEVNULL)
        meta_path = os.path.join(tree, gen_tree.META_NAME)
        meta = json.load(open(meta_path)) if os.path.exists(meta_path) else None
        gpudra = [sys.executable, "-m", "gpudra", "audit", tree, "-q", "--fail-on", "never"]
        json_out, sarif_out = os.path.join(work, "r.json"), os.path.join(work, "r.sarif")
        one = [*gpudra, "-o", f"json={json_out}"]
        many = [*one, "-o", f"sarif={sarif_out}"]
        for cmd in (one, many):  # warm the page cache and __pycache__
            timed(cmd)
        problems = check(json_out, sarif_out, meta)
        times: dict[str, list[float]] = {"json": [], "json+sarif": []}
        for _ in range(a.rounds):
            for name, cmd in (("json", one), ("json+sarif", many)):
                seconds, rc = timed(cmd)
                if rc != 0:
                    problems.append(f"{name}: exit {rc}")
                times[name].append(seconds)
        files = meta.get("files") if meta else "?"
        print(f"tree: {tree} ({files} files), {a.rounds} rounds each")
        for name, values in times.items():
            print(f"  audit -o {name:<11} median {statistics.median(values):7.3f} s  "
                  f"min {min(values):7.3f} s  max {max(values):7.3f} s")
        ratio = statistics.median(times["json+sarif"]) / statistics.median(times["json"])
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(f"ratio json+sarif / json: {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict})")
        for problem in problems:
            print(f"error: {problem}")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
