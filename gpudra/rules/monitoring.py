"""GPU5xx: monitoring that reads device-plugin resource metrics and goes dark after migration."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpudra.results.model import Severity
from gpudra.k8s.objects import ManifestObject, SourceObject, TemplateText, as_list, dig
from gpudra.rules.base import AuditContext, Checker, rule

CATEGORY = "monitoring"
NEEDLE = "nvidia_com_gpu"
# The scheduler's own metrics keep the resource name unsanitised.
_SCHEDULER_METRIC = re.compile(r"kube_pod_resource_(?:request|limit)\b[^\n]*nvidia\.com/")


def reads_gpu_metric(line: str) -> bool:
    """Whether a query line reads a device-plugin GPU resource metric (also used by preflight)."""
    return NEEDLE in line or _SCHEDULER_METRIC.search(line) is not None

GPU501 = rule(
    "GPU501", "ksm-gpu-resource-metric", Severity.WARNING, CATEGORY,
    "Alert or dashboard reads kube-state-metrics' nvidia_com_gpu resource.",
    "Rebase the query on DCGM exporter or ResourceClaim metrics.",
)


class Monitoring(Checker):
    rules = (GPU501,)

    def check_document(self, obj: SourceObject, ctx: AuditContext) -> None:
        if not isinstance(obj, ManifestObject):  # a live object has no text to read
            return
        if NEEDLE not in obj.text and "kube_pod_resource_" not in obj.text:
            return
        starts = _rule_starts(obj)
        reported: set[int] = set()  # one finding per rule, at its first line that reads one
        for offset, line in enumerate(obj.text.splitlines()):
            if reads_gpu_metric(line):
                number = obj.first_line + offset
                item = next((rule for start, rule in reversed(starts) if start <= number), None)
                if item is not None and id(item) in reported:
                    continue
                if item is not None:
                    reported.add(id(item))
                ctx.emit(GPU501, obj, _message(obj, item), line=number,
                         resource="nvidia.com/gpu")

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        """Live objects have no text: read the alert and recording rule expressions."""
        if obj.text or obj.kind != "PrometheusRule":
            return
        groups = dig(obj.data, "spec", "groups")
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            rules = dig(group, "rules")
            for r, item in enumerate(rules if isinstance(rules, list) else ()):
                expr = dig(item, "expr")
                if isinstance(expr, str) and any(reads_gpu_metric(x) for x in expr.splitlines()):
                    ctx.emit(GPU501, obj, _message(obj, item),
                             path=("spec", "groups", g, "rules", r, "expr"),
                             resource="nvidia.com/gpu")

    def check_template(self, text: TemplateText, ctx: AuditContext) -> None:
        what = _TEMPLATE_WHAT.get(text.reason, "template")
        for number, line in text.numbered_lines():
            if reads_gpu_metric(line):
                ctx.emit(GPU501, text, f"{what} reads the nvidia_com_gpu resource metric, "
                         "which DRA pods no longer produce", line=number, resource="nvidia.com/gpu")


# Text that is not a Kubernetes object is most often a dashboard (Grafana JSON) or a config.
_TEMPLATE_WHAT = {"not-a-manifest": "dashboard or config file", "helm-values": "Helm values file",
                  "helm-template": "Helm template"}


def _rule_starts(obj: SourceObject) -> list[tuple[int, Any]]:
    """(first line, rule) of every rule of a PrometheusRule in a file, in line order."""
    if obj.kind != "PrometheusRule":
        return []
    starts = []
    for g, group in enumerate(as_list(dig(obj.data, "spec", "groups"))):
        for r, item in enumerate(as_list(dig(group, "rules"))):
            line = obj.line_of(("spec", "groups", g, "rules", r))
            if line is not None:
                starts.append((line, item))
    return sorted(starts, key=lambda pair: pair[0])


def _message(obj: SourceObject, item: Any) -> str:
    """A recording rule's series feed other rules and dashboards; an alert stops firing."""
    if obj.kind == "PrometheusRule" and isinstance(item, Mapping):
        if item.get("record"):
            return (f"recording rule {item['record']!r} reads the nvidia_com_gpu resource "
                    "metric, which DRA pods no longer produce: the series it records, and "
                    "every alert and dashboard built on it, stop counting them")
        if item.get("alert"):
            return (f"alerting rule {item['alert']!r} reads the nvidia_com_gpu resource "
                    "metric, which DRA pods no longer produce: it stops firing for them")
    return f"{_what(obj)} reads the nvidia_com_gpu resource metric, which DRA pods no longer produce"


def _what(obj: SourceObject) -> str:
    if obj.kind == "PrometheusRule":
        return "Prometheus rule"
    if obj.kind == "ConfigMap":
        return "ConfigMap (dashboard)"
    return obj.kind or "dashboard"
