"""yaml_nodes.compose refuses a mapping that gives a scalar key twice (PyYAML would keep the
last value while an edit is located at the first); merge keys and collections as keys are not
duplicates of anything (a document with one is refused later, when its data is built), and
a node an alias reaches twice is checked once."""

from __future__ import annotations

import pytest
import yaml

from gpudra.yamledit.yaml_nodes import compose

REFUSED = {
    "top level": "a: 1\nb: 2\na: 3\n",
    "deep": "spec:\n  template:\n    spec:\n      containers:\n      - name: x\n"
            "        resources: {}\n        resources: {}\n",
    "quoted and plain": "a: 1\n'a': 2\n",
    "same text, other tag": "1: x\n!!str 1: y\n",
    "beside a complex key": "? [k]\n: v\nb: 1\nb: 2\n",
    "inside a complex key": "? {a: 1, a: 2}\n: v\n",
    "in a sequence item": "- a: 1\n  a: 2\n",
    "below an alias": "x: &x {a: 1, a: 2}\ny: *x\n",
}

ACCEPTED = {
    "different keys": "a: 1\nb: {c: 2, d: [ {e: 3}, {e: 4} ]}\n",
    "two merge keys": "base: &b {a: 1}\nmore: &m {c: 2}\nx:\n  <<: *b\n  <<: *m\n",
    "merge key and a key it brings": "base: &b {a: 1}\nx:\n  <<: *b\n  a: 2\n",
    "one node, two aliases": "x: &x {a: 1}\ny: *x\nz: *x\n",
    "same key in sibling mappings": "- {a: 1}\n- {a: 2}\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_a_key_given_twice_is_refused(text: str) -> None:
    with pytest.raises(yaml.MarkedYAMLError, match="duplicate key"):
        compose(text)


@pytest.mark.parametrize("text", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_other_mappings_are_composed(text: str) -> None:
    assert compose(text).data == yaml.load(text, Loader=yaml.SafeLoader)
