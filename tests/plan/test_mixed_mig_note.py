"""plan's prediction of a mixed-strategy MIG node says that the number of full GPUs is unknown
only when the node has no allocatable to tell it (issue 36, item 5: the note appeared on nodes
whose allocatable was set and listed only MIG devices)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.plan.synthesis import synthesize

NOTE = "mixed MIG without status.allocatable"
LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
          "nvidia.com/gpu.count": "2", "nvidia.com/mig.strategy": "mixed",
          "nvidia.com/mig-1g.5gb.count": "7", "nvidia.com/mig-1g.5gb.product":
              "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}


def _node(allocatable: dict[str, Any] | None) -> dict[str, Any]:
    status = {} if allocatable is None else {"allocatable": allocatable}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "mig-1", "labels": LABELS}, "status": status}


# (allocatable, whether the note is given, full GPUs predicted)
CASES = [
    (None, True, 0),                                              # nothing tells: say so
    ({}, True, 0),
    ({"nvidia.com/mig-1g.5gb": "7"}, False, 0),                   # every GPU in MIG mode
    ({"nvidia.com/mig-1g.5gb": "7", "nvidia.com/gpu": "1"}, False, 1),
]


@pytest.mark.parametrize(("allocatable", "noted", "full"), CASES)
def test_the_note_only_when_allocatable_cannot_tell(allocatable: dict[str, Any] | None,
                                                    noted: bool, full: int) -> None:
    inventory = synthesize([_node(allocatable)])
    assert any(NOTE in note for note in inventory.notes) is noted
    kinds = [d for d in inventory.devices if "mig" not in d.name]
    assert len(kinds) == full, [d.name for d in inventory.devices]
