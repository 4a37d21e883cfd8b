"""What the API server shows, in the words the journey compares with gpudra's: each GPU pod's
top owner, node, phase and readiness, and which stack serves it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.controlplane.cluster import Client

GPU_PREFIX = "nvidia.com/"


@dataclass(frozen=True)
class PodView:
    namespace: str
    owner: tuple[str, str]  # (kind, name) of its top owner; ("Pod", name) for a bare pod
    name: str
    node: str | None
    phase: str
    ready: bool
    device_plugin: bool     # asks for an nvidia.com/ extended resource
    claims: bool            # names ResourceClaims


def _asks_device_plugin(spec: dict[str, Any]) -> bool:
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    return any(key.startswith(GPU_PREFIX) for c in containers
               for key in ((c.get("resources") or {}).get("limits") or {}))


def _top_owner(client: Client, pod: dict[str, Any]) -> tuple[str, str]:
    metadata = pod["metadata"]
    refs = [r for r in metadata.get("ownerReferences") or [] if r.get("controller")]
    if not refs:
        return "Pod", metadata["name"]
    kind, name = refs[0]["kind"], refs[0]["name"]
    if kind == "ReplicaSet":
        rs = client.get(f"/apis/apps/v1/namespaces/{metadata['namespace']}/replicasets/{name}")
        up = [r for r in rs["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if up:
            return up[0]["kind"], up[0]["name"]
    if kind == "Job":
        job = client.get(f"/apis/batch/v1/namespaces/{metadata['namespace']}/jobs/{name}")
        up = [r for r in job["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if up:
            return up[0]["kind"], up[0]["name"]
    return kind, name


def gpu_pods(client: Client, namespaces: tuple[str, ...],
             top_owner: Callable[[Client, dict[str, Any]], tuple[str, str]] | None = None
             ) -> list[PodView]:
    """`top_owner`: how a pod's top owner is found (default: up to a Deployment, CronJob or
    JobSet; the operators' cluster walks further)."""
    top_owner = top_owner or _top_owner
    views = []
    for namespace in namespaces:
        for pod in client.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
            spec, status = pod["spec"], pod.get("status", {})
            device_plugin = _asks_device_plugin(spec)
            claims = bool(spec.get("resourceClaims"))
            if not (device_plugin or claims):
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in status.get("conditions") or [])
            views.append(PodView(namespace, top_owner(client, pod), pod["metadata"]["name"],
                                 spec.get("nodeName"), status.get("phase", ""), ready,
                                 device_plugin, claims))
    return views


def running_by_owner(views: list[PodView]) -> Counter[tuple[str, str, str]]:
    """(namespace, owner kind, owner name) -> pods Running and Ready."""
    return Counter((v.namespace, *v.owner) for v in views if v.phase == "Running" and v.ready)
