"""Repair DRA objects already in the tree: the mistakes blog posts spread, and API versions the
target release no longer serves.

Each repair is an edit like every other convert edit, planned as data and applied to the text
with every other byte kept:

- an apiVersion the target does not serve by default (or does not have) becomes the target's
  (`resource.k8s.io/v1` for 1.34+), with the request shape of that version: flat v1beta1 fields
  move under `exactly:` (or out of it for a 1.32 target). v1alpha2, the old design, has no
  repair;
- GPU601: v1beta1 fields in a v1/v1beta2 request move under `exactly:`; `exactly:` in a
  v1beta1 request that stays v1beta1 is lifted out;
- GPU602: a ResourceClaimTemplate's `spec.devices` moves under the inner `spec:`;
- GPU603: an allocationMode spelt as blog posts do (`Count`, `all`) becomes `ExactCount` or
  `All`, a count written as a string (`"2"`) a number;
- GPU605 (memory read as an attribute) and GPU606 (`>=` on a quantity or version): the selector
  is rewritten where the intent is unambiguous (gpudra.dra.cel_repair);
- GPU609: a pod's `resourceClaims[].source: {...}` entry is lifted into the entry.

What cannot be repaired is left as it is and said (the audit rules keep reporting it). A
repair is written only when the repaired object passes the audit's own DRA rules
(gpudra.convert.repair_check): otherwise the object is left whole and reported `manual`. That
includes an object of a newer version that uses a field the older target's API does not have
(a v1 DeviceClass's `extendedResourceName` for 1.33): under the target's version the API server
would refuse it (strict decoding) or a lenient client would drop the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.dra.request_shapes import EXACT_FIELDS, FLAT_VERSIONS, WRAPPED_VERSIONS
from gpudra.dra.served import GROUP, ApiAvailability, availability
from gpudra.dra.versions import TargetVersion
from gpudra.k8s.objects import PathT, as_mapping
from gpudra.k8s.workloads import PodSpecRef
from gpudra.yamledit.ops import Op, Replace, Unwrap, Wrap

KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"})


@dataclass
class Repair:
    ops: list[Op] = field(default_factory=list)
    done: list[str] = field(default_factory=list)      # what was repaired, for the notes
    left: list[str] = field(default_factory=list)      # what could not be, and why

    def merge(self, other: Repair) -> None:
        self.ops += other.ops
        self.done += other.done
        self.left += other.left


def repair_dra_object(data: Mapping[str, Any], base: PathT, target: TargetVersion) -> Repair:
    """Repairs of one resource.k8s.io object (ResourceClaim, ResourceClaimTemplate,
    DeviceClass)."""
    out = Repair()
    api_version, kind = str(data.get("apiVersion", "")), str(data.get("kind", ""))
    version = api_version.rpartition("/")[2]
    if kind not in KINDS or api_version.rpartition("/")[0] != GROUP:
        return out
    if version not in FLAT_VERSIONS | WRAPPED_VERSIONS:
        out.left.append(f"{api_version} is the withdrawn classic-DRA API; rewrite it by hand")
        return out
    found = availability(target, api_version, kind)
    new_version = version
    if (target.served_by_default and not found.served_by_default) or not found.exists:
        new_version = target.resource_api_version.rpartition("/")[2]
    # Moving to an older release's version (the target has not the object's): every field
    # the object uses must work there as it is, not only behind a gate that is off by default.
    # (Moving up, to v1 from a beta of the same release, every field exists in v1 too.)
    lacking = [] if found.exists else _fields_the_target_lacks(
        kind, as_mapping(data.get("spec")), target)
    if new_version != version and lacking:
        out.left.append(f"{api_version} -> {GROUP}/{new_version} not done: Kubernetes {target} "
                        f"{'; '.join(lacking)}; write it for {target} by hand, or target a "
                        "release that has it")
        return out
    flat = new_version in FLAT_VERSIONS
    # A shape change that comes with the new version is part of it, not a GPU601 repair.
    rule = "GPU601: " if new_version == version else ""
    spec = as_mapping(data.get("spec"))
    if kind == "DeviceClass":
        _selectors(spec.get("selectors"), base + ("spec", "selectors"), target, out)
    else:
        claim, at = spec, base + ("spec",)
        if kind == "ResourceClaimTemplate":
            if "devices" in spec and "spec" not in spec:
                claim = spec  # GPU602: the claim spec sits one level too high
            else:
                claim, at = as_mapping(spec.get("spec")), at + ("spec",)
        _requests(claim, at, flat, rule, target, out)
        if kind == "ResourceClaimTemplate" and claim is spec and claim:
            out.ops.append(Wrap(base + ("spec",), tuple(k for k in spec if k != "metadata"),
                                "spec"))
            out.done.append("GPU602: the claim spec moved under the inner spec: (spec.spec)")
    if new_version != version:
        out.ops.append(Replace(base + ("apiVersion",), f"{GROUP}/{new_version}"))
        out.done.append(f"{api_version} -> {GROUP}/{new_version} ({_why(found, target)})")
    return out


# Fields of a claim's request that arrived after 1.32, with the feature (versions.FEATURES)
# whose first release has them: a request may set them flat (v1beta1), under `exactly:`, or in
# a firstAvailable alternative.
_REQUEST_FIELDS = (("firstAvailable", "firstAvailable"), ("tolerations", "taints"),
                   ("capacity", "allowMultipleAllocations"))


def _fields_the_target_lacks(kind: str, spec: Mapping[str, Any], target: TargetVersion
                             ) -> list[str]:
    """What `target`'s resource.k8s.io API does with each field `spec` sets that it lacks or
    keeps behind a gate that is off by default (where the API server drops the field)."""
    used: list[tuple[str, str]] = []  # (field as said, feature)
    if kind == "DeviceClass":
        if "extendedResourceName" in spec:
            used.append(("spec.extendedResourceName", "extendedResourceName"))
    else:
        claim = as_mapping(spec.get("spec")) if kind == "ResourceClaimTemplate" else spec
        if kind == "ResourceClaimTemplate" and "devices" in spec and "spec" not in spec:
            claim = spec  # GPU602's shape
        requests = as_mapping(claim.get("devices")).get("requests")
        bodies: list[Mapping[str, Any]] = []
        for request in requests if isinstance(requests, list) else ():
            request = as_mapping(request)
            alternatives = request.get("firstAvailable")
            bodies += [request, as_mapping(request.get("exactly")),
                       *(as_mapping(a) for a in (alternatives if isinstance(alternatives, list)
                                                 else ()))]
        used += [(f"request field {name}", feature) for name, feature in _REQUEST_FIELDS
                 if any(name in body for body in bodies)]
    out = []
    for name, feature in used:
        support = target.supports(feature)
        if not support.available:
            out.append(f"has no {name}")
        elif not support.default_on:
            out.append(f"has {name} only behind the {support.stage} feature gate "
                       f"{support.gate} (off by default: the API server drops the field)")
    return out


def repair_pod_claims(spec: PodSpecRef, base: PathT) -> Repair:
    """GPU609: `resourceClaims[].source: {resourceClaimTemplateName: x}` -> the field itself."""
    out = Repair()
    entries = spec.data.get("resourceClaims")
    for i, entry in enumerate(entries if isinstance(entries, list) else ()):
        entry = as_mapping(entry)
        source = entry.get("source")
        if "source" not in entry:
            continue
        fields = [k for k in ("resourceClaimName", "resourceClaimTemplateName")
                  if isinstance(as_mapping(source).get(k), str)]
        if len(fields) != 1 or len(as_mapping(source)) != 1 or any(f in entry for f in fields):
            out.left.append(f"resourceClaims entry {entry.get('name')!r}: its source: does not "
                            "name exactly one claim or template")
            continue
        out.ops.append(Unwrap(base + spec.path + ("resourceClaims", i), "source"))
        out.done.append(f"GPU609: resourceClaims entry {entry.get('name')!r} names its "
                        f"{fields[0]} directly (the source: form was removed in 1.31)")
    return out


def _why(found: ApiAvailability, target: TargetVersion) -> str:
    if not found.exists:
        return f"Kubernetes {target} does not have it"
    return f"Kubernetes {target} does not serve it by default"


def _requests(claim: Mapping[str, Any], at: PathT, flat: bool, rule: str,
              target: TargetVersion, out: Repair) -> None:
    requests = as_mapping(claim.get("devices")).get("requests")
    for i, request in enumerate(requests if isinstance(requests, list) else ()):
        if not isinstance(request, Mapping):
            continue
        where = at + ("devices", "requests", i)
        label = f"request {request.get('name')!r}"
        fields = tuple(k for k in request if k in EXACT_FIELDS)
        exactly = request.get("exactly")
        body = where + ("exactly",) if isinstance(exactly, Mapping) else where
        fields_at = exactly if isinstance(exactly, Mapping) else request
        _selectors(fields_at.get("selectors"), body + ("selectors",), target, out)
        _allocation(fields_at, body, label, out)
        for j, sub in enumerate(request.get("firstAvailable") or []
                                if isinstance(request.get("firstAvailable"), list) else []):
            _selectors(as_mapping(sub).get("selectors"),
                       where + ("firstAvailable", j, "selectors"), target, out)
            _allocation(as_mapping(sub), where + ("firstAvailable", j),
                        f"{label} firstAvailable[{j}]", out)
        if fields and "exactly" in request:
            out.left.append(f"{label} sets {', '.join(fields)} both flat and in exactly:")
        elif fields and not flat:
            if "firstAvailable" in request:
                out.left.append(f"{label} sets {', '.join(fields)} beside firstAvailable")
            else:
                out.ops.append(Wrap(where, fields, "exactly"))
                out.done.append(f"{rule}{label}: {', '.join(fields)} moved under exactly:")
        elif flat and isinstance(exactly, Mapping) and exactly:
            out.ops.append(Unwrap(where, "exactly"))
            out.done.append(f"{rule}{label}: exactly: lifted into the request (the flat "
                            "v1beta1 shape)")


# allocationMode values as blog posts write them, and what they mean: the API has ExactCount
# (with count) and All only, spelt so.
_MODES = {"count": "ExactCount", "exactcount": "ExactCount", "exact": "ExactCount",
          "all": "All"}


def _allocation(body: Mapping[str, Any], at: PathT, label: str, out: Repair) -> None:
    """GPU603: an allocationMode spelt another way (`Count`), a count written as a string
    (`"2"`). What has no one meaning (a count beside All, a count of 0) is left."""
    mode = body.get("allocationMode")
    if isinstance(mode, str) and mode not in _MODES.values() and mode.lower() in _MODES:
        out.ops.append(Replace(at + ("allocationMode",), _MODES[mode.lower()]))
        out.done.append(f"GPU603: {label}: allocationMode {mode!r} -> "
                        f"{_MODES[mode.lower()]!r}")
    count = body.get("count")
    if isinstance(count, str) and count.strip().isdigit() and int(count) >= 1:
        out.ops.append(Replace(at + ("count",), int(count)))
        out.done.append(f"GPU603: {label}: count {count!r} -> {int(count)} (a number)")


def _selectors(selectors: Any, at: PathT, target: TargetVersion, out: Repair) -> None:
    for k, selector in enumerate(selectors if isinstance(selectors, list) else ()):
        expression = as_mapping(as_mapping(selector).get("cel")).get("expression")
        if not isinstance(expression, str):
            continue
        # The CEL engine is a native library of ~15 MB: loaded only when a selector is to be repaired.
        from gpudra.dra.cel_repair import repair_selector

        repaired = repair_selector(expression, target)
        if repaired is not None:
            out.ops.append(Replace(at + (k, "cel", "expression"), repaired))
            out.done.append(f"selector rewritten: {repaired}")
