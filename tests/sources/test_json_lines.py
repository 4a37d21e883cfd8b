"""JSON line numbers without YAML: every path's line must be the line YAML's marks give."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudra.sources.documents import Chunk, parse_chunk
from gpudra.sources.json_lines import JsonLines, OneLine, load_json

KUBECTL_LIKE = {"apiVersion": "v1", "kind": "List", "items": [
    {"kind": "Pod", "metadata": {"name": "a", "labels": {}, "annotations": {
        "last-applied": '{"spec":{"containers":[{"name":"x"}]}}'}},
     "spec": {"containers": [{"name": "c", "args": ["--x", "}", "]"], "ports": [],
                              "resources": {"limits": {"nvidia.com/gpu": 2}}}]},
     "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    [1, [2, [3, {"deep": None}]]], "plain", 4.5, True]}


def _yaml_lines(text: str) -> dict:
    return parse_chunk(Chunk(text, 1)).lines


def _assert_same_lines(value: object, indent: int | str) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    data, index = load_json(text)
    assert data == value
    assert isinstance(index, JsonLines)
    for path, line in _yaml_lines(text).items():
        assert index.get(path) == line, path


@pytest.mark.parametrize("indent", [1, 2, 4, "\t"])
def test_lines_match_yaml_for_a_kubectl_like_list(indent: int | str) -> None:
    _assert_same_lines(KUBECTL_LIKE, indent)


# YAML (the oracle) refuses control characters and counts U+2028/2029 as line breaks.
TEXT = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(TEXT, max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(TEXT, max_size=6), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(TEXT, max_size=6), JSON_VALUES, min_size=1, max_size=5)
       | st.lists(JSON_VALUES, min_size=1, max_size=5))
def test_lines_match_yaml_for_any_document(value: object) -> None:
    _assert_same_lines(value, 2)


def test_missing_paths_have_no_line() -> None:
    _, index = load_json(json.dumps(KUBECTL_LIKE, indent=2))
    for path in [("nope",), ("items", 9), ("items", 0, "kind", "x"), ("items", 3, 0)]:
        assert index.get(path) is None
        assert index.get(path, 7) == 7


def test_one_line_text_is_line_1_everywhere_without_a_scan() -> None:
    data, index = load_json(json.dumps(KUBECTL_LIKE) + "\n\n")
    assert data == KUBECTL_LIKE
    assert isinstance(index, OneLine)
    assert index.get(("items", 0, "spec")) == 1


@pytest.mark.parametrize("text", ['{\n"a": 1,\n}', '[1,\n2', '{\n"a" 1}', '{"a": 1}\n{"b": 2}',
                                  '\n{"a": [1 2]}'])
def test_invalid_json_raises_what_json_raises(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        load_json(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert (raised.value.msg, raised.value.lineno) == (expected.value.msg, expected.value.lineno)


def test_duplicate_keys_keep_the_last_like_json() -> None:
    text = '{\n"a": 1,\n"a": 2\n}'
    data, index = load_json(text)
    assert data == {"a": 2} and index.get(("a",)) == 3
