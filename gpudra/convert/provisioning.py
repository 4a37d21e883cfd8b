"""A PodTemplate that a ProvisioningRequest references (GKE queued provisioning, Kueue's
ProvisioningRequest admission check).

cluster-autoscaler turns each PodTemplate of a ProvisioningRequest into pods that exist only in
its memory (provisioningrequest/pods PodsForProvisioningRequest) and simulates scheduling them.
A real pod's claims from a ResourceClaimTemplate are created by the resource-claim controller;
the in-memory pods get none, so the DRA part of the simulation fails ("ResourceClaim not created
yet") and the request is never provisioned (kubernetes/autoscaler#10065, open; a fix is
proposed in kubernetes-sigs/cluster-autoscaler#22). GKE's own queued-provisioning class is not
open source: what it does with claims is unverified, and the same caution applies.

So a PodTemplate that a ProvisioningRequest of the same file references is blocked; any other
PodTemplate with GPUs is converted with a note, since a request elsewhere may reference it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudra.convert.records import Blocked
from gpudra.k8s.objects import as_mapping

GROUP = "autoscaling.x-k8s.io"
KIND = "ProvisioningRequest"
NOTE = ("PodTemplate: if a ProvisioningRequest references it, cluster-autoscaler cannot "
        "simulate its pods' claims from a ResourceClaimTemplate (kubernetes/autoscaler#10065) "
        "and never provisions the request; keep such a template on the device plugin")

Key = tuple[str | None, str]


def referenced_templates(objects: Iterable[Any]) -> frozenset[Key]:
    """(namespace, name) of every PodTemplate the ProvisioningRequests among `objects` name."""
    found: set[Key] = set()
    for obj in objects:
        if not isinstance(obj, Mapping) or obj.get("kind") != KIND or \
                str(obj.get("apiVersion", "")).rpartition("/")[0] != GROUP:
            continue
        metadata = as_mapping(obj.get("metadata"))
        namespace = metadata.get("namespace")
        spec = as_mapping(obj.get("spec"))
        pod_sets = spec.get("podSets")
        for pod_set in pod_sets if isinstance(pod_sets, list) else ():
            ref = pod_set.get("podTemplateRef") if isinstance(pod_set, Mapping) else None
            name = ref.get("name") if isinstance(ref, Mapping) else None
            if isinstance(name, str):
                found.add((namespace if isinstance(namespace, str) else None, name))
    return frozenset(found)


def check(data: Mapping[str, Any], referenced: frozenset[Key], notes: list[str]) -> None:
    metadata = as_mapping(data.get("metadata"))
    namespace = metadata.get("namespace")
    key = (namespace if isinstance(namespace, str) else None, str(metadata.get("name", "")))
    if key in referenced:
        raise Blocked(f"ProvisioningRequest podSets reference PodTemplate {key[1]!r}: "
                      "cluster-autoscaler simulates its pods in memory, where claims from a "
                      "ResourceClaimTemplate are never created, so the request would never be "
                      "provisioned (kubernetes/autoscaler#10065); keep it on the device plugin")
    notes.append(NOTE)
