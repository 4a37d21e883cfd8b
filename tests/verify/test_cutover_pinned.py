"""cutover's whole output pinned on generated fleets of moderate size: the JSON report, the
Markdown runbook, every file of --output-dir (runbook.md and the wave folders), the exit code
and stderr. Recorded from the code before the speed-ups of issue 32 (benchmarks/
bench_cutover.py), so a change that makes cutover faster provably changes nothing it prints or
writes. A change that means to change the output records again, and says why in its commit:

    python -m tests.verify.test_cutover_pinned record

The fleets are tests/verify/generated_fleet.py's: the benchmark's shape, with and without
--max-wave-nodes, and a varied fleet (tainted, time-slicing and already switched pools; every
kind of workload; quotas) whose cutover completes, and one whose cutover is blocked."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.verify.generated_fleet import benchmark_fleet, varied_fleet

PINNED = Path(__file__).with_name("pinned_cutover.json")
OUT = "out"  # --output-dir, relative to the run's directory: paths in the output are stable

CASES: dict[str, tuple[Callable[[], list[dict[str, Any]]], tuple[str, ...]]] = {
    "benchmark-60-nodes-300-workloads": (lambda: benchmark_fleet(60, 300), ()),
    "benchmark-40-nodes-150-workloads-chunks-of-3": (lambda: benchmark_fleet(40, 150, seed=2),
                                                     ("--max-wave-nodes", "3")),
    "varied-complete": (lambda: varied_fleet(200, seed=4, scale=4), ()),
    "varied-blocked": (lambda: varied_fleet(60, seed=1), ()),
}


def outputs(case: str, workdir: Path) -> dict[str, str]:
    """Every output of the case's cutover, by name: its SHA-256 (the exit codes and stderr
    as text)."""
    build, args = CASES[case]
    source = workdir / "fleet.json"
    source.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": build()}))
    found: dict[str, str] = {}
    for form, extra in (("json", ("--output-dir", OUT)), ("markdown", ())):
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", source.name,
                              "-o", form, *extra, *args], cwd=workdir, capture_output=True,
                             timeout=600)
        found[f"-o {form}: exit"] = str(run.returncode)
        found[f"-o {form}: stderr"] = run.stderr.decode("utf-8", "replace")
        found[f"-o {form}: stdout"] = _digest(run.stdout)
    for path in sorted((workdir / OUT).rglob("*")):
        if path.is_file():
            found[str(path.relative_to(workdir))] = _digest(path.read_bytes())
    return found


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("case", sorted(CASES))
def test_cutover_output_is_what_was_recorded(case: str, tmp_path: Path) -> None:
    recorded = json.loads(PINNED.read_text(encoding="utf-8"))[case]
    found = outputs(case, tmp_path)
    assert any(name.startswith(f"{OUT}/wave-") for name in found), "no wave folder written"
    changed = sorted(n for n in recorded.keys() | found.keys() if recorded.get(n) != found.get(n))
    assert not changed, f"{len(changed)} outputs differ from the recording: {changed[:10]}"


def record() -> None:
    import tempfile

    pinned = {}
    for case in sorted(CASES):
        with tempfile.TemporaryDirectory() as workdir:
            pinned[case] = outputs(case, Path(workdir))
        print(f"{case}: {len(pinned[case])} outputs")
    PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m tests.verify.test_cutover_pinned record")
    record()
