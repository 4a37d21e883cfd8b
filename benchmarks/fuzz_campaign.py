"""A fuzz campaign over every kind of input gpudra reads, outside the test suite.

    python benchmarks/fuzz_campaign.py                      # 2,000 inputs of every kind
    python benchmarks/fuzz_campaign.py --kind merge --count 300 --notes /tmp/fuzz

The inputs are tests/hostile/fuzz_kinds.py's (the suite's fuzz test draws from the same
generators, a few dozen per kind). Each runs in a forked child of this process (gpudra is
imported once, here) with an address-space limit (`--memory-gb`, 2 by default) and a time
limit (`--seconds`); the parent measures the child's peak resident memory (ru_maxrss). Per
kind it prints the inputs tried, how gpudra ended (accepted: exit 0, 1 or 4; refused: exit 2
or 3 with a one-line error), the failures (internal errors, tracebacks, other exit codes,
deaths by a signal), the hangs, and the largest peak RSS. With `--notes DIR`, every distinct
failure of a kind is written to DIR/<kind>.md with a reproducer (the command and the files).
Case N of a kind is the same on every run: `python -m tests.hostile.fuzz_kinds KIND SEED`
replays one (its seed is `--first` + N).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.hostile import fuzz_kinds as fk  # noqa: E402 - after the path

ONE_GB = 1 << 30


@dataclass
class Tally:
    kind: str
    tried: int = 0
    accepted: int = 0
    refused: int = 0
    unservable: int = 0  # cluster states the fake API server would not store
    failures: int = 0
    hangs: int = 0
    over_1gb: int = 0
    peak_kb: int = 0
    seconds: float = 0.0
    found: dict[str, tuple[int, fk.Case]] = field(default_factory=dict)  # signature -> seed


def _signature(problem: str) -> str:
    """A failure without what varies between inputs (paths, numbers, quoted values)."""
    text = re.sub(r"/tmp/\S+", "PATH", problem)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"0x[0-9a-f]+", "0xN", text)
    return re.sub(r"\d+", "N", text)[:200]


def _child(case: fk.Case, directory: Path, seconds: float, memory: int, out: int) -> None:
    """In the forked child: run the case under the limits, write what happened, and exit,
    whatever happens (the parent's loop must never run on in a child)."""
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        try:
            outcome = fk.run_case(case, directory, seconds)
            result: dict[str, object] = {"exit": outcome.exit_code, "problem": outcome.problem,
                                         "stderr": outcome.stderr[-1500:]}
        except fk.Unservable:
            result = {"unservable": True}
        except BaseException as exc:  # noqa: BLE001 - reported, whatever it is
            result = {"exit": None, "problem": f"harness: {type(exc).__name__}: {exc}"[:500]}
        os.write(out, json.dumps(result).encode()[:60000])
    except BaseException:  # noqa: BLE001 - out of memory even to report: say that much
        os.write(out, b'{"exit": null, "problem": "harness: MemoryError while reporting"}')
    finally:
        os._exit(0)


def run_one(case: fk.Case, seconds: float, memory: int, scratch: Path
            ) -> tuple[dict[str, object], int]:
    """(what the child reported, its peak RSS in KiB)."""
    directory = Path(tempfile.mkdtemp(dir=scratch))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(case, directory, seconds, memory, write_end)
    os.close(write_end)
    deadline = time.monotonic() + seconds + 10  # the child's own alarm first, then this
    status, usage = 0, None
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            os.close(read_end)
            shutil.rmtree(directory, ignore_errors=True)
            return {"exit": None, "problem": f"hang: killed after {seconds + 10:g} s"}, \
                usage.ru_maxrss
        time.sleep(0.005)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    shutil.rmtree(directory, ignore_errors=True)
    if os.WIFSIGNALED(status):
        return {"exit": None, "problem": f"killed by signal {os.WTERMSIG(status)}"}, \
            usage.ru_maxrss
    try:
        return json.loads(data), usage.ru_maxrss
    except ValueError:
        return {"exit": None, "problem": f"child said nothing (status {status})"}, \
            usage.ru_maxrss


def campaign(kind: str, count: int, first: int, seconds: float, memory: int,
             scratch: Path) -> Tally:
    tally = Tally(kind)
    started = time.monotonic()
    for seed in range(first, first + count):
        case = fk.KINDS[kind](random.Random(seed))
        result, peak = run_one(case, seconds, memory, scratch)
        tally.tried += 1
        tally.peak_kb = max(tally.peak_kb, peak)
        tally.over_1gb += peak * 1024 > ONE_GB
        if result.get("unservable"):
            tally.unservable += 1
            continue
        problem = result.get("problem")
        if problem:
            problem = str(problem)
            if problem.startswith("hang"):
                tally.hangs += 1
            else:
                tally.failures += 1
            signature = _signature(problem)
            earlier = tally.found.get(signature)
            size = sum(len(d) for d in case.files.values())
            if earlier is None or size < sum(len(d) for d in earlier[1].files.values()):
                tally.found[signature] = (seed, case)
        elif result.get("exit") in (2, 3):
            tally.refused += 1
        else:
            tally.accepted += 1
    tally.seconds = time.monotonic() - started
    return tally


def notes(tally: Tally, directory: Path, first: int) -> None:
    lines = [f"# Fuzz findings: {tally.kind}\n",
             f"Campaign: {tally.tried} inputs (seeds {first}..{first + tally.tried - 1}), "
             f"{tally.failures} failures, {tally.hangs} hangs, peak RSS "
             f"{tally.peak_kb / 1024:.0f} MiB; {len(tally.found)} distinct. Replay one: "
             f"`python -m tests.hostile.fuzz_kinds {tally.kind} SEED`.\n"]
    for signature, (seed, case) in sorted(tally.found.items()):
        lines.append(f"## {signature}\n\nseed {seed}\n\n{fk.describe(case)}")
    (directory / f"{tally.kind}.md").write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", action="append", choices=sorted(fk.KINDS),
                        help="an input kind (repeatable; default: every kind)")
    parser.add_argument("--count", type=int, default=2000, help="inputs per kind")
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="a run longer than this is a hang")
    parser.add_argument("--memory-gb", type=float, default=2.0,
                        help="address-space limit of each run")
    parser.add_argument("--notes", type=Path, help="write DIR/<kind>.md with reproducers")
    args = parser.parse_args()
    kinds = args.kind or list(fk.KINDS)
    # Made once, here: every child inherits them (and gpudra, imported by the first).
    fk.manifest_seeds(), fk.inventory_seeds(), fk.report_seed(), fk.baseline_seed()
    import gpudra.cli  # noqa: F401 - imported before the forks, not in each child

    scratch = Path(tempfile.mkdtemp(prefix="gpudra-fuzz-"))
    print(f"{'kind':<10} {'inputs':>6} {'accepted':>8} {'refused':>7} {'failures':>8} "
          f"{'hangs':>5} {'>1 GB':>5} {'peak RSS':>9} {'seconds':>8}  distinct")
    worst = 0
    try:
        for kind in kinds:
            tally = campaign(kind, args.count, args.first, args.seconds,
                             int(args.memory_gb * ONE_GB), scratch)
            print(f"{kind:<10} {tally.tried:>6} {tally.accepted:>8} {tally.refused:>7} "
                  f"{tally.failures:>8} {tally.hangs:>5} {tally.over_1gb:>5} "
                  f"{tally.peak_kb / 1024:>6.0f} MB {tally.seconds:>8.0f}  "
                  f"{len(tally.found)}" + (f" ({tally.unservable} unservable)"
                                           if tally.unservable else ""), flush=True)
            if args.notes is not None:
                args.notes.mkdir(parents=True, exist_ok=True)
                notes(tally, args.notes, args.first)
            worst = max(worst, tally.failures + tally.hangs + tally.over_1gb)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
