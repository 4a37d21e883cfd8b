"""Who owns a live object's manifest: where a user must make the change gpudra reports.

A Deployment created by Helm is changed in its chart, one synced by Argo CD or Flux in Git, one
applied with kubectl in whatever file was applied. Changing the live object would be reverted.
The markers are the ones each tool writes on the objects it manages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import as_mapping

HELM_RELEASE = "meta.helm.sh/release-name"
HELM_NAMESPACE = "meta.helm.sh/release-namespace"
ARGOCD_TRACKING = "argocd.argoproj.io/tracking-id"
ARGOCD_INSTANCE = "app.kubernetes.io/instance"
FLUX_KUSTOMIZATION = "kustomize.toolkit.fluxcd.io/name"
FLUX_HELMRELEASE = "helm.toolkit.fluxcd.io/name"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def managed_by(metadata: Mapping[str, Any]) -> str | None:
    """`Helm release x (namespace y)`, `Argo CD application x`, `Flux Kustomization x`,
    `kubectl apply`, or None when nothing says (created by a controller or by hand)."""
    annotations = as_mapping(metadata.get("annotations"))
    labels = as_mapping(metadata.get("labels"))
    tracking = annotations.get(ARGOCD_TRACKING)
    if isinstance(tracking, str) and tracking:
        # "<app>:<group>/<kind>:<namespace>/<name>"
        return f"Argo CD application {tracking.split(':', 1)[0]}"
    release = annotations.get(HELM_RELEASE)
    if isinstance(release, str) and release:
        flux = labels.get(FLUX_HELMRELEASE)
        via = f" via Flux HelmRelease {flux}" if isinstance(flux, str) and flux else ""
        namespace = annotations.get(HELM_NAMESPACE)
        where = f" (namespace {namespace})" if isinstance(namespace, str) and namespace else ""
        return f"Helm release {release}{where}{via}"
    flux = labels.get(FLUX_KUSTOMIZATION)
    if isinstance(flux, str) and flux:
        return f"Flux Kustomization {flux}"
    if labels.get("app.kubernetes.io/managed-by") == "Helm":
        return "Helm"
    instance = labels.get(ARGOCD_INSTANCE)
    if isinstance(instance, str) and instance and _argo_managed_fields(metadata):
        return f"Argo CD application {instance}"
    if LAST_APPLIED in annotations:
        return "kubectl apply"
    return None


def _argo_managed_fields(metadata: Mapping[str, Any]) -> bool:
    """`app.kubernetes.io/instance` is Argo CD's tracking label by default, but many charts set
    it too: count it only when Argo CD's controller wrote fields of the object."""
    fields = metadata.get("managedFields")
    return any(isinstance(f, Mapping) and str(f.get("manager", "")).startswith("argocd")
               for f in (fields if isinstance(fields, list) else ()))
