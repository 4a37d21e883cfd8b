#!/usr/bin/env python3
"""Benchmark `gpudra convert FILE --diff` against `gpudra convert FILE` (writing) on one file.

    python benchmarks/bench_diff.py [--docs 500,2000,20000] [--rounds 3] [--gpudra PATH]

For each size, one file of that many GPU Jobs (the documents differ only in their names, as a
generated or `kubectl get -o yaml` dump does) is written to a temporary directory. Each round
runs, as child processes, `convert FILE --diff` (stdout read whole, nothing written) and
`convert COPY` (COPY re-made from FILE before the round, outside the timed region). Reported
per size: median, min and max wall time and the median CPU time (user + system, steadier on a
shared machine) of each, the ratio of the CPU medians (target: --diff at most 2x writing), and
the CPU time per document, whose flatness across sizes is the linearity. Correctness, untimed: the diff applied to FILE gives exactly the written COPY.
The exit status is 1 only when a correctness check fails. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_audit import child_env, find_gpudra, run, stats  # noqa: E402

TARGET_RATIO = 2.0
JOB = """---
apiVersion: batch/v1
kind: Job
metadata:
  name: train-{i}
  namespace: ml
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: nvcr.io/nvidia/pytorch:24.05-py3
        resources:
          limits:
            nvidia.com/gpu: 1
"""
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_diff(old: list[str], diff: str) -> list[str]:
    """A unified diff of one file applied to `old` (context lines checked)."""
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]  # the ---/+++ header
    for line in lines:
        hunk = HUNK.match(line)
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += old[at:start]
            at = start
        elif line.startswith(" "):
            if old[at] != line[1:]:
                raise ValueError(f"context mismatch at line {at + 1}")
            out.append(old[at])
            at += 1
        elif line.startswith("-"):
            if old[at] != line[1:]:
                raise ValueError(f"removed line mismatch at line {at + 1}")
            at += 1
        elif line.startswith("+"):
            out.append(line[1:])
    return out + old[at:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", default="500,2000,20000", help="documents per file, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--gpudra", help="gpudra executable (default: the one beside this python)")
    a = p.parse_args(argv)
    gpudra = find_gpudra(a.gpudra)
    env = child_env()
    print(f"python {platform.python_version()}  {platform.platform()}  cpus={os.cpu_count()}")
    print(f"gpudra: {gpudra}\n")
    print(f"{'docs':>6} {'command':<8} {'wall s':>9} {'min':>7} {'max':>7} {'cpu s':>7} "
          f"{'cpu ms/doc':>10}")
    problems: list[str] = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpudra-bench-diff-") as tmp:
        for n in (int(x) for x in a.docs.split(",")):
            source = os.path.join(tmp, f"jobs-{n}.yaml")
            copy = os.path.join(tmp, f"copy-{n}.yaml")
            with open(source, "w") as fh:
                fh.write("".join(JOB.format(i=i) for i in range(n)))
            walls: dict[str, list[float]] = {"diff": [], "write": []}
            cpus: dict[str, list[float]] = {"diff": [], "write": []}
            diff_out = b""
            for _ in range(a.rounds):
                shutil.copyfile(source, copy)
                os.sync()
                done = run([gpudra, "convert", source, "--diff", "-q"], env)
                walls["diff"].append(done.wall)
                cpus["diff"].append(done.cpu)
                diff_out = done.stdout
                if done.rc != 1:
                    problems.append(f"{n}: convert --diff exited {done.rc}")
                written = run([gpudra, "convert", copy, "-q"], env)
                walls["write"].append(written.wall)
                cpus["write"].append(written.cpu)
                if written.rc != 0:
                    problems.append(f"{n}: convert exited {written.rc}")
            with open(source) as fh:
                old = fh.read().splitlines(keepends=True)
            with open(copy) as fh:
                new = fh.read().splitlines(keepends=True)
            try:
                if apply_diff(old, diff_out.decode()) != new:
                    problems.append(f"{n}: the diff does not give the written file")
            except (ValueError, IndexError) as exc:
                problems.append(f"{n}: the diff does not apply: {exc}")
            cpu = {}
            for name, values in walls.items():
                median, low, high = stats(values)
                cpu[name] = stats(cpus[name])[0]
                print(f"{n:>6} {name:<8} {median:>9.2f} {low:>7.2f} {high:>7.2f} "
                      f"{cpu[name]:>7.2f} {1000 * cpu[name] / n:>10.2f}")
            rows.append((n, cpu["diff"] / cpu["write"], 1000 * cpu["diff"] / n))
    print(f"\n{'docs':>6} {'diff/write':>10} {'diff cpu ms/doc':>16}   (CPU medians; target: "
          f"ratio <= {TARGET_RATIO:.1f}, ms/doc flat)")
    for n, ratio, per_doc in rows:
        print(f"{n:>6} {ratio:>10.2f} {per_doc:>16.2f}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
