"""`gpudra.io/ignore` and `.gpudra.yaml` waivers, as convert honours them: an object whose
annotation or waiver suppresses the finding convert would resolve (or `all`) is left as it is,
and reported as ignored (waived) with the reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.rules.base import SUPPRESS_ANNOTATION, parse_suppressions
from gpudra.rules.device_requests import CONVERTIBLE_RULES
from gpudra.results.waivers import WaiverSet

WORKLOAD_RULES = CONVERTIBLE_RULES  # device-plugin GPU, MIG and shared requests
QUOTA_RULES = ("GPU201", "GPU203")               # ResourceQuota, Kubeflow Profile quota
GUIDANCE_RULES = {"LimitRange": "GPU202", "ClusterQueue": "GPU204", "NodePool": "GPU205"}


def skip_reason(data: Mapping[str, Any], rules: Iterable[str], file: str | None = None,
                waivers: WaiverSet | None = None) -> tuple[str, str] | None:
    """(strategy, reason) when convert leaves `data` alone: `waived` when a .gpudra.yaml
    waiver covers one of `rules`, `ignored` when its annotation suppresses one (not under
    strict)."""
    rules = tuple(rules)
    metadata = data.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    if waivers is not None:
        for rule in rules:
            waiver = waivers.waiver_for(rule, str(data.get("kind") or "") or None,
                                        _text(metadata.get("namespace")),
                                        _text(metadata.get("name")), file)
            if waiver is not None:
                owner = f", owner {waiver.owner}" if waiver.owner else ""
                return "waived", (f"left as it is: a .gpudra.yaml waiver covers {rule} "
                                  f"({waiver.reason}{owner})")
        if waivers.strict:
            return None
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        return None
    suppressed = parse_suppressions(annotations.get(SUPPRESS_ANNOTATION))
    for rule in ("all", *rules):
        if rule in suppressed:
            return "ignored", (f"left as it is: its {SUPPRESS_ANNOTATION} annotation "
                               f"suppresses {rule} ({suppressed[rule]})")
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
