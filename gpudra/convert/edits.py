"""Operation helpers shared by the planners: add to a pod spec, prune what a deletion empties."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import PathT, dig
from gpudra.k8s.workloads import PodSpecRef
from gpudra.yamledit.ops import Append, Delete, Extend, InsertBefore, Op, Replace


def prune(data: Mapping[str, Any], base: PathT, ops: list[Op]) -> None:
    """Replace deletions that would empty a mapping or list with the deletion of its entry.

    A container that receives something (an Append/Extend/InsertBefore) is never pruned.
    Deepest parents first, so an emptied `limits:` can in turn empty its `resources:`.
    """
    grows = {_receiver(op) for op in ops if not isinstance(op, Delete)}
    deletes = list(dict.fromkeys(op.path for op in ops if isinstance(op, Delete)))
    changed = True
    while changed:
        changed = False
        by_parent: dict[PathT, int] = {}
        for path in deletes:
            by_parent[path[:-1]] = by_parent.get(path[:-1], 0) + 1
        for parent in sorted(by_parent, key=len, reverse=True):
            if parent in grows or len(parent) <= len(base):
                continue
            value = dig(data, *parent[len(base):])
            if isinstance(value, (Mapping, list)) and len(value) == by_parent[parent]:
                deletes = [p for p in deletes if p[:-1] != parent] + [parent]
                changed = True
                break
    # A deletion inside a deleted subtree is redundant.
    kept = [p for p in deletes if not any(p != d and p[: len(d)] == d for d in deletes)]
    ops[:] = [op for op in ops if not isinstance(op, Delete)] + [Delete(p) for p in kept]


def _receiver(op: Op) -> PathT:
    """The container an operation writes into: a deletion must not prune it as emptied."""
    if isinstance(op, Extend):
        return op.sequence
    if isinstance(op, (Replace, Delete)):  # a replaced scalar's mapping keeps that key
        return op.path[:-1]
    return op.mapping


def add_to_pod(spec: PodSpecRef, pod: PathT, key: str, items: list[Any], ops: list[Op]) -> None:
    """Add `items` to the pod spec's list `key`, creating it before the containers if needed."""
    existing = spec.data.get(key)
    if isinstance(existing, list) and existing:
        ops.append(Extend(pod + (key,), tuple(items)))
        return
    if key in spec.data:  # `key: []` or `key: null`: replace it
        ops.append(Delete(pod + (key,)))
    anchor = next((k for k in spec.data if k in ("initContainers", "containers")), None)
    if anchor is None:
        ops.append(Append(pod, key, list(items)))
    else:
        ops.append(InsertBefore(pod, anchor, key, list(items)))
