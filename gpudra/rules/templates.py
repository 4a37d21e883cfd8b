"""GPU7xx: device requests in text that is not YAML yet (Helm templates, values files)."""

from __future__ import annotations

import os
import re

from gpudra.devices import DEVICE_NAME_PATTERN
from gpudra.kustomize import KUSTOMIZATION_FILES
from gpudra.model import Severity
from gpudra.objects import TemplateText
from gpudra.quantity import parse_device_count
from gpudra.rules.base import AuditContext, Checker, rule

CATEGORY = "templates"

# Device resource names only: GFD labels such as nvidia.com/gpu.product are not requests.
_DEVICE_LINE = re.compile(
    rf"""(?<![\w./-])(?P<name>{DEVICE_NAME_PATTERN})(?![\w./-])["']?\s*:\s*"""
    # A template action, or a plain value that ends where a flow mapping/sequence does.
    r"""(?P<value>["']?\{\{.*?\}\}["']?|[^#\n,{}\[\]]*)""")

GPU701 = rule(
    "GPU701", "templated-device-request", Severity.WARNING, CATEGORY,
    "A Helm template or values file requests NVIDIA devices; the change belongs in the chart.",
    "Change the chart's templates/values to render resourceClaims; gpudra will not edit templates.",
)

_WHAT = {
    "helm-template": "Helm template",
    "helm-values": "Helm values file",
    "go-template": "template (not YAML until rendered)",
    "not-a-manifest": "non-Kubernetes YAML (values or config file)",
}


class Templates(Checker):
    rules = (GPU701,)

    def check_template(self, text: TemplateText, ctx: AuditContext) -> None:
        if os.path.basename(text.file) in KUSTOMIZATION_FILES:
            return  # inline kustomize patches: gpudra.rules.kustomize_overlays reports them as such
        where = _WHAT.get(text.reason, "template")
        chart = f" of chart {text.chart}" if text.chart else ""
        fix, hint = _advice(text)
        for number, line in text.numbered_lines():
            for match in _DEVICE_LINE.finditer(line):
                value = match.group("value").strip().strip("'\"")
                count = parse_device_count(value) if value else None
                quantity = count.value if count is not None else None
                shown = f": {value}" if value else ""
                ctx.emit(GPU701, text, f"{where}{chart} sets {match.group('name')}{shown}; "
                         f"{fix}", line=number, resource=match.group("name"),
                         quantity=quantity, hint=hint)
                if quantity != 0:  # a placeholder (None) still asks for devices
                    ctx.note_template(text)


def _advice(text: TemplateText) -> tuple[str, str | None]:
    """Where the change belongs: the chart only for a chart's files (the rule's own hint);
    a template outside a chart, or another tool's configuration file, is changed there."""
    if text.chart:
        return "change it in the chart", None
    if text.reason == "not-a-manifest":
        return ("change it in this file: it is no Kubernetes object, so gpudra cannot convert "
                "it", "The tool that reads this file (a JupyterHub profile, a CI or operator "
                "config) passes the request to its pods: have it request a ResourceClaim "
                "(resourceClaims / resources.claims) instead, where the tool supports that.")
    return ("change it in the template, or render it and convert the output",
            "Render the template (e.g. helm template, envsubst) and run gpudra convert on the "
            "output, or change the template to write resourceClaims.")
