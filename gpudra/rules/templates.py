"""GPU7xx: device requests in text that is not YAML yet (Helm templates, values files)."""

from __future__ import annotations

from gpudra.results.model import Severity
from gpudra.k8s.objects import TemplateText
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.sources.text_requests import text_requests

CATEGORY = "templates"

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
        where = _WHAT.get(text.reason, "template")
        chart = f" of chart {text.chart}" if text.chart else ""
        fix, hint = _advice(text)
        # No request in a kustomization's inline patches: kustomize_overlays reports those.
        for request in text_requests(text.file, text.text, text.first_line):
            shown = f": {request.value}" if request.value else ""
            ctx.emit(GPU701, text, f"{where}{chart} sets {request.resource}{shown}; {fix}",
                     line=request.line, resource=request.resource,
                     quantity=request.quantity, hint=hint)
            if request.allocates:  # a placeholder (None) still asks for devices
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
