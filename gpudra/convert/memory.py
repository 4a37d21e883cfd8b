"""Convert one object in memory, with no text to edit: for `gpudra plan` on unconverted trees.

The planner decides what `convert` would change (operations and new DRA objects); applied to
the data, they give the objects `convert` would write, which plan then checks against real
devices. Layout concerns (anchors, flow style) do not arise without text, so every path counts
as editable here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpudra.convert.planner import ConvertOptions, Planner
from gpudra.k8s.workloads import WorkloadTable
from gpudra.convert.records import WorkloadResult
from gpudra.k8s.objects import PathT
from gpudra.yamledit.ops import apply_to_data
from gpudra.yamledit.yaml_nodes import NodeDocument


class _Anything(NodeDocument):
    def __init__(self) -> None:
        super().__init__(None, None)

    def editable(self, path: PathT) -> bool:
        return True


def in_memory_converter(options: ConvertOptions, table: WorkloadTable | None = None,
                        existing: Iterable[Mapping[str, Any]] = (), *, live: bool = False
                        ) -> Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]] | None]:
    """A plan ConvertHook: an object still on the device plugin -> the objects convert would
    write for it (the rewritten workload first, then its claims and templates); None for
    objects convert would not rewrite (already on DRA, blocked, not a workload). `existing`
    are the other objects: their ResourceClaim and template names are not handed out again,
    as convert does on a tree. `live`: the objects were read from a cluster, where a Pod's
    spec.nodeName is the node the scheduler bound it to, which `convert --from-cluster`
    drops too (gpudra.convert.export): the converted pod is created anew and scheduled again."""
    planner = Planner(options, table or WorkloadTable())
    planner.reserve_existing(existing)

    def convert(data: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
        if str(data.get("apiVersion", "")).startswith("resource.k8s.io/") or \
                not may_ask_for_nvidia(data):
            return None
        if live and data.get("kind") == "Pod" and isinstance(data.get("spec"), Mapping) \
                and "nodeName" in data["spec"]:
            data = {**data, "spec": {k: v for k, v in data["spec"].items() if k != "nodeName"}}
        plan = planner.plan("<memory>", data, (), _Anything())
        if plan.result is None or plan.result.strategy != "rewrite":
            return None
        return [apply_to_data(data, plan.ops), *(obj for obj, _ in plan.new_objects)]

    return convert


def convert_result(options: ConvertOptions, table: WorkloadTable,
                   data: Mapping[str, Any]) -> WorkloadResult | None:
    """What convert would say of `data` alone (its strategy, and why when blocked), or None
    for an object it does not look at."""
    plan = Planner(options, table).plan("<memory>", data, (), _Anything())
    return plan.result


_KEY = b'"nvidia.com/'


def may_ask_for_nvidia(data: Mapping[str, Any]) -> bool:
    """False when no key anywhere in `data` starts with `nvidia.com/`: convert rewrites only
    what asks for an NVIDIA device-plugin resource (gpudra.k8s.devices.classify), so it would
    leave such an object as it is. The data as JSON, searched in C, tells that in a few
    microseconds, where planning an object already on DRA reads its pod specs (about 30 us):
    a key serialises as a quote and the key itself (nothing in `nvidia.com/` is escaped).
    True also when the data is not JSON (bytes, a key that is a tuple): then planning decides."""
    import orjson  # a dependency; only plan and cutover convert in memory

    try:
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return True
    return _KEY in text
