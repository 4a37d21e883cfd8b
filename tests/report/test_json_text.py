"""Every JSON report is the text json.dumps(indent=2, ensure_ascii=False) writes, whichever
encoder made it (gpudra.report.json_text), but for the characters a terminal acts on, which
are `\\u` escapes (the same data)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudra.report import json_text


_TERMINAL_ACTS_ON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                               "\ud800-\udfff]")


def _plain(data: Any) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return _TERMINAL_ACTS_ON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# Floats from 1e-4 up: below it the two spell the same number differently (1e-05, 0.00001).
FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: f == 0 or abs(f) >= 1e-4)
SCALARS = st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | FLOATS | st.text()
JSON_DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(JSON_DATA)
def test_reports_are_the_text_json_writes(data: Any) -> None:
    assert json_text.dumps(data) == _plain(data)


def test_what_only_json_takes_is_written_as_json_writes_it() -> None:
    for data in ({1: "a", None: "b"}, {True: "c", False: "d"}, {"big": 2**70}, {"lone": "\ud800"},
                 {"nested": [{2.5: "x"}]}):
        assert json_text.dumps(data) == _plain(data)


def test_control_characters_and_non_ascii_are_spelled_as_json_spells_them() -> None:
    data = {"text": "".join(map(chr, range(0, 0x80))) + "é ✓ \u2028 𝄞", "e": [], "m": {}}
    assert json_text.dumps(data) == _plain(data)
    assert json.loads(json_text.dumps({"tiny": 1e-05}))["tiny"] == 1e-05


def test_what_a_terminal_acts_on_is_escaped_and_the_data_is_the_same() -> None:
    data = {"name": "a\x1b[2Jb\x9b31m\u202egpj.exe\u2066c\ud800\x7f"}
    text = json_text.dumps(data)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]",
                         text)
    assert json.loads(text) == data
