#!/usr/bin/env python3
"""Benchmark one audit writing several reports against the same audit writing one.

    python benchmarks/bench_outputs.py [--tree DIR] [--files 10000] [--seed 1] [--rounds 5]
                                       [--html-findings 10000]

`gpudra audit TREE -o json=A -o sarif=B -o html=C` (and `-o json=A -o sarif=B`) against
`gpudra audit TREE -o json=A` on the 10,000-file tree of gen_tree.py (generated in a temporary
directory unless --tree is given). The page cache is warmed with one untimed run of each; then
the commands run alternately, --rounds times each, as child processes. The reports are
checked: the JSON parses with one finding per generated GPU request (gen_tree.meta), the SARIF
has as many results, the HTML shows the JSON's finding and workload counts.

Then the HTML report's size for at least --html-findings findings: a tree where every file
requests GPUs, generated and audited once (0 skips it).

Target from issue 20: the several-outputs run costs at most 1.3x the JSON-only run (median
wall time), and the HTML of 10,000 findings is under 1 MB. Printed, not enforced: the exit
status is 1 only when a report is wrong. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tree  # noqa: E402

TARGET_RATIO = 1.3
HTML_LIMIT = 1_000_000  # bytes


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system, of the child) of one run, and its exit code. CPU
    time is printed too: on a shared machine it moves far less than wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        stdin=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def check(json_path: str, sarif_path: str | None, meta: dict | None,
          html_path: str | None = None) -> list[str]:
    problems = []
    report = json.load(open(json_path))
    findings = report["findings"]
    expected = meta.get("gpu_requests") if meta else None
    gpu = [f for f in findings if f["rule"] == "GPU101"]
    if expected is not None and len(gpu) != expected:
        problems.append(f"JSON: {len(gpu)} GPU101 findings, expected {expected}")
    if sarif_path:
        results = json.load(open(sarif_path))["runs"][0]["results"]
        if len(results) != len(findings):
            problems.append(f"SARIF: {len(results)} results for {len(findings)} findings")
    if html_path:
        problems += check_html(open(html_path, encoding="utf-8").read(), report)
    return problems


def check_html(text: str, report: dict) -> list[str]:
    """The page's figures (gpudra/report/html.py ids) against the JSON report's counts."""
    def figure(id_: str) -> int | None:
        match = re.search(f'id="{id_}">([0-9,]+)<', text)
        return int(match.group(1).replace(",", "")) if match else None

    problems = []
    summary = report["summary"]
    expected = {"gpu-workloads": summary["gpu_workloads"],
                "workloads-total": len(report["workloads"]),
                **{f"findings-{s}": n for s, n in summary["findings"].items()}}
    for id_, value in expected.items():
        if figure(id_) != value:
            problems.append(f"HTML: #{id_} shows {figure(id_)}, the JSON {value}")
    return problems


def html_size(work: str, files: int, seed: int) -> tuple[int, int, list[str]]:
    """(findings, HTML bytes, problems) of the audit of a `files`-file tree where every file
    asks for GPUs: at least one finding per file."""
    tree = os.path.join(work, "all-gpu")
    subprocess.run([sys.executable, gen_tree.__file__, tree, "--files", str(files),
                    "--seed", str(seed), "--gpu-percent", "100", "--decoy-percent", "0"],
                   check=True, stdout=subprocess.DEVNULL)
    json_out, html_out = os.path.join(work, "all.json"), os.path.join(work, "all.html")
    subprocess.run([sys.executable, "-m", "gpudra", "audit", tree, "-q", "--fail-on", "never",
                    "-o", f"json={json_out}", "-o", f"html={html_out}"], check=True)
    report = json.load(open(json_out))
    text = open(html_out, encoding="utf-8").read()
    return len(report["findings"]), len(text.encode()), check_html(text, report)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", help="existing tree (from gen_tree.py); default: generate one")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--html-findings", type=int, default=10_000)
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
        html_out = os.path.join(work, "r.html")
        one = [*gpudra, "-o", f"json={json_out}"]
        two = [*one, "-o", f"sarif={sarif_out}"]
        three = [*two, "-o", f"html={html_out}"]
        commands = {"json": one, "json+sarif": two, "json+sarif+html": three}
        for cmd in commands.values():  # warm the page cache and __pycache__
            timed(cmd)
        problems = check(json_out, sarif_out, meta, html_out)
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(a.rounds):
            for name, cmd in commands.items():
                seconds, cpu_seconds, rc = timed(cmd)
                if rc != 0:
                    problems.append(f"{name}: exit {rc}")
                times[name].append(seconds)
                cpu[name].append(cpu_seconds)
        files = meta.get("files") if meta else "?"
        print(f"tree: {tree} ({files} files), {a.rounds} rounds each")
        for name, values in times.items():
            print(f"  audit -o {name:<16} median {statistics.median(values):7.3f} s  "
                  f"min {min(values):7.3f} s  max {max(values):7.3f} s  "
                  f"cpu median {statistics.median(cpu[name]):7.3f} s")
        for name in ("json+sarif", "json+sarif+html"):
            ratio = statistics.median(times[name]) / statistics.median(times["json"])
            cpu_ratio = statistics.median(cpu[name]) / statistics.median(cpu["json"])
            verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
            print(f"ratio {name} / json: {ratio:.2f}x wall (target <= {TARGET_RATIO}x: "
                  f"{verdict}), {cpu_ratio:.2f}x cpu")
        print(f"html of this tree: {os.path.getsize(html_out):,} bytes")
        if a.html_findings:
            found, size, wrong = html_size(work, a.html_findings, a.seed)
            problems += wrong
            verdict = "met" if size < HTML_LIMIT else "NOT met"
            print(f"html of {found:,} findings: {size:,} bytes "
                  f"(target < {HTML_LIMIT:,}: {verdict})")
        for problem in problems:
            print(f"error: {problem}")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
