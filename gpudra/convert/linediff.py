"""Line diffs in time close to linear in the lines, for files of thousands of documents.

difflib's matcher looks for the longest matching block between every pair of positions it
tries, which is quadratic in the lines of a file whose lines repeat (2,000 Jobs in one file:
20 s; 20,000 never finished). Convert's edits are local: most lines are kept, and many kept
lines occur once on each side (object names). Those unique lines, kept in the same order
(the longest increasing run of their positions, found by patience sorting in O(n log n)),
anchor the diff; difflib then only aligns the short stretches between two anchors. A stretch
that is still long is anchored again on the lines unique within it.

Any alignment of anchors gives a correct diff (applying it turns the old text into the new);
the anchors only decide which of the equally correct diffs is shown.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterator, Sequence

Opcode = tuple[str, int, int, int, int]  # difflib's (tag, i1, i2, j1, j2)
# Stretches up to this many lines (old + new) go to difflib as they are: short ones are cheap,
# and difflib's choice is the diff people expect.
_DIRECT = 400
_MAX_DEPTH = 8  # re-anchoring rounds before a long stretch goes to difflib anyway


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """difflib-style opcodes turning `a` into `b`, adjacent equal runs merged."""
    out: list[Opcode] = []
    _diff(a, b, 0, len(a), 0, len(b), out, 0)
    merged: list[Opcode] = []
    for code in out:
        if merged and merged[-1][0] == code[0] == "equal":
            tag, i1, _, j1, _ = merged[-1]
            merged[-1] = (tag, i1, code[2], j1, code[4])
        elif code[1] != code[2] or code[3] != code[4]:
            merged.append(code)
    return merged


def _diff(a: Sequence[str], b: Sequence[str], a0: int, a1: int, b0: int, b1: int,
          out: list[Opcode], depth: int) -> None:
    # The common head and tail cost nothing to find and often are most of the file.
    head = 0
    while a0 + head < a1 and b0 + head < b1 and a[a0 + head] == b[b0 + head]:
        head += 1
    out.append(("equal", a0, a0 + head, b0, b0 + head))
    a0, b0 = a0 + head, b0 + head
    tail = 0
    while a0 < a1 - tail and b0 < b1 - tail and a[a1 - tail - 1] == b[b1 - tail - 1]:
        tail += 1
    a1, b1 = a1 - tail, b1 - tail
    anchors = _anchors(a, b, a0, a1, b0, b1) \
        if (a1 - a0) + (b1 - b0) > _DIRECT and depth < _MAX_DEPTH else []
    if not anchors:
        _direct(a, b, a0, a1, b0, b1, out)
    else:
        i, j = a0, b0
        for ai, bj in anchors:
            _diff(a, b, i, ai, j, bj, out, depth + 1)
            out.append(("equal", ai, ai + 1, bj, bj + 1))
            i, j = ai + 1, bj + 1
        _diff(a, b, i, a1, j, b1, out, depth + 1)
    out.append(("equal", a1, a1 + tail, b1, b1 + tail))


def _direct(a: Sequence[str], b: Sequence[str], a0: int, a1: int, b0: int, b1: int,
            out: list[Opcode]) -> None:
    if a0 == a1 and b0 == b1:
        return
    if a0 == a1 or b0 == b1:
        out.append(("insert" if a0 == a1 else "delete", a0, a1, b0, b1))
        return
    matcher = difflib.SequenceMatcher(None, a[a0:a1], b[b0:b1])
    out.extend((tag, i1 + a0, i2 + a0, j1 + b0, j2 + b0)
               for tag, i1, i2, j1, j2 in matcher.get_opcodes())


def _anchors(a: Sequence[str], b: Sequence[str], a0: int, a1: int, b0: int,
             b1: int) -> list[tuple[int, int]]:
    """Lines that occur once in a[a0:a1] and once in b[b0:b1], as (i, j) pairs increasing
    in both: the longest such chain (patience sorting)."""
    count_a: dict[str, int] = {}
    for i in range(a0, a1):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    where_b: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for j in range(b0, b1):
        line = b[j]
        if count_a.get(line) == 1:
            count_b[line] = count_b.get(line, 0) + 1
            where_b[line] = j
    pairs = [(i, where_b[a[i]]) for i in range(a0, a1) if count_b.get(a[i]) == 1]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by i) whose j increase too."""
    tops: list[int] = []  # j of the last pair of the best chain of each length
    ends: list[int] = []  # index into pairs of that pair
    back: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        pile = bisect.bisect_left(tops, j)
        if pile == len(tops):
            tops.append(j)
            ends.append(index)
        else:
            tops[pile] = j
            ends[pile] = index
        back[index] = ends[pile - 1] if pile else -1
    chain: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index != -1:
        chain.append(pairs[index])
        index = back[index]
    return chain[::-1]


def grouped(codes: list[Opcode], context: int = 3) -> Iterator[list[Opcode]]:
    """The opcodes cut into hunks with `context` equal lines around each change, as a
    unified diff shows them."""
    if not codes:
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def unified(a: Sequence[str], b: Sequence[str], fromfile: str, tofile: str,
            context: int = 3) -> Iterator[str]:
    """difflib.unified_diff's lines (lines keep their own endings), in near-linear time."""
    started = False
    for group in grouped(opcodes(a, b), context):
        if not started:
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
            started = True
        first, last = group[0], group[-1]
        yield (f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's `start,length` as unified diffs write it (1-based; an empty range names the
    line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"
