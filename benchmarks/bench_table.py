#!/usr/bin/env python3
"""Every scale figure of issue 18 in one table: runs the benchmarks and prints their results.

    python benchmarks/bench_table.py [--dir DIR] [--rounds 5] [--big-rounds 3]
                                     [--gpudra PATH] [--kubectl PATH] [--only NAME,...]
                                     [--json OUT]

Runs, each as its own child process writing --json (so every ratio is against a reference
measured in the same run, alternated with it):

  audit-10k, audit-100k    bench_audit.py on generated trees of 10,000 and 100,000 files
                           (reference: `grep -rlF nvidia.com/`), with the start-up figures
  convert-10k, convert-100k  bench_convert.py on the same trees (reference: the audit)
  plan-json, plan-yaml     bench_plan_scale.py at 1x and 10x, the slices as one JSON List and
                           as multi-document YAML
  live                     bench_cluster_audit.py: 100,000 pods (gen_cluster.py, 10,000
                           Deployments) from the fake API server (reference: `kubectl get
                           pods -A -o json`; skipped without kubectl)

Trees are generated once into --dir (default /tmp/gpudra-bench-table) and reused. Then one
Markdown table: each figure, its reference, the ratio and its target, peak RSS, and how the
cost grows from 1x to 10x. Numbers are printed, never asserted; the exit status is 1 only when
a benchmark fails its own correctness checks. Run it on an idle machine: about 15 minutes on
two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("audit-10k", "audit-100k", "convert-10k", "convert-100k", "plan-json", "plan-yaml",
         "live")


def _tree(root: Path, files: int) -> Path:
    tree = root / f"tree-{files}"
    if not (tree / "gen_tree.meta").exists():
        shutil.rmtree(tree, ignore_errors=True)
        subprocess.run([sys.executable, str(HERE / "gen_tree.py"), str(tree), "--files",
                        str(files), "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    return tree


def _run(name: str, script: str, args: list[str], out: Path) -> dict | None:
    print(f"--- {name}: {script} {' '.join(args)}", flush=True)
    done = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(out)])
    if not out.exists():
        print(f"--- {name}: no results (exit status {done.returncode})")
        return None
    data = json.loads(out.read_text())
    data["exit_status"] = done.returncode
    return data


def measure(a: argparse.Namespace, root: Path) -> dict[str, dict]:
    steps = a.only.split(",") if a.only else list(STEPS)
    gpudra = ["--gpudra", a.gpudra] if a.gpudra else []
    found: dict[str, dict] = {}
    for name in steps:
        out = root / f"{name}.json"
        out.unlink(missing_ok=True)
        if name.startswith(("audit-", "convert-")):
            files = 10_000 if name.endswith("10k") else 100_000
            rounds = a.rounds if files == 10_000 else a.big_rounds
            script = "bench_audit.py" if name.startswith("audit") else "bench_convert.py"
            args = ["--tree", str(_tree(root, files)), "--rounds", str(rounds), *gpudra]
            result = _run(name, script, args, out)
        elif name.startswith("plan-"):
            args = ["--dir", str(root / "plan"), "--rounds", str(a.big_rounds),
                    "--inventory-format", name.removeprefix("plan-"), *gpudra]
            result = _run(name, "bench_plan_scale.py", args, out)
        elif a.kubectl:
            state = root / "cluster-100k.json"
            if not state.exists():
                subprocess.run([sys.executable, str(HERE / "gen_cluster.py"), str(state),
                                "--deployments", "10000"], check=True, stdout=subprocess.DEVNULL)
            args = ["--rounds", str(a.big_rounds), "--kubectl", a.kubectl, "--state",
                    str(state), *gpudra]
            result = _run(name, "bench_cluster_audit.py", args, out)
        else:
            print("--- live: skipped (no kubectl: --kubectl PATH)")
            result = None
        if result is not None:
            found[name] = result
    return found


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"


def _verdict(value: float, target: float) -> str:
    return f"{value:.2f}x (<= {target:g}x: {'met' if value <= target else 'MISSED'})"


def rows(found: dict[str, dict]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for files, target in (("10k", 5.0), ("100k", 3.0)):
        r = found.get(f"audit-{files}")
        if r is None:
            continue
        audit, grep = r["results"]["audit"], r["results"]["grep"]
        growth = ""
        if files == "100k" and "audit-10k" in found:
            small = found["audit-10k"]["results"]
            growth = (f"{audit['median_s'] / small['audit']['median_s']:.1f}x "
                      f"(grep {grep['median_s'] / small['grep']['median_s']:.1f}x)")
        out.append((f"file audit, {r['tree']['files']:,} files", "`grep -rlF nvidia.com/`",
                    _s(audit["median_s"]), _s(grep["median_s"]),
                    _verdict(audit["median_s"] / grep["median_s"], target),
                    f"{audit['peak_rss_mb']:.0f}", growth))
    for files in ("10k", "100k"):
        r = found.get(f"convert-{files}")
        if r is None:
            continue
        res, audit = r["results"], r["results"]["audit"]
        for name, label, key, target in (
                ("check", "convert --check", "median_s", 1.3),
                ("convert", "convert in place, fsyncs excluded", "without_fsync_median_s", 1.5)):
            row = res[name]
            rss = row["peak_rss_mb"] / audit["peak_rss_mb"]
            growth = ""
            if files == "100k" and "convert-10k" in found:
                small = found["convert-10k"]["results"]
                growth = f"{row[key] / small[name][key]:.1f}x"
            fsync = (f"; fsyncs {_s(row['fsync_median_s'])}" if name == "convert" else "")
            out.append((f"{label}, {r['tree']['files']:,} files", "audit of the same tree",
                        _s(row[key]) + f" (CPU {_s(row['cpu_median_s'])}{fsync})",
                        _s(audit["median_s"]), _verdict(row[key] / audit["median_s"], target),
                        f"{row['peak_rss_mb']:.0f} ({_verdict(rss, 1.2)})", growth))
    for form in ("json", "yaml"):
        r = found.get(f"plan-{form}")
        if r is None:
            continue
        runs = {key.rsplit(" ", 1)[1]: value for key, value in r["summary"].items()}
        one, ten = runs.get("1x"), runs.get("10x")
        if one is None or ten is None:
            continue
        growth = ten["cpu"] / one["cpu"]
        out.append((f"plan end to end, {form.upper()} slices, 1x (1,000 x 10,000)", "",
                    _s(one["wall"]) + f" (CPU {_s(one['cpu'])})", "", "",
                    f"{one['rss_mb']:.0f}", ""))
        wall = "met" if ten["wall"] < 10 and ten["rss_mb"] < 1024 else "MISSED"
        out.append((f"plan end to end, {form.upper()} slices, 10x (10,000 x 100,000)",
                    "the 1x run", _s(ten["wall"]) + f" (CPU {_s(ten['cpu'])}; JSON "
                    f"{ten['json_mb']:.1f} MB)", _s(one["wall"]),
                    f"under 10 s and 1 GB: {wall}", f"{ten['rss_mb']:.0f}",
                    _verdict(growth, 12.0) + " by CPU"))
    r = found.get("audit-10k") or found.get("audit-100k")
    if r is not None:
        boot, ref = r["results"]["one-file audit"], r["results"]["python -c 'import yaml'"]
        out.append(("one-file audit (start-up)", "`python -c 'import yaml'`",
                    _s(boot["median_s"]), _s(ref["median_s"]),
                    _verdict(boot["median_s"] / ref["median_s"], 3.0),
                    f"{boot['peak_rss_mb']:.0f}", ""))
    r = found.get("live")
    if r is not None:
        g, k = r["gpudra"], r["kubectl"]
        out.append(("live audit, 100,000 pods (fake API server)",
                    "`kubectl get pods -A -o json`", _s(g["wall"]) + f" (CPU {_s(g['cpu'])})",
                    _s(k["wall"]) + f" (CPU {_s(k['cpu'])})", f"{g['cpu'] / k['cpu']:.2f}x CPU",
                    f"{g['rss_mb']:.0f} (kubectl {k['rss_mb']:.0f})", ""))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default="/tmp/gpudra-bench-table",
                   help="trees and results (kept and reused)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of the 10,000-file runs")
    p.add_argument("--big-rounds", type=int, default=3, help="rounds at 100,000 files and 10x")
    p.add_argument("--gpudra", help="gpudra executable (default: the one beside python)")
    p.add_argument("--kubectl", default=shutil.which("kubectl"))
    p.add_argument("--only", help=f"a comma-separated subset of {', '.join(STEPS)}")
    p.add_argument("--json", metavar="OUT", help="also write every result as JSON")
    a = p.parse_args(argv)
    root = Path(a.dir)
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    found = measure(a, root)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    print("| figure | reference (same run) | median | reference median | ratio (target) "
          "| peak RSS MB | cost 1x -> 10x |")
    print("|---|---|---:|---:|---|---:|---|")
    for row in rows(found):
        print("| " + " | ".join(row) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(found, indent=2))
    failed = [n for n, r in found.items() if r.get("exit_status") not in (0, None)
              or r.get("problems")]
    if failed:
        print(f"\ncorrectness checks failed in: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
