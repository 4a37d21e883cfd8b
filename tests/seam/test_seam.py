"""Replay every seam case and compare it with the record, byte for byte (after masks.py).

A failure names the case and the output (stdout, stderr, exit, a written file) and points at the
first differing byte with a diff. An intended change records again (`python -m tests.seam
record`) and says why in its commit."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.seam import record
from tests.seam.cases import Case, all_cases
from tests.seam.compare import differences
from tests.seam.run import Clusters, fake_clusters, run_case

CASES = all_cases()


@pytest.fixture(scope="module")
def clusters() -> Iterator[Clusters]:
    with fake_clusters({c.cluster for c in CASES if c.cluster}) as running:
        yield running


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict]:
    return {group: record.load(group) for group in sorted({c.group for c in CASES})}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.group}/{c.name}" for c in CASES])
def test_replay_matches_the_record(case: Case, clusters: Clusters,
                                   recorded: dict[str, dict]) -> None:
    expected = recorded[case.group].get(case.name)
    assert expected is not None, f"{case.name}: not recorded (python -m tests.seam record)"
    problems = differences(expected, run_case(case, clusters))
    assert not problems, f"{case.group}/{case.name} differs from the record:\n" + "\n".join(
        problems)


def test_every_recorded_case_is_still_run(recorded: dict[str, dict]) -> None:
    """A case dropped from cases.py must be dropped from the record on purpose."""
    run = {(c.group, c.name) for c in CASES}
    stale = sorted((g, n) for g, cases in recorded.items() for n in cases if (g, n) not in run)
    assert not stale


@pytest.mark.parametrize(("case_name", "output"), [("audit-json", "stdout"),
                                                   ("convert-output-dir", "files")])
def test_one_changed_byte_fails_the_comparison(case_name: str, output: str,
                                               clusters: Clusters, tmp_path: Path) -> None:
    """The instrument can fail: one byte changed in a temporary copy of the record."""
    record.save("examples", record.load("examples"), "test", tmp_path)
    tampered = copy.deepcopy(record.load("examples", tmp_path)[case_name])
    if output == "files":
        path = next(p for p, v in sorted(tampered["files"].items()) if isinstance(v, str))
        text = tampered["files"][path]
    else:
        path, text = None, tampered[output]
    assert isinstance(text, str) and len(text) > 100
    offset = len(text) // 2
    changed = text[:offset] + chr(ord(text[offset]) ^ 1) + text[offset + 1:]
    if path is None:
        tampered[output] = changed
    else:
        tampered["files"][path] = changed
    case = next(c for c in CASES if c.group == "examples" and c.name == case_name)
    problems = differences(tampered, run_case(case, clusters))
    assert len(problems) == 1
    assert f"first differing byte at offset {offset} " in problems[0]


@pytest.mark.parametrize("name", ["examples/help-audit", "examples/audit-table",
                                  "examples/convert-in-place", "examples/preflight-fail-on-warn",
                                  "clusters/examples-cluster-verify-table",
                                  "examples/audit-bad-format"])
def test_in_process_runs_print_what_a_real_process_prints(name: str,
                                                         clusters: Clusters) -> None:
    """The record is made in-process (fast); a real `python -m gpudra` gives the same bytes."""
    case = next(c for c in CASES if f"{c.group}/{c.name}" == name)
    assert not differences(run_case(case, clusters), run_case(case, clusters, process=True))
