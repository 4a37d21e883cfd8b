"""gpudra.printable: what every output prints of a value (escape_text, quote_name, escaped) and
what it never prints (redact)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudra.results.model import Severity
from gpudra.printable import (escape_text, escaped, quote_name, redact, redacted_data,
                               redacted_lines)

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                    "\u2066-\u2069\ud800-\udfff]")
HOSTILE = st.text(st.characters(codec=None, categories=None), max_size=40) | st.text(
    st.sampled_from("a:/@\\\"\x1b\n\r\x07\x9b\u202e\u2066\u2028\ud800 "), max_size=40)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(HOSTILE)
def test_escaped_text_is_one_safe_line_and_escaping_twice_changes_nothing(text: str) -> None:
    once = escape_text(text)
    assert not UNSAFE.search(once)
    assert escape_text(once) == once
    assert not UNSAFE.search(quote_name(text))
    if not UNSAFE.search(text):
        assert once is text


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9+.-]{0,6}", fullmatch=True), st.text(
    st.characters(blacklist_characters="/?#@\"'<>\\", blacklist_categories=("Zs", "Cc")),
    min_size=1, max_size=20), st.text(max_size=20))
def test_no_userinfo_survives_redaction(scheme: str, userinfo: str, rest: str) -> None:
    secret = f"{scheme}://{userinfo}@host.example{rest}"
    assert f"{userinfo}@" not in redact(f"cannot reach {secret}: refused")
    assert "Bearer ***" in redact(f"header b'Bearer {userinfo}'") or not userinfo.strip()


@dataclass(frozen=True, slots=True)
class _Record:
    name: str
    file: str
    severity: Severity
    notes: tuple[str, ...] = ()
    extra: dict | None = None


def test_escaped_escapes_every_value_but_file_names_and_enums() -> None:
    record = _Record("a\nb", "x\ny.yaml", Severity.ERROR, ("c\x1bd",), {"k\u202e": ["e\rf"]})
    assert escaped(record) == _Record("a\\nb", "x\ny.yaml", Severity.ERROR, ("c\\x1bd",),
                                      {"k\\u202e": ["e\\rf"]})
    assert escaped(record).severity is Severity.ERROR


def test_escaped_keeps_the_very_object_when_nothing_needs_escaping() -> None:
    record = _Record("a", "b.yaml", Severity.INFO, ("c",), {"k": ["v"]})
    assert escaped(record) is record


REDACTED_LINES = [
    ("", ()),
    ("image: trainer:1\nvalue: plain\n", ()),
    ("a\nvalue: https://alice:s3cret@host/x\nb\n", (2,)),
    ("url: https://u:p@h\nauth: Bearer abc.def\n", (1, 2)),
    # A token YAML folds onto a more indented next line is redacted there, marker and
    # indentation kept; an ordinary next line (a key, a comment, not more indented) is not.
    ("header: Bearer\n  abc.def\n", (2,)),
    ("+  value: Bearer\n+    s3cr3t\n-x\n", (2,)),
    (" value: bearer \r\n+    s3cr3t # c\r\n", (2,)),
    ("auth: Basic\n  QWxhZGRpbjpvcGVuMQ==\n", (2,)),
    ("auth: Basic\n  English\n", ()),
    ("a: Bearer\n  # c\n", ()),
    ("a: Bearer\n  b: c\n", ()),
    ("  a: Bearer\n  b\n", ()),
    ("note: Bearer\nimage: busybox\n", ()),
    ("-note: bearer\r\n+image: busybox\r\n", ()),
    (" # BEARER\t\n-  image: busybox\n+  image: busybox:2\n", ()),
    ("auth: Basic\nQWxhZGRpbjpvcGVu\n", ()),
    ("a: Bearer\u2028tok\x85Bearer tok\n", (3,)),
    ("x: Bearer \nauth: Bearer abc.def\n", (2,)),
    ("no newline at the end https://u:p@h", (1,)),
]


@pytest.mark.parametrize(("text", "lines"), REDACTED_LINES)
def test_redacted_lines_are_the_lines_redaction_changes(text: str,
                                                       lines: tuple[int, ...]) -> None:
    assert redacted_lines(text) == lines
    shown = redact(text).splitlines()
    assert [n for n, line in enumerate(shown, start=1) if "***" in line] == list(lines)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(["Bearer", "bearer ", "Basic", "Basic QWxhZGRpbjpvcGVu",
                                 "https://u:p@h", "://", "@", " ", "\t", "\n", "\r\n",
                                 "\u2028", "\x85", "+image: busybox", "-", "tok"]),
                max_size=12).map("".join))
def test_redaction_is_line_by_line(text: str) -> None:
    # Each line is redacted as it is on its own, but for a continuation of a line ending in
    # an auth word: same lines, same line breaks, so a diff keeps its shape.
    lines = text.splitlines(keepends=True)
    shown = redact(text).splitlines(keepends=True)
    assert len(shown) == len(lines)
    for number, (before, after) in enumerate(zip(lines, shown)):
        assert _line_break(after) == _line_break(before)
        continues = number > 0 and re.search(r"(?:(?i:bearer)|Basic)[ \t]*\W*$",
                                             lines[number - 1]) is not None
        if not continues:
            assert after == redact(before)


def _line_break(line: str) -> str:
    return line[len(line.rstrip(BREAKS)):]


BREAKS = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"


REDACTED_VALUES = [
    # (a decoded string, the secret it must not show, what it keeps)
    ("Bearer\n   s3cr3t", "s3cr3t", "Bearer"),
    ("Bearer\ns3cr3t", "s3cr3t", "Bearer"),
    ("bEaReR \t\n tok.en", "tok.en", "bEaReR"),
    ("Basic\n  QWxhZGRpbjpvcGVuMQ==", "QWxhZGRpbjpvcGVuMQ", "Basic"),
    ("note: Bearer\nimage: busybox", "", "image: busybox"),
]


@pytest.mark.parametrize(("value", "secret", "kept"), REDACTED_VALUES)
def test_data_strings_redact_a_token_across_line_breaks(value: str, secret: str,
                                                        kept: str) -> None:
    shown = redacted_data({value: [value]})
    (key, [item]), = shown.items()
    for text in (key, item):
        assert kept in text
        if secret:
            assert secret not in text and "***" in text
        else:
            assert text == value


KEYS_THAT_REDACT_ALIKE = [
    # (a mapping, its keys after redaction: none lost, later ones numbered)
    ({"https://k:v@h": 1, "https://k2:v2@h": 2}, {"https://***@h": 1, "https://***@h (2)": 2}),
    ({"https://***@h": 0, "https://k:v@h": 1}, {"https://***@h": 0, "https://***@h (2)": 1}),
    ({"https://k:v@h": 1, "https://***@h": 0}, {"https://***@h (2)": 1, "https://***@h": 0}),
    ({"Bearer a": 1, "Bearer b": 2, "Bearer *** (2)": 3},
     {"Bearer ***": 1, "Bearer *** (3)": 2, "Bearer *** (2)": 3}),
]


@pytest.mark.parametrize(("mapping", "shown"), KEYS_THAT_REDACT_ALIKE)
def test_keys_that_redact_alike_are_all_kept(mapping: dict[str, int],
                                             shown: dict[str, int]) -> None:
    assert redacted_data(mapping) == shown
    assert len(redacted_data([mapping])[0]) == len(mapping)


REDACTION_GAPS = [
    # (text, the secret it must not show, what it keeps)
    ("BeArEr tok.en", "tok.en", "BeArEr ***"),
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "Authorization: Basic ***"),
    ("https://admin:pa'ss@h/x", "pa'ss", "https://***@h/x"),
    ("https://admin:p@ss@h/x and a@b", "p@ss", "https://***@h/x and a@b"),
    ("Basic English words", "", "Basic English words"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), REDACTION_GAPS)
def test_redaction_gaps_of_the_second_review(text: str, secret: str, kept: str) -> None:
    shown = redact(text)
    assert shown == kept
    assert not secret or secret not in shown


WORDS = st.sampled_from(["bearer", "Bearer", "BeArEr", "Basic", "dXNlcjpwYXNz", "tok.en",
                         "https://u:p@h", "a:b", "@", "'", "x"])
PHRASES = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.dictionaries(PHRASES, st.lists(PHRASES, max_size=3) | PHRASES, max_size=4))
def test_redacting_yaml_or_json_text_keeps_it_valid(data: dict[str, object]) -> None:
    import json

    import yaml
    for text, load in ((yaml.safe_dump(data), yaml.safe_load),
                       (json.dumps(data), json.loads)):
        shown = redact(text)
        loaded = load(shown)
        assert len(shown.splitlines()) == len(text.splitlines())
        assert isinstance(loaded, dict) and len(loaded) <= len(data)
        assert not re.search(r"(?i:bearer)[ \t]+tok\.en|Basic[ \t]+dXNlcjpwYXNz|u:p@", shown)
