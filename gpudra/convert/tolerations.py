"""The `nvidia.com/gpu` toleration a converted pod loses.

GKE and most platforms taint GPU nodes `nvidia.com/gpu:NoSchedule`, and the
ExtendedResourceToleration admission plugin gives a pod a toleration for each extended resource
it requests. A converted pod requests none, so nothing tolerates the taint for it any more:
convert writes the toleration the plugin used to add.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPU_TAINT = "nvidia.com/gpu"
TOLERATION = {"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}
NOTE = ("added the toleration nvidia.com/gpu (Exists, NoSchedule): the ExtendedResourceToleration "
        "admission plugin gave it to pods that request nvidia.com/gpu, and GPU nodes are often "
        "tainted so; this pod now requests none (--no-add-toleration leaves it out)")


def tolerates_gpu_taint(spec: Mapping[str, Any]) -> bool:
    """The pod spec already tolerates a `nvidia.com/gpu` NoSchedule taint as the user wrote it
    (any operator on that key, or an empty key with Exists)."""
    tolerations = spec.get("tolerations")
    for toleration in tolerations if isinstance(tolerations, list) else ():
        if not isinstance(toleration, Mapping) or \
                toleration.get("effect") not in (None, "", "NoSchedule"):
            continue
        key = toleration.get("key")
        if key == GPU_TAINT or (not key and toleration.get("operator") == "Exists"):
            return True
    return False


def has_gpu_taint(node: Mapping[str, Any]) -> bool:
    """A Node tainted `nvidia.com/gpu` with NoSchedule (any value)."""
    taints = (node.get("spec") or {}).get("taints") if isinstance(node, Mapping) else None
    return any(isinstance(t, Mapping) and t.get("key") == GPU_TAINT
               and t.get("effect") == "NoSchedule"
               for t in (taints if isinstance(taints, list) else ()))
