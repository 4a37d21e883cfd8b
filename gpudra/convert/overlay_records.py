"""The records of an overlay plan: what each object of the tree is before and after this run,
the edits planned per file, and the binding of a patched count to the claim that takes it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpudra.convert.records import ContainerClaim, WorkloadResult
from gpudra.kustomize.build import Resource
from gpudra.k8s.objects import PathT
from gpudra.kustomize.patches import Patch

Origin = tuple[str, int, PathT]
PatchKey = tuple[str, str, int]  # (kustomization, patch field, index): one entry of a patch list
ClaimTarget = tuple[str, str, str | None]  # (claim kind, claim name, namespace) a count goes to
# (claim kind, workload group, workload kind, fieldSpec path): gpudra.kustomize.names'
# reference_specs without the referenced name
ReferenceSpec = tuple[str, str, str, str]
DRA_GROUP = "resource.k8s.io"


@dataclass(frozen=True)
class ObjectState:
    """One object of the tree before and after this run, and what this run does with it."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    converted_now: bool          # this run rewrites it (its result is `rewrite` or `quota`)
    reason: str | None = None    # why this run leaves it (blocked), if it has a GPU
    claims: tuple[ContainerClaim, ...] = ()  # the planner's record of what it references


class ConvertedTree(Protocol):
    def state(self, origin: Origin) -> ObjectState | None: ...

    def writable(self, file: str) -> bool: ...

    def claim_object(self, namespace: str | None, name: str,
                     kind: str) -> Mapping[str, Any] | None: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class FileEdit:
    path: str
    old: bytes
    new: bytes


@dataclass
class OverlayPlan:
    vetoes: dict[Origin, str] = field(default_factory=dict)
    results: list[WorkloadResult] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)


class Blocked(Exception):
    """This patch cannot follow its converted target; the message says why."""


@dataclass(frozen=True)
class Binding:
    kind: str            # ResourceClaimTemplate | ResourceClaim
    name: str            # the object's name in the base
    index: int
    flat: bool           # v1beta1: count sits on the request itself


@dataclass
class PatchWork:
    patch: Patch
    deletes: dict[int, list[PathT]] = field(default_factory=dict)   # doc index -> paths
    results: list[WorkloadResult] = field(default_factory=list)
    targets: list[Resource] = field(default_factory=list)           # workloads it follows


def current_text(plan: OverlayPlan, view: ConvertedTree, path: str) -> bytes:
    """A file's content with this plan's earlier edits of it."""
    key = os.path.normpath(path)
    for edit in reversed(plan.edits):
        if os.path.normpath(edit.path) == key:
            return edit.new
    return view.read(path)


def add_edit(plan: OverlayPlan, edit: FileEdit) -> None:
    key = os.path.normpath(edit.path)
    for i, earlier in enumerate(plan.edits):
        if os.path.normpath(earlier.path) == key:
            plan.edits[i] = FileEdit(earlier.path, earlier.old, edit.new)
            return
    plan.edits.append(edit)


def patch_result(patch: Patch, target: Resource | None, strategy: str, reason: str | None,
            notes: tuple[str, ...] = ()) -> WorkloadResult:
    kind = target.kind if target else str((patch.target or {}).get("kind") or "")
    name = target.current_name if target else (patch.target or {}).get("name")
    ns = target.current_namespace if target else None
    return WorkloadResult(patch.kustomization if patch.inline else patch.file, kind, name, ns,
                          strategy, reason, notes)


def uses_claims(data: Mapping[str, Any]) -> bool:
    text = repr(data)
    return "resourceClaimTemplateName" in text or "resourceClaimName" in text
