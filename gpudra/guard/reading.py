"""What the decommission gate reads of the guard in a live cluster, through one typed reader per
kind: Namespaces (their labels), ValidatingAdmissionPolicies (which are gpudra's guard) and
ValidatingAdmissionPolicyBindings (which namespaces they select, with which actions); and the
one judgement made of them: which namespaces labelled as migrated no binding of the guard
covers.

Everything here came from an API server, but what it holds is still untrusted: each object is
decoded against the fields read (msgspec, as gpudra.sources.shapes does for the kinds verify
judges) and one that does not decode is left out with the reason, never guessed at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from gpudra.guard.policy import GUARD_LABEL, MIGRATED_LABEL, MIGRATED_VALUE

# What a binding must do for its namespaces to count as guarded: refuse or warn. Audit alone
# writes the audit log and nobody creating a pod sees it.
GUARDING_ACTIONS = frozenset({"Deny", "Warn"})


class _Struct(msgspec.Struct, omit_defaults=True, gc=False):
    """Every field may be absent or null."""


_Shape = TypeVar("_Shape", bound=_Struct)


class _Requirement(_Struct):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class _LabelSelector(_Struct):
    matchLabels: dict[str, str] | None = None
    matchExpressions: list[_Requirement] | None = None


class _Meta(_Struct):
    name: str | None = None
    labels: dict[str, str] | None = None


class _Namespace(_Struct):
    metadata: _Meta | None = None


class _Policy(_Struct):
    metadata: _Meta | None = None


class _MatchResources(_Struct):
    namespaceSelector: _LabelSelector | None = None
    objectSelector: _LabelSelector | None = None
    resourceRules: list[Any] | None = None
    excludeResourceRules: list[Any] | None = None


class _BindingSpec(_Struct):
    policyName: str | None = None
    validationActions: list[str] | None = None
    matchResources: _MatchResources | None = None


class _Binding(_Struct):
    metadata: _Meta | None = None
    spec: _BindingSpec | None = None


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector; the empty one selects everything (as a binding's unset one does)."""

    labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    def selects(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.labels) and all(
            _meets(r, labels) for r in self.expressions)

    @property
    def empty(self) -> bool:
        return not self.labels and not self.expressions


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: Mapping[str, str]

    @property
    def migrated(self) -> bool:
        return self.labels.get(MIGRATED_LABEL) == MIGRATED_VALUE


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    guard: bool  # labelled gpudra.io/guard=true: what `gpudra guard` wrote


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    policy: str
    actions: frozenset[str]
    namespaces: Selector
    narrowed: bool  # an object selector or resource rules: only some of a namespace's objects


def _meets(requirement: Requirement, labels: Mapping[str, str]) -> bool:
    """Kubernetes label-selector operators; an unknown one selects nothing (a binding the
    API server would have refused cannot be said to cover anything)."""
    has = requirement.key in labels
    if requirement.operator == "In":
        return has and labels[requirement.key] in requirement.values
    if requirement.operator == "NotIn":
        return not has or labels[requirement.key] not in requirement.values
    if requirement.operator == "Exists":
        return has
    if requirement.operator == "DoesNotExist":
        return not has
    return False


def _decode(obj: Mapping[str, Any], shape: type[_Shape]) -> _Shape:
    try:
        return msgspec.convert(obj, shape, strict=True)
    except msgspec.ValidationError as error:
        raise ValueError(str(error)) from None


def _name(meta: _Meta | None) -> str:
    if meta is None or not meta.name:
        raise ValueError("metadata.name: missing")
    return meta.name


def _selector(selector: _LabelSelector | None) -> Selector:
    if selector is None:
        return Selector()
    expressions = tuple(Requirement(r.key or "", r.operator or "", tuple(r.values or ()))
                        for r in selector.matchExpressions or ())
    return Selector(tuple(sorted((selector.matchLabels or {}).items())), expressions)


def read_namespace(obj: Mapping[str, Any]) -> Namespace:
    """Raises ValueError naming the field when `obj` is no readable Namespace."""
    meta = _decode(obj, _Namespace).metadata
    return Namespace(_name(meta), dict(meta.labels or {}) if meta is not None else {})


def read_policy(obj: Mapping[str, Any]) -> Policy:
    decoded = _decode(obj, _Policy)
    labels = decoded.metadata.labels or {} if decoded.metadata else {}
    return Policy(_name(decoded.metadata), labels.get(GUARD_LABEL) == "true")


def read_binding(obj: Mapping[str, Any]) -> Binding:
    decoded = _decode(obj, _Binding)
    spec = decoded.spec or _BindingSpec()
    match = spec.matchResources or _MatchResources()
    narrowed = bool(match.resourceRules or match.excludeResourceRules) or not _selector(
        match.objectSelector).empty
    return Binding(_name(decoded.metadata), spec.policyName or "",
                   frozenset(spec.validationActions or ()), _selector(match.namespaceSelector),
                   narrowed)


def unguarded(namespaces: Iterable[Namespace], policies: Iterable[Policy],
              bindings: Iterable[Binding]) -> list[str]:
    """The namespaces labelled as migrated that no binding of a guard policy covers (selects
    them, for every object, with Deny or Warn), sorted."""
    guards = {p.name for p in policies if p.guard}
    covering = [b for b in bindings if b.policy in guards and b.actions & GUARDING_ACTIONS
                and not b.narrowed]
    return sorted(n.name for n in namespaces if n.migrated
                  and not any(b.namespaces.selects(n.labels) for b in covering))
