#!/usr/bin/env python3
"""Count what `gpudra convert` does with the workloads of a tree, by the controller registry's
three outcomes: converted, blocked because gpudra has not checked the kind's controller, and
converted because `.gpudra.yaml` vouches for the kind.

    python benchmarks/registry_counts.py [--corpus DIR] [--golden DIR] [--gpudra PATH]

Each tree is copied to a temporary directory and converted there (`gpudra convert COPY -o
json`, as a user runs it); the originals are never touched. Trees: the shared corpus (each
repository directory of it, summed) and every golden case's before/ tree. A golden case's own
`.gpudra.yaml` (when it has one) is used, as the golden test does. Prints one line per tree
set and the totals; `--json OUT` writes them. Counts, not times: nothing here is timed.
Needs PyYAML (gpudra's interpreter has it); gpudra runs as a child process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
GOLDEN = ROOT / "tests" / "convert" / "golden"
UNCHECKED = "has not checked whether"
VOUCHED = "vouched for by"


def convert(gpudra: list[str], tree: Path, args: list[str]) -> list[dict]:
    """The workloads of a converted copy of `tree`, as `-o json` reports them."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(tree, copy, symlinks=True)
        run = subprocess.run([*gpudra, "convert", ".", *args, "-o", "json"], cwd=copy,
                             capture_output=True, text=True, check=False)
        try:
            return json.loads(run.stdout).get("workloads", [])
        except json.JSONDecodeError:
            sys.stderr.write(f"{tree}: no JSON report (exit {run.returncode}): "
                             f"{run.stderr.strip()[:200]}\n")
            return []


def tally(workloads: list[dict]) -> Counter:
    counts: Counter = Counter()
    for w in workloads:
        strategy = w.get("strategy")
        text = " ".join([str(w.get("reason") or ""), *map(str, w.get("notes") or ())])
        if strategy == "rewrite":
            counts["converted"] += 1
            counts["vouched"] += VOUCHED in text
        elif strategy == "blocked":
            counts["blocked"] += 1
            counts["blocked_by_registry"] += UNCHECKED in (w.get("reason") or "")
        else:
            counts[str(strategy)] += 1
    return counts


def golden_args(case: Path) -> list[str]:
    """The case's CLI options, as tests/convert/test_golden.py passes them."""
    import yaml  # gpudra's own dependency: run this script with gpudra's interpreter

    spec = yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8")) or {}
    return list(spec.get("args", []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    parser.add_argument("--gpudra", default=f"{sys.executable} -m gpudra")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    gpudra = options.gpudra.split()
    results: dict[str, dict[str, int]] = {}
    if options.corpus.is_dir():
        total: Counter = Counter()
        for repo in sorted(p for p in options.corpus.iterdir() if p.is_dir()):
            total += tally(convert(gpudra, repo, []))
        results["corpus"] = dict(total)
    golden: Counter = Counter()
    for case in sorted(p for p in options.golden.iterdir() if (p / "case.yaml").is_file()):
        golden += tally(convert(gpudra, case / "before", golden_args(case)))
    results["golden"] = dict(golden)
    for name, counts in results.items():
        print(f"{name:8} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
