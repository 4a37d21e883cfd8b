"""convert's quota rewrite with `keep_quota_names` (what cutover --strategy bridge asks for a
namespace whose pods the bridge serves unchanged): the keys on those names stay, every other
device-plugin key goes, and the DRA keys are added all the same."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.convert.quotas import plan_quota
from gpudra.yamledit.ops import Append, Delete

GPU = "requests.nvidia.com/gpu"
LIMIT = "limits.nvidia.com/gpu"
MIG = "requests.nvidia.com/mig-1g.10gb"


def quota(**hard: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": "ml"}, "spec": {"hard": dict(hard)}}


@pytest.mark.parametrize(("hard", "keep", "names", "deleted"), [
    ({GPU: "8", MIG: "4"}, False, frozenset({"nvidia.com/gpu"}), {MIG}),
    ({GPU: "8", MIG: "4"}, False, frozenset(), {GPU, MIG}),
    ({GPU: "8", LIMIT: "8"}, False, frozenset({"nvidia.com/gpu"}), set()),
    ({MIG: "4"}, False, frozenset({"nvidia.com/gpu"}), {MIG}),
    ({GPU: "8", MIG: "4"}, True, frozenset(), set()),  # keep: nothing goes
])
def test_the_names_kept_for_the_bridge_keep_their_keys(
        hard: dict[str, str], keep: bool, names: frozenset[str], deleted: set[str]) -> None:
    data = quota(**hard)
    plan = plan_quota("q.yaml", data, (), keep=keep, asked=False, keep_names=names)
    assert {op.path[-1] for op in plan.ops if isinstance(op, Delete)} == deleted
    assert any(isinstance(op, Append) and op.key.endswith(".deviceclass.resource.k8s.io/devices")
               for op in plan.ops), plan.ops
    kept = [k for k in hard if k not in deleted and not keep and k.split(".", 1)[-1] in names]
    assert any("the bridge serves pods" in n for n in plan.result.notes) is bool(kept)
