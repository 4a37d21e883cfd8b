"""Build DRA objects as plain dicts, in the key order a person would write them.

Everything here is a pure function of its arguments and the target release, so `convert` output is
reproducible and the same objects can be rendered, diffed and validated. Key order matters
because users read the output: `name` first, then `exactly`/`deviceClassName`, then `count`, then
`selectors`, as in the Kubernetes docs and the NVIDIA chart.

Shapes: docs/dra-reference.md sections 1.2-1.3 (requests, templates, DeviceClass), 2 (pod
fields), 4 (quota) and 5 (extendedResourceName).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError

Obj = dict[str, Any]

NVIDIA_DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
EXTENDED_RESOURCE = "nvidia.com/gpu"
# The selector the NVIDIA chart renders for its `gpu.nvidia.com` class (dra-reference section 7).
GPU_CLASS_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
)
QUOTA_CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
QUOTA_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"


# --- requests and claims -----------------------------------------------------------------------

def selector_list(expressions: Sequence[str]) -> list[Obj]:
    """CEL expressions as `selectors: [{cel: {expression}}]`, the only selector kind there is."""
    return [{"cel": {"expression": expression}} for expression in expressions]


def device_request(
    name: str,
    device_class: str,
    count: int = 1,
    selectors: Sequence[str] = (),
    *,
    target: TargetVersion,
) -> Obj:
    """One ExactCount request; v1beta1 flat, v1beta2/v1 wrapped in `exactly:`.

    `count: 1` and `allocationMode: ExactCount` are the API defaults and are left out, as users
    write them; an empty selector list is left out too.
    """
    if count < 1:
        raise ValueError(f"request {name!r}: count must be at least 1, got {count}")
    body: Obj = {"deviceClassName": device_class}
    if count != 1:
        body["count"] = count
    if selectors:
        body["selectors"] = selector_list(selectors)
    if target.flat_requests:
        return {"name": name, **body}
    return {"name": name, "exactly": body}


def admin_request(name: str, device_class: str, target: TargetVersion) -> Obj:
    """Every device of the class on the node, for monitoring, without taking them from other
    claims (KEP-5018 admin access; the namespace must carry the admin-access label)."""
    body: Obj = {"deviceClassName": device_class, "allocationMode": "All", "adminAccess": True}
    if target.flat_requests:
        return {"name": name, **body}
    return {"name": name, "exactly": body}


def opaque_config(requests: Sequence[str], parameters: Mapping[str, Any],
                  driver: str = NVIDIA_DRIVER) -> Obj:
    """A `devices.config[]` entry handing driver parameters (e.g. a GpuConfig) to some requests."""
    opaque = {"driver": driver, "parameters": dict(parameters)}
    return {"requests": list(requests), "opaque": opaque}


def claim_spec(requests: Sequence[Mapping[str, Any]], target: TargetVersion,
               config: Sequence[Mapping[str, Any]] | None = None) -> Obj:
    """The ResourceClaimSpec shared by claims and templates: `{devices: {requests, config?}}`."""
    _check_request_shapes(requests, target)
    devices: Obj = {"requests": [dict(request) for request in requests]}
    if config:
        devices["config"] = [dict(entry) for entry in config]
    return {"devices": devices}


def claim_template(name: str, namespace: str | None, requests: Sequence[Mapping[str, Any]],
                   target: TargetVersion,
                   config: Sequence[Mapping[str, Any]] | None = None) -> Obj:
    """A ResourceClaimTemplate: note the mandatory inner `spec.spec` (a ResourceClaimSpec)."""
    return {
        "apiVersion": target.resource_api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": _metadata(name, namespace),
        "spec": {"spec": claim_spec(requests, target, config)},
    }


def claim(name: str, namespace: str | None, requests: Sequence[Mapping[str, Any]],
          target: TargetVersion,
          config: Sequence[Mapping[str, Any]] | None = None) -> Obj:
    """A ResourceClaim, the object to share one set of devices between pods (no inner spec)."""
    return {
        "apiVersion": target.resource_api_version,
        "kind": "ResourceClaim",
        "metadata": _metadata(name, namespace),
        "spec": claim_spec(requests, target, config),
    }


def device_class_bridge(target: TargetVersion) -> Obj:
    """The chart's `gpu.nvidia.com` DeviceClass with `extendedResourceName: nvidia.com/gpu`.

    It lets pods that still ask for `nvidia.com/gpu` be served from DRA (KEP-5004). The field
    exists from 1.34; on 1.34/1.35 the DRAExtendedResource gate is alpha and off, so callers
    should check `target.supports("extendedResourceName")` and tell the user.
    """
    if not target.supports("extendedResourceName").available:
        raise UsageError(
            f"DeviceClass.spec.extendedResourceName does not exist in Kubernetes {target}: "
            "the extended-resource bridge needs a 1.34 or newer target"
        )
    return {
        "apiVersion": target.resource_api_version,
        "kind": "DeviceClass",
        "metadata": {"name": GPU_CLASS},
        "spec": {
            "selectors": selector_list([GPU_CLASS_SELECTOR]),
            "extendedResourceName": EXTENDED_RESOURCE,
        },
    }


def quota_keys(device_class: str, count: int, claims: int | None = None) -> dict[str, str]:
    """ResourceQuota `spec.hard` entries limiting DRA use of one DeviceClass.

    There is no `requests.` prefix on the device key. `claims` defaults to `count`: every claim
    charges at least one device of its class, so this many claims can never be the tighter
    limit for this class alone. When merging entries for several classes, add the claim counts.
    """
    if count < 0 or (claims is not None and claims < 0):
        raise ValueError("quota values must not be negative")
    return {
        f"{device_class}{QUOTA_CLASS_SUFFIX}": str(count),
        QUOTA_CLAIM_COUNT: str(count if claims is None else claims),
    }


# --- pod side ----------------------------------------------------------------------------------

def pod_claim_entry(name: str, template: str | None = None, claim: str | None = None) -> Obj:
    """A `pod.spec.resourceClaims[]` entry; exactly one of template or claim, as the API demands."""
    if (template is None) == (claim is None):
        raise ValueError(f"pod claim {name!r}: give exactly one of template or claim")
    if template is not None:
        return {"name": name, "resourceClaimTemplateName": template}
    return {"name": name, "resourceClaimName": claim}


def container_claim(name: str, request: str | None = None) -> Obj:
    """A container `resources.claims[]` entry; `request` limits it to one request of the claim."""
    if request is None:
        return {"name": name}
    return {"name": name, "request": request}


# --- names -------------------------------------------------------------------------------------

_HASH_LEN = 8
_INVALID_LABEL_RUN = re.compile(r"-*[^a-z0-9-]+-*")
_INVALID_SUBDOMAIN_RUN = re.compile(r"-*[^a-z0-9.-]+-*")


def dns_label(text: str, max_len: int = 63) -> str:
    """A valid RFC 1123 label (request, pod-claim and container names) derived from `text`.

    Lowercases, turns each run of invalid characters into one '-', trims dashes at the ends.
    A name that is already valid comes back unchanged, so re-running convert is stable. Too
    long names are cut and get a hash of the original text, so inputs that only differ past the
    cut stay distinct. Never returns an empty string.
    """
    _check_max_len(max_len)
    label = _INVALID_LABEL_RUN.sub("-", text.lower()).strip("-")
    return _fit(label, text, max_len, "-")


def dns_subdomain(text: str, max_len: int = 253) -> str:
    """A valid RFC 1123 subdomain (object names such as ResourceClaimTemplate) from `text`.

    Same rules as dns_label, plus '.' is kept as a label separator and empty labels are dropped.
    """
    _check_max_len(max_len)
    cleaned = _INVALID_SUBDOMAIN_RUN.sub("-", text.lower())
    labels = (part.strip("-") for part in cleaned.split("."))
    return _fit(".".join(part for part in labels if part), text, max_len, "-.")


def _fit(name: str, original: str, max_len: int, trailing: str) -> str:
    if not name:
        return f"x-{_short_hash(original)}"
    if len(name) <= max_len:
        return name
    head = name[: max_len - _HASH_LEN - 1].rstrip(trailing)
    return f"{head}-{_short_hash(original)}"


def _short_hash(text: str) -> str:
    import hashlib  # only for names past the length limit: not on every audit's start-up

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LEN]


def _check_max_len(max_len: int) -> None:
    if max_len < _HASH_LEN + 2:
        raise ValueError(f"max_len must be at least {_HASH_LEN + 2} to fit a hash suffix")


class NameRegistry:
    """Hands out unique object names per namespace: `name`, then `name-2`, `name-3`, ...

    One registry per kind (names only clash within a kind and namespace). Order of calls decides
    who gets the plain name, so callers walk inputs in a stable order. Existing names are
    `reserve`d first so generated names never overwrite a user's object.
    """

    def __init__(self, sanitize: Callable[[str, int], str] = dns_subdomain,
                 max_len: int = 253) -> None:
        self._sanitize = sanitize
        self._max_len = max_len
        self._taken: dict[str | None, set[str]] = {}

    def reserve(self, name: str, namespace: str | None = None) -> None:
        self._taken.setdefault(namespace, set()).add(name)

    def taken(self, name: str, namespace: str | None = None) -> bool:
        return name in self._taken.get(namespace, ())

    def unique(self, text: str, namespace: str | None = None) -> str:
        """A sanitised, not yet used name for `text` in `namespace`, now marked as used."""
        base = self._sanitize(text, self._max_len)
        candidate, number = base, 1
        while self.taken(candidate, namespace):
            number += 1
            suffix = f"-{number}"
            candidate = self._sanitize(base, self._max_len - len(suffix)) + suffix
        self.reserve(candidate, namespace)
        return candidate


# --- helpers -----------------------------------------------------------------------------------

def _metadata(name: str, namespace: str | None) -> Obj:
    if namespace is None:
        return {"name": name}
    return {"name": name, "namespace": namespace}


def _check_request_shapes(requests: Sequence[Mapping[str, Any]], target: TargetVersion) -> None:
    """Refuse to mix shapes: a flat request in a v1 object is an error users would ship."""
    for request in requests:
        flat = "deviceClassName" in request
        wrapped = "exactly" in request
        if target.flat_requests and wrapped:
            raise ValueError(f"request {request.get('name')!r} uses `exactly:`, "
                             f"which {target.resource_api_version} does not have")
        if not target.flat_requests and flat:
            raise ValueError(f"request {request.get('name')!r} is flat (v1beta1 shape) but the "
                             f"target uses {target.resource_api_version}")
