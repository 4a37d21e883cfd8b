"""Documents read without a line index (inventories, plan's trees) are built from the parser's
events instead of a composed node tree; what comes out must be what the composed path gives:
the same values of the same types in the same order, or the same error on the same line. And
document markers are found without a regex, at the places the regex finds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.sources import documents
from gpudra.sources.documents import Chunk, ParseError, parse_chunk, split_documents

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def _typed(value: Any) -> Any:
    """`value` with every type spelled out: True == 1 and 1.0 == 1 must not pass for equal,
    and a mapping's order is part of what the reports print."""
    if isinstance(value, dict):
        return ("map", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    return (type(value).__name__, value)


def _outcome(chunk: Chunk, lines: bool) -> Any:
    try:
        parsed = parse_chunk(chunk, lines=lines)
    except ParseError as exc:
        return ("error", exc.message, exc.line, exc.not_an_object)
    return ("data", _typed(parsed.data))


def _same_either_way(text: str) -> None:
    for chunk in split_documents(text):
        assert _outcome(chunk, lines=False) == _outcome(chunk, lines=True), chunk.text


ODD_DOCUMENTS = [
    "",
    "# only a comment\n",
    "---\n",
    "just a scalar\n",
    "- 1\n- 01\n- 0x1F\n- 0o17\n- 1_000\n- -3\n- +4\n- 1.5\n- .inf\n- -.Inf\n- .nan\n- 1e3\n",
    "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: true\ng: ~\nh: null\ni:\nj: 'yes'\nk: \"1\"\n",
    "when: 2024-01-02\nstamp: 2024-01-02T03:04:05Z\nversion: 9.0.0\nbus: '0000:00:00.0'\n",
    "~: nothing\n1: one\ntrue: yes\n1.5: half\n",
    "base: &b {x: 1}\nuse: *b\nmerged:\n  <<: *b\n  y: 2\n",
    "? [complex, key]\n: value\n",
    "? {a: 1}\n: value\n",
    "tagged: !!str 12\nbinary: !!binary aGk=\nset: !!set {a, b}\n",
    "custom: !reference [x]\n",
    "apiVersion: v1\nkind: Pod\nspec: !custom {a: 1}\n",
    "list: !!seq [1, 2]\nmap: !!map {a: 1}\n",
    "a: 1\na: 2\n",
    "flow: {a: [1, {b: c}], d: []}\nempty: {}\n",
    "long: " + "x" * 100 + "\nlonger: '" + "1" * 80 + "'\nnumber: " + "9" * 70 + "\n",
    "block: |\n  line one\n  line two\nfolded: >-\n  a\n  b\n",
    "a: [1, 2\n",
    "a: b: c\n",
    "alias: *nowhere\n",
    "a: 1\n--- \nb: 2\n",
    "a: 1\n...\n",
    "key:\ttab\n",
    "a: 1 \t\nb: 2\t\n",
    "<<: {a: 1}\nb: 2\n",
    "%YAML 1.1\n---\na: 1\n",
    "- &a [*a]\n",
]


@pytest.mark.parametrize("text", ODD_DOCUMENTS)
def test_odd_documents_read_the_same_without_lines(text: str) -> None:
    _same_either_way(text)


def test_most_documents_take_the_event_path() -> None:
    """The event path must be taken where it can be (else it is dead code and its speed is
    never had): plain data without anchors, scalar roots and empty streams."""
    for text in ("a: 1\nb: [x, 'y', 2.5, 2024-01-02]\n", "just text\n", "# comment\n",
                 "~: 1\n1: 2\n"):
        assert documents.data_from_events(text) == parse_chunk(Chunk(text, 1)).data, text
    for text in ("a: &x 1\n", "a: !!str 1\n", "? [a]\n: 1\n", "<<: {a: 1}\n", "a: 1\n---\nb: 1\n"):
        with pytest.raises(documents._Unusual):
            documents.data_from_events(text)


SCALARS = st.sampled_from([
    "1", "0", "01", "-1", "0x10", "0o7", "1_0", "1.0", "1e5", ".inf", "~", "null", "Null", "",
    "yes", "no", "On", "off", "y", "n", "true", "False", "2024-01-02", "12:30", "9.0.0", "a b",
    "'q'", "\"d\"", "'yes'", "\"0x10\"", "<<", "-", "[]", "{}", "x: y", "&a 1", "*a", "!!str 3",
    "!!int '3'", "!t x", "\"\\t\"", "|\n  block", "? k", "#c",
])


@st.composite
def yaml_documents(draw: st.DrawFn) -> str:
    """Small block and flow documents put together from scalars YAML reads in many ways, some
    of them broken on purpose (an alias without its anchor, a stray `: `)."""
    lines = []
    for depth in draw(st.lists(st.integers(0, 3), min_size=1, max_size=8)):
        indent = "  " * depth
        kind = draw(st.sampled_from(["map", "seq", "flow", "scalar"]))
        key, value = draw(SCALARS), draw(SCALARS)
        if kind == "map":
            lines.append(f"{indent}{key or 'k'}: {value}")
        elif kind == "seq":
            lines.append(f"{indent}- {value}")
        elif kind == "flow":
            lines.append(f"{indent}f: {{{key or 'k'}: [{value}, {draw(SCALARS)}]}}")
        else:
            lines.append(f"{indent}{value}")
    separator = draw(st.sampled_from(["\n", "\n---\n", "\n...\n"]))
    return separator.join(lines) + draw(st.sampled_from(["", "\n", " \t\n"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_documents())
def test_generated_documents_read_the_same_without_lines(text: str) -> None:
    _same_either_way(text)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the project")
def test_the_corpus_reads_the_same_without_lines() -> None:
    files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    assert files
    for path in files:
        _same_either_way(path.read_text(encoding="utf-8-sig", errors="replace"))


_MARKER_REGEX = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(["---", "...", "-", ".", " ", "\t", "\n", "\r\n", "a", "#"]),
                max_size=16).map("".join))
def test_document_markers_are_where_the_regex_finds_them(text: str) -> None:
    assert documents._marker_starts(text) == [m.start() for m in _MARKER_REGEX.finditer(text)]
