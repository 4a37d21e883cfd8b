"""Strict schema validation of emitted objects, against the target release's OpenAPI schemas.

Why: gpudra writes objects users apply to clusters; a wrong shape (a v1beta1-style request in a
v1 claim, a template without the inner `spec`) is rejected by the apiserver or, worse, silently
emptied by lenient clients. The strict schemas shipped by kubernetes-validate (1.25..1.37, no
unknown fields allowed) catch that offline.

kubernetes-validate's own `validate()` re-reads the 1.5 MB definitions file and rebuilds the
validator on every call (~20 ms/doc); building a jsonschema validator once per (apiVersion, kind)
and reusing it costs ~0.6 ms/doc (docs/library-notes.md section 4). kubernetes-validate is an
optional extra (`.[validate]`), so it is imported lazily and its absence is a clear error,
not an ImportError.

The OpenAPI schema does not encode cross-field rules, so `semantic_errors` adds the ones gpudra
relies on (one of `exactly`/`firstAvailable`, one of claim name/template name, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.errors import GpudraError
from gpudra.k8s.objects import as_list

_MAX_MESSAGE = 240
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
_RESOURCE_GROUP = "resource.k8s.io"


class UnavailableError(GpudraError):
    """An optional dependency (here kubernetes-validate) is not installed or too old."""


class StrictValidator:
    """Validates dicts against one release's strict schemas; builds each validator once.

    Holds its caches itself (no module state), so tests and the CLI control their lifetime.
    """

    def __init__(self, target: TargetVersion = DEFAULT) -> None:
        self.target = target
        self._schema_dir: Path | None = None
        self._registry: Any = None
        self._validators: dict[tuple[str, str], Any] = {}

    def errors(self, obj: Mapping[str, Any]) -> list[str]:
        """One-line `path: message` problems; empty when `obj` is valid for the target."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return ["(root): apiVersion and kind must be strings"]
        validator = self._validator(api_version, kind)
        if validator is None:
            return [f"(root): {kind} {api_version} does not exist in Kubernetes {self.target}"]
        found = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
        schema_errors = [f"{_path(e.absolute_path)}: {_one_line(e.message)}" for e in found]
        return schema_errors + semantic_errors(obj)

    def _validator(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key not in self._validators:
            self._validators[key] = self._build(api_version, kind)
        return self._validators[key]

    def _build(self, api_version: str, kind: str) -> Any:
        # The schema directory first: it raises UnavailableError when either package is missing.
        schema_file = self._schema_file(api_version, kind)
        if schema_file is None:
            return None
        import jsonschema

        schema = json.loads(schema_file.read_text(encoding="utf-8"))
        if not _declares(schema, api_version, kind):
            return None  # e.g. core "ResourceClaim" is the container-claim struct, not an object
        return jsonschema.Draft202012Validator(schema, registry=self._definitions())

    def _schema_file(self, api_version: str, kind: str) -> Path | None:
        group, _, version = api_version.rpartition("/")
        prefix = f"{group.split('.')[0]}-" if group else ""
        path = self._dir() / f"{kind.lower()}-{prefix}{version}.json"
        return path if path.is_file() else None

    def _definitions(self) -> Any:
        if self._registry is None:
            from referencing import Registry, Resource

            defs = json.loads((self._dir() / "_definitions.json").read_text(encoding="utf-8"))
            self._registry = Resource.from_contents(defs) @ Registry()
        return self._registry

    def _dir(self) -> Path:
        if self._schema_dir is None:
            self._schema_dir = _schema_dir(self.target)
        return self._schema_dir


def _schema_dir(target: TargetVersion) -> Path:
    try:
        import jsonschema  # noqa: F401  (kubernetes-validate depends on it; checked for clarity)
        import kubernetes_validate
    except ImportError as exc:
        raise UnavailableError(
            "strict schema validation needs kubernetes-validate>=1.34 "
            "(pip install kubernetes-validate): " + str(exc)
        ) from None
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    directory = root / f"v1.{target.minor}.0-local-strict"
    if not directory.is_dir():
        raise UnavailableError(
            f"the installed kubernetes-validate has no strict schemas for Kubernetes {target}; "
            "upgrade it (pip install -U kubernetes-validate)"
        )
    return directory


def _declares(schema: Mapping[str, Any], api_version: str, kind: str) -> bool:
    group, _, version = api_version.rpartition("/")
    gvks = schema.get("x-kubernetes-group-version-kind") or []
    return any(g.get("group") == group and g.get("version") == version and g.get("kind") == kind
               for g in gvks)


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _one_line(message: str) -> str:
    flat = " ".join(message.split())
    return flat if len(flat) <= _MAX_MESSAGE else flat[: _MAX_MESSAGE - 3] + "..."


# --- cross-field rules the OpenAPI schema does not carry ----------------------------------------

def semantic_errors(obj: Mapping[str, Any]) -> list[str]:
    """Apiserver validation rules that gpudra depends on and the schemas omit.

    Works on any object: DRA claims/templates get request checks, anything with a pod spec
    (Pod, workload templates) gets resourceClaims checks. Wrongly typed parts are left to the
    schema check.
    """
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    errors: list[str] = []
    if kind in _CLAIM_KINDS and isinstance(api_version, str) \
            and api_version.startswith(_RESOURCE_GROUP + "/"):
        flat = api_version.endswith("/v1beta1")
        for path, claim_spec in _claim_specs(obj):
            errors += _claim_spec_errors(path, claim_spec, flat)
    for path, pod_spec in _pod_specs(obj):
        errors += _pod_spec_errors(path, pod_spec)
    return errors


def _claim_specs(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    spec = obj.get("spec")
    if obj.get("kind") == "ResourceClaimTemplate":
        if isinstance(spec, Mapping):
            yield "spec.spec", spec.get("spec")
        return
    yield "spec", spec


def _claim_spec_errors(path: str, claim_spec: Any, flat: bool) -> list[str]:
    if not isinstance(claim_spec, Mapping):
        return [f"{path}: a claim spec (devices.requests) is required"]
    devices = claim_spec.get("devices")
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    if not isinstance(requests, list) or not requests:
        return [f"{path}.devices.requests: at least one request is required"]
    errors: list[str] = []
    seen: set[str] = set()
    for index, request in enumerate(requests):
        where = f"{path}.devices.requests[{index}]"
        if not isinstance(request, Mapping):
            continue
        errors += _request_errors(where, request, flat)
        name = request.get("name")
        if isinstance(name, str):
            if name in seen:
                errors.append(f"{where}.name: duplicate request name {name!r}")
            seen.add(name)
    return errors


def _request_errors(where: str, request: Mapping[str, Any], flat: bool) -> list[str]:
    errors: list[str] = []
    name = request.get("name")
    if isinstance(name, str) and not _DNS_LABEL.match(name):
        errors.append(f"{where}.name: {name!r} is not a DNS label")
    if flat:
        has_class = bool(request.get("deviceClassName"))
        has_list = request.get("firstAvailable") is not None
        if has_class == has_list:
            errors.append(f"{where}: exactly one of deviceClassName or firstAvailable is required")
        return errors
    has_exactly = request.get("exactly") is not None
    has_list = request.get("firstAvailable") is not None
    if has_exactly == has_list:
        errors.append(f"{where}: exactly one of exactly or firstAvailable is required")
    if "deviceClassName" in request or "count" in request:
        errors.append(f"{where}: deviceClassName/count belong under exactly: "
                      "(the flat request shape is resource.k8s.io/v1beta1 only)")
    return errors


def _pod_specs(obj: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The pod spec of a Pod, a workload template or a CronJob's job template."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return
    if obj.get("kind") == "Pod":
        yield "spec", spec
        return
    paths = (("spec", "template", "spec"), ("spec", "jobTemplate", "spec", "template", "spec"))
    for keys in paths:
        node: Any = obj
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and obj.get("kind") != "ResourceClaimTemplate":
            yield ".".join(keys), node


def _pod_spec_errors(path: str, pod_spec: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    claim_names: set[str] = set()
    for index, entry in enumerate(as_list(pod_spec.get("resourceClaims"))):
        if not isinstance(entry, Mapping):
            continue
        if isinstance(entry.get("name"), str):
            claim_names.add(entry["name"])
        if bool(entry.get("resourceClaimName")) == bool(entry.get("resourceClaimTemplateName")):
            errors.append(f"{path}.resourceClaims[{index}]: exactly one of resourceClaimName or "
                          "resourceClaimTemplateName is required")
    for field in ("initContainers", "containers"):
        for c_index, container in enumerate(as_list(pod_spec.get(field))):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            claims = resources.get("claims") if isinstance(resources, Mapping) else None
            for k, ref in enumerate(as_list(claims)):
                name = ref.get("name") if isinstance(ref, Mapping) else None
                if isinstance(name, str) and name not in claim_names:
                    errors.append(f"{path}.{field}[{c_index}].resources.claims[{k}].name: "
                                  f"{name!r} is not in spec.resourceClaims")
    return errors
