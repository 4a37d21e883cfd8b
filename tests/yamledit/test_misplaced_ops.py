"""An operation whose path does not lead to what it edits (a mapping to append to, a key to
insert before, a list item's list) is a LayoutError, as every layout gpudra cannot edit is:
the file is left as it is, never half-edited by a crash."""

from __future__ import annotations

import pytest

from gpudra.yamledit.ops import Append, Delete, InsertBefore, Op, Unwrap, apply_to_text
from gpudra.yamledit.textedit import LayoutError, detect_style
from gpudra.yamledit.yaml_nodes import compose

TEXT = "spec:\n  replicas: 2\n  items:\n  - a\n  - b\n"

CASES = [
    # (operation, what the error says)
    (Append(("spec", "replicas"), "x", 1), "no MappingNode at ('spec', 'replicas')"),
    (InsertBefore(("spec", "items"), 0, "x", 1), "no mapping key at ('spec', 'items', 0)"),
    (Unwrap(("spec", "items"), 1), "no mapping key at ('spec', 'items', 1)"),
    (Delete(("spec", "missing")), "nothing at ('spec', 'missing')"),
]


@pytest.mark.parametrize(("op", "message"), CASES, ids=["append-to-scalar", "insert-before-item",
                                                        "unwrap-item", "delete-missing"])
def test_an_operation_on_the_wrong_shape_is_a_layout_error(op: Op, message: str) -> None:
    doc = compose(TEXT)
    with pytest.raises(LayoutError) as caught:
        apply_to_text(TEXT, doc, [op], detect_style(TEXT, doc.root))
    assert str(caught.value) == message
