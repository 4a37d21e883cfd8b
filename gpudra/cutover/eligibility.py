"""Whether a pod may run on a node: its nodeSelector, required node affinity and tolerations
of the node's NoSchedule/NoExecute taints (core/v1 semantics; preferred terms do not bind).
GPU taints the device plugin's pods tolerate through the ExtendedResourceToleration admission
plugin (`nvidia.com/gpu`) count as tolerated: they stay tolerated after convert, which adds the
toleration where the plugin did (by default; `--no-add-toleration` opts out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.objects import as_mapping, dig

_AUTO_TOLERATED = frozenset({"nvidia.com/gpu"})


def eligible(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = {str(k): str(v) for k, v in as_mapping(dig(node, "metadata", "labels")).items()}
    name = str(dig(node, "metadata", "name") or "")
    selector = as_mapping(pod_spec.get("nodeSelector"))
    if any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    required = dig(pod_spec, "affinity", "nodeAffinity",
                   "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    if isinstance(required, list) and required and not any(
            _term(t, labels, name) for t in required if isinstance(t, Mapping)):
        return False
    tolerations = [t for t in pod_spec.get("tolerations") or () if isinstance(t, Mapping)]
    for taint in dig(node, "spec", "taints") or ():
        if not isinstance(taint, Mapping) or taint.get("effect") not in ("NoSchedule",
                                                                         "NoExecute"):
            continue
        if taint.get("key") in _AUTO_TOLERATED:
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _term(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = [e for e in term.get("matchExpressions") or () if isinstance(e, Mapping)]
    fields = [e for e in term.get("matchFields") or () if isinstance(e, Mapping)]
    if not expressions and not fields:
        return False  # an empty term matches no node
    return all(_match(e, labels.get(str(e.get("key")))) for e in expressions) and all(
        _match(e, name if e.get("key") == "metadata.name" else None) for e in fields)


def _match(expression: Mapping[str, Any], value: str | None) -> bool:
    op = expression.get("operator")
    values = [str(v) for v in expression.get("values") or ()]
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


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    return operator == "Exists" or str(toleration.get("value", "")) == str(taint.get("value", ""))
