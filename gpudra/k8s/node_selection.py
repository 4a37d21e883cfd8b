"""Which nodes a pod template selects: its `nodeSelector` and required node affinity, as
core/v1 defines them (the terms are ORed, a term's requirements ANDed, an empty term matches
no node; preferred terms do not bind), and the same selection said in one line.

Taints and tolerations are not part of it: they are the caller's to weigh.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import as_mapping, dig

_REQUIRED = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
             "nodeSelectorTerms")


def selects_node(pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    """True when the spec's nodeSelector and required node affinity both admit the node."""
    selector = as_mapping(pod_spec.get("nodeSelector"))
    if any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    terms = _required_terms(pod_spec)
    return terms is None or any(_term(t, labels, name) for t in terms)


def describe_selection(pod_spec: Mapping[str, Any]) -> str:
    """`nodeSelector gpudra.io/gpu-stack=dra`, `node affinity (a in (x, y)) or (b exists)`,
    both joined by `and`; `no node selector or required node affinity` when it has neither."""
    parts = []
    selector = as_mapping(pod_spec.get("nodeSelector"))
    if selector:
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(
            selector.items())))
    terms = _required_terms(pod_spec)
    if terms is not None:
        said = [_describe_term(t) for t in terms]
        if len(said) == 1:
            parts.append(f"node affinity {said[0]}")
        else:
            parts.append("node affinity " + " or ".join(f"({s})" for s in said))
    return " and ".join(parts) or "no node selector or required node affinity"


def _required_terms(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The required terms, or None when there are none (a missing or empty list binds
    nothing)."""
    terms = dig(pod_spec, *_REQUIRED)
    if not isinstance(terms, list) or not terms:
        return None
    return [t if isinstance(t, Mapping) else {} for t in terms]


def _requirements(term: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]],
                                                     list[Mapping[str, Any]]]:
    return _mappings(term.get("matchExpressions")), _mappings(term.get("matchFields"))


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _term(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions, fields = _requirements(term)
    if not expressions and not fields:
        return False  # an empty term matches no node
    return all(_match(e, labels.get(str(e.get("key")))) for e in expressions) and all(
        _match(e, name if e.get("key") == "metadata.name" else None) for e in fields)


def _match(expression: Mapping[str, Any], value: str | None) -> bool:
    op = expression.get("operator")
    values = [str(v) for v in _values(expression)]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _describe_term(term: Mapping[str, Any]) -> str:
    expressions, fields = _requirements(term)
    said = [_describe_requirement(e) for e in (*expressions, *fields)]
    return " and ".join(said) or "an empty term (matches no node)"


def _describe_requirement(expression: Mapping[str, Any]) -> str:
    key, op = str(expression.get("key", "")), str(expression.get("operator", ""))
    values = [str(v) for v in _values(expression)]
    if op in ("Exists", "DoesNotExist"):
        return f"{key} {'exists' if op == 'Exists' else 'does not exist'}"
    if op in ("In", "NotIn") and len(values) == 1:
        return f"{key}{'=' if op == 'In' else '!='}{values[0]}"
    if op in ("Gt", "Lt") and values:
        return f"{key} {'>' if op == 'Gt' else '<'} {values[0]}"
    said = {"In": "in", "NotIn": "not in"}.get(op, op or "?")
    return f"{key} {said} ({', '.join(values)})"


def _values(expression: Mapping[str, Any]) -> list[Any]:
    values = expression.get("values")
    return values if isinstance(values, list) else []
