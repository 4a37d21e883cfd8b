"""Manifest trees as API objects, and server-side dry-run of them against the control plane.

Kinds the API server serves are applied as they are. Custom resources (JobSet, RayCluster,
PyTorchJob, Argo Workflow...) have no CRD here, so each pod template found inside them is
dry-run as a core/v1 PodTemplate, which the server validates as it validates a workload's pod
template. An OpenShift Template's objects are dry-run as `oc process` would create them (each
parameter filled in with its value, else its name in lower case). Helm chart templates are not
manifests and are left out; kustomizations are built with the kustomize this binary links and
their output is dry-run. A namespace that holds an admin-access claim gets the
`resource.kubernetes.io/admin-access: "true"` label convert tells its user to add.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.controlplane.cluster import APIError, ControlPlane

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Source:
    where: str              # file (or kustomization directory) it came from, relative to root
    obj: dict[str, Any]


@dataclass(frozen=True)
class Rejection:
    where: str
    what: str               # kind/namespace/name (and the pod template's path for a CR)
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}: {self.message}"


def load_tree(root: Path, plane: ControlPlane) -> tuple[list[Source], list[Rejection]]:
    """The objects under `root`, and what could not be read as objects (a file YAML cannot
    parse, a kustomization kustomize cannot build), as rejections."""
    sources: list[Source] = []
    unreadable: list[Rejection] = []
    kustomizations = {p.parent for p in root.rglob("kustomization.yaml")}
    charts = {p.parent for p in root.rglob("Chart.yaml")}
    for directory in sorted(kustomizations):
        where = str(directory.relative_to(root)) + "/"
        built = plane.run("kustomize", "build", str(directory))
        if built.returncode != 0:
            unreadable.append(Rejection(where, "kustomize build", built.stderr.strip()))
            continue
        sources += [Source(where, obj) for obj in yaml.safe_load_all(built.stdout)
                    if isinstance(obj, dict)]
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file() or path.name == "kustomization.yaml":
            continue
        if any(c in path.parents for c in charts) or any(k in path.parents for k in kustomizations):
            continue  # templates, or already in a kustomize build's output
        where = str(path.relative_to(root))
        try:
            documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8-sig")))
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            unreadable.append(Rejection(where, "parse", str(error).splitlines()[0]))
            continue
        for obj in documents:
            if isinstance(obj, dict) and "apiVersion" in obj and "kind" in obj:
                sources += _items(where, obj)
    return sources, unreadable


ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def _items(where: str, obj: dict[str, Any]) -> list[Source]:
    if obj["kind"].endswith("List") and isinstance(obj.get("items"), list):
        return [Source(where, item) for item in obj["items"] if isinstance(item, dict)]
    if obj["kind"] == "Template" and isinstance(obj.get("objects"), list):
        values = {p["name"]: str(p.get("value") or p["name"].lower())
                  for p in obj.get("parameters") or [] if isinstance(p, dict) and "name" in p}
        return [Source(where, _processed(item, values)) for item in obj["objects"]
                if isinstance(item, dict)]
    return [Source(where, obj)]


def _processed(value: Any, parameters: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)\}", lambda m: parameters.get(m[1], m[0]), value)
    if isinstance(value, dict):
        return {k: _processed(v, parameters) for k, v in value.items()}
    if isinstance(value, list):
        return [_processed(v, parameters) for v in value]
    return value


def _asks_admin_access(obj: dict[str, Any]) -> bool:
    if not str(obj.get("apiVersion", "")).startswith("resource.k8s.io/"):
        return False
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    requests = (spec.get("devices") or {}).get("requests") or []
    return any(isinstance(r, dict) and (r.get("adminAccess")
                                        or (r.get("exactly") or {}).get("adminAccess"))
               for r in requests)


def pod_templates(value: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every {metadata?, spec: {containers: [...]}} mapping inside a custom resource."""
    if isinstance(value, dict):
        spec = value.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list) and path:
            yield path, value
            return
        for key, item in value.items():
            yield from pod_templates(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from pod_templates(item, f"{path}[{index}]")


def dry_run(plane: ControlPlane, sources: list[Source], *,
            label_admin_namespaces: bool = True) -> list[Rejection]:
    """Server-side dry-run every object; what the API server rejected, with its message."""
    rejections: list[Rejection] = []
    admin_namespaces = {str((s.obj.get("metadata") or {}).get("namespace") or "default")
                        for s in sources
                        if label_admin_namespaces and _asks_admin_access(s.obj)}
    for source in sources:
        obj = source.obj
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or "default"
        what = f"{obj.get('kind')}/{metadata.get('name')}"
        served = plane.resource(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        try:
            if served is None or served[1]:
                labels = ({ADMIN_ACCESS_LABEL: "true"} if namespace in admin_namespaces else {})
                plane.ensure_namespace(str(namespace), labels)
        except APIError as error:
            rejections.append(Rejection(source.where, what, f"namespace: {error}"))
            continue
        candidates: list[tuple[str, dict[str, Any]]] = [(what, obj)]
        if served is None:
            candidates = [
                (f"{what}{path}", {"apiVersion": "v1", "kind": "PodTemplate",
                                   "metadata": {"name": f"dry-run-{index}",
                                                "namespace": namespace},
                                   "template": template})
                for index, (path, template) in enumerate(pod_templates(obj))]
        for label, candidate in candidates:
            try:
                plane.dry_run(candidate)
            except APIError as error:
                rejections.append(Rejection(source.where, label, str(error)))
    return rejections
