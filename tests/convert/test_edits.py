"""prune (gpudra.convert.edits): deletions that empty a container become the deletion of the
container, unless another operation writes into it."""

from __future__ import annotations

import pytest

from gpudra.convert.edits import prune
from gpudra.yamledit.ops import Append, Delete, Extend, Op, Replace

DATA = {"spec": {"resources": {"limits": {"nvidia.com/gpu": 1}}, "env": [{"name": "A"}]}}
GPU = ("spec", "resources", "limits", "nvidia.com/gpu")

CASES = [
    # (operations, the deletions left after pruning)
    ([Delete(GPU)], [Delete(("spec", "resources"))]),
    ([Delete(GPU), Append(("spec", "resources", "limits"), "cpu", 1)], [Delete(GPU)]),
    ([Delete(GPU), Replace(("spec", "resources", "limits", "cpu"), 2)], [Delete(GPU)]),
    ([Delete(("spec", "env", 0))], [Delete(("spec", "env"))]),
    ([Delete(("spec", "env", 0)), Extend(("spec", "env"), ({"name": "B"},))],
     [Delete(("spec", "env", 0))]),
]


@pytest.mark.parametrize(("ops", "deletes"), CASES,
                         ids=["emptied", "appended", "replaced", "emptied-list", "extended"])
def test_prune_keeps_what_an_operation_writes_into(ops: list[Op], deletes: list[Delete]) -> None:
    # the "replaced" case raised AttributeError before (a Replace has no `mapping`)
    pruned = list(ops)
    prune(DATA, (), pruned)
    assert [op for op in pruned if isinstance(op, Delete)] == deletes
    assert [op for op in pruned if not isinstance(op, Delete)] == \
        [op for op in ops if not isinstance(op, Delete)]
