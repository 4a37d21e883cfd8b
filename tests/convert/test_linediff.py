"""The diff convert prints: correct for any input, and made of small alignments only, so that
its cost grows with the file, not with its square (timings: benchmarks/bench_diff.py)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudra.convert import linediff
from gpudra.convert.writer import unified_diff


def apply(old: list[str], codes: list[linediff.Opcode], new: list[str]) -> list[str]:
    out: list[str] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
            out += old[i1:i2]
        else:
            out += new[j1:j2]
    return out


def covers(codes: list[linediff.Opcode], n_old: int, n_new: int) -> bool:
    i = j = 0
    for _, i1, i2, j1, j2 in codes:
        if (i1, j1) != (i, j):
            return False
        i, j = i2, j2
    return (i, j) == (n_old, n_new)


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "spec:\n", "- x\n", "\n"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(old=LINES, new=LINES)
def test_opcodes_turn_old_into_new(old: list[str], new: list[str]) -> None:
    codes = linediff.opcodes(old, new)
    assert covers(codes, len(old), len(new))
    assert apply(old, codes, new) == new


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=400), st.data())
def test_long_inputs_are_anchored_and_still_correct(seeds: list[int], data) -> None:
    old = [f"line {s}\n" for s in seeds] * 3  # repeats and unique lines mixed
    new = list(old)
    for _ in range(data.draw(st.integers(0, 30))):
        at = data.draw(st.integers(0, len(new)))
        new.insert(at, data.draw(st.sampled_from(["added\n", "line 7\n", f"new {at}\n"])))
    codes = linediff.opcodes(old, new)
    assert covers(codes, len(old), len(new))
    assert apply(old, codes, new) == new


def test_small_files_get_difflibs_diff() -> None:
    old = ["apiVersion: v1\n", "kind: Pod\n", "spec:\n", "  a: 1\n", "  b: 2\n"]
    new = ["apiVersion: v1\n", "kind: Pod\n", "spec:\n", "  a: 3\n", "  b: 2\n", "  c: 4\n"]
    assert "".join(linediff.unified(old, new, "a/x", "b/x")) == \
        "".join(difflib.unified_diff(old, new, "a/x", "b/x"))


def jobs(count: int, converted: bool) -> str:
    out = []
    for i in range(count):
        claim = ("        resources:\n          claims:\n          - name: gpu\n"
                 if converted else
                 "        resources:\n          limits:\n            nvidia.com/gpu: 1\n")
        out.append(f"---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: job-{i}\nspec:\n"
                   "  template:\n    spec:\n      containers:\n      - name: c\n" + claim)
    return "".join(out)


def test_a_file_of_thousands_of_documents_is_aligned_in_small_pieces(monkeypatch) -> None:
    """difflib (quadratic on repeated lines) only ever sees the stretch between two anchors."""
    sizes: list[int] = []
    real = difflib.SequenceMatcher

    def recording(isjunk, a, b):
        sizes.append(len(a) + len(b))
        return real(isjunk, a, b)

    monkeypatch.setattr(linediff.difflib, "SequenceMatcher", recording)
    old, new = jobs(5000, False), jobs(5000, True)
    diff = unified_diff("jobs.yaml", old.encode(), new.encode())
    assert max(sizes) <= 20 and len(sizes) == 5000
    assert diff.count("\n-            nvidia.com/gpu: 1\n") == 5000
    assert diff.count("\n+          - name: gpu\n") == 5000
