"""`gpudra.io/ignore`, as convert honours it: an object whose annotation suppresses the finding
convert would resolve (or `all`) is left as it is, and reported as ignored with the reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.rules.base import SUPPRESS_ANNOTATION, parse_suppressions

WORKLOAD_RULES = ("GPU101", "GPU102", "GPU103")  # device-plugin GPU, MIG and shared requests
QUOTA_RULES = ("GPU201", "GPU203")               # ResourceQuota, Kubeflow Profile quota
GUIDANCE_RULES = {"LimitRange": "GPU202", "ClusterQueue": "GPU204", "NodePool": "GPU205"}


def skip_reason(data: Mapping[str, Any], rules: Iterable[str]) -> str | None:
    """Why convert leaves `data` alone, when its annotation suppresses one of `rules`."""
    metadata = data.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    suppressed = parse_suppressions(annotations.get(SUPPRESS_ANNOTATION))
    for rule in ("all", *rules):
        if rule in suppressed:
            return (f"left as it is: its {SUPPRESS_ANNOTATION} annotation suppresses {rule} "
                    f"({suppressed[rule]})")
    return None
