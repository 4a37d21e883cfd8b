"""Whether a pod may run on a node: its nodeSelector, required node affinity and tolerations
of the node's NoSchedule/NoExecute taints (core/v1 semantics; preferred terms do not bind).
GPU taints the device plugin's pods tolerate through the ExtendedResourceToleration admission
plugin (`nvidia.com/gpu`) count as tolerated: they stay tolerated after convert, which adds the
toleration where the plugin did (by default; `--no-add-toleration` opts out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.node_selection import selects_node
from gpudra.k8s.objects import as_mapping, dig

_AUTO_TOLERATED = frozenset({"nvidia.com/gpu"})


def eligible(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    labels = {str(k): str(v) for k, v in as_mapping(dig(node, "metadata", "labels")).items()}
    name = str(dig(node, "metadata", "name") or "")
    if not selects_node(pod_spec, labels, name):
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


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    return operator == "Exists" or str(toleration.get("value", "")) == str(taint.get("value", ""))
