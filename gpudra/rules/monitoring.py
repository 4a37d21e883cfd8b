"""GPU5xx: monitoring that reads device-plugin resource metrics and goes dark after migration."""

from __future__ import annotations

import re

from gpudra.model import Severity
from gpudra.objects import SourceObject, TemplateText, dig
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
    """
kube-state-metrics exports container resource requests and limits with the resource name
sanitised into a label value, so `nvidia.com/gpu` appears as `resource="nvidia_com_gpu"`
(for example in `kube_pod_container_resource_limits`). Pods that get GPUs from claims request no
such resource, so these series disappear as workloads migrate: alerts stop firing and dashboards
show zero GPU use. Count DRA use from ResourceClaims instead (for example
`kube_resourceclaim_*` where available, or the DCGM exporter's per-pod GPU metrics).
""",
    "Rebase the query on DCGM exporter or ResourceClaim metrics.",
)


class Monitoring(Checker):
    rules = (GPU501,)

    def check_document(self, obj: SourceObject, ctx: AuditContext) -> None:
        if NEEDLE not in obj.text and "kube_pod_resource_" not in obj.text:
            return
        for offset, line in enumerate(obj.text.splitlines()):
            if reads_gpu_metric(line):
                ctx.emit("GPU501", obj, f"{_what(obj)} reads the nvidia_com_gpu resource "
                         "metric, which DRA pods no longer produce", line=obj.first_line + offset,
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
                    ctx.emit("GPU501", obj, f"{_what(obj)} reads the nvidia_com_gpu resource "
                             "metric, which DRA pods no longer produce",
                             path=("spec", "groups", g, "rules", r, "expr"),
                             resource="nvidia.com/gpu")

    def check_template(self, text: TemplateText, ctx: AuditContext) -> None:
        what = _TEMPLATE_WHAT.get(text.reason, "template")
        for number, line in text.numbered_lines():
            if reads_gpu_metric(line):
                ctx.emit("GPU501", text, f"{what} reads the nvidia_com_gpu resource metric, "
                         "which DRA pods no longer produce", line=number, resource="nvidia.com/gpu")


# Text that is not a Kubernetes object is most often a dashboard (Grafana JSON) or a config.
_TEMPLATE_WHAT = {"not-a-manifest": "dashboard or config file", "helm-values": "Helm values file",
                  "helm-template": "Helm template"}


def _what(obj: SourceObject) -> str:
    if obj.kind == "PrometheusRule":
        return "alerting rule"
    if obj.kind == "ConfigMap":
        return "ConfigMap (dashboard)"
    return obj.kind or "dashboard"
