"""GPU6xx: DRA objects already in the tree, linted against the real resource.k8s.io API.

A workload that already uses ResourceClaims counts as migrated, so what matters here is whether
the DRA objects would be accepted and would allocate: the request shape of each API version,
allocation modes, CEL selectors on names the NVIDIA driver really publishes, comparisons CEL
rejects, and pods whose claim references resolve. Shapes follow docs/dra-reference.md §1–3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.dra.attributes import (
    CLASS_DEVICE_TYPE,
    DeviceType,
)
from gpudra.dra.request_shapes import EXACT_FIELDS, FLAT_VERSIONS, WRAPPED_VERSIONS
from gpudra.dra.served import GROUP, availability, versions_with_kind
from gpudra.results.model import Severity
from gpudra.k8s.objects import PathT, SourceObject, as_mapping, format_path
from gpudra.rules.base import AuditContext, Checker, rule
from gpudra.k8s.workloads import ContainerRef, PodSpecRef

CATEGORY = "dra objects"
ALLOCATION_MODES = ("ExactCount", "All")
MAX_SUBREQUESTS = 8  # FirstAvailableDeviceRequestMaxSize
_PLACEHOLDER_MARKS = ("{{", "${", "$(")

GPU601 = rule(
    "GPU601", "dra-request-shape-version-mismatch", Severity.ERROR, CATEGORY,
    "A DRA device request has the shape of another API version (flat v1beta1 fields under v1, "
    "or `exactly:` under v1beta1).",
    "Match the request shape to apiVersion: wrap the fields in `exactly:` for v1/v1beta2, "
    "keep them flat for v1beta1.",
)

GPU602 = rule(
    "GPU602", "claim-template-missing-inner-spec", Severity.ERROR, CATEGORY,
    "A ResourceClaimTemplate has `devices` directly under `spec` (the inner `spec:` is missing).",
    "Indent `devices:` under an inner `spec:` (spec.spec.devices).",
)

GPU603 = rule(
    "GPU603", "invalid-allocation-mode", Severity.ERROR, CATEGORY,
    "A device request has an allocationMode other than ExactCount/All, or a count that the "
    "mode does not allow.",
    "Use allocationMode ExactCount (with count >= 1) or All (without count).",
)

GPU604 = rule(
    "GPU604", "request-without-exactly-or-first-available", Severity.ERROR, CATEGORY,
    "A device request sets neither or both of exactly/firstAvailable, or lists more than 8 "
    "firstAvailable entries.",
    "Give each request exactly one of `exactly:` or `firstAvailable:` (at most 8 entries).",
)

GPU605 = rule(
    "GPU605", "unknown-nvidia-device-attribute", Severity.ERROR, CATEGORY,
    "A CEL selector reads an attribute or capacity the NVIDIA DRA driver does not publish.",
    "Use a name the driver publishes: memory is device.capacity[\"gpu.nvidia.com\"].memory; "
    "pciBusID lives under resource.kubernetes.io.",
)

GPU606 = rule(
    "GPU606", "relational-operator-on-quantity-or-version", Severity.ERROR, CATEGORY,
    "A CEL selector applies <, <=, > or >= to a Quantity (capacity) or a semver Version.",
    "Write a.compareTo(b) >= 0 (or a.isGreaterThan(b)) instead of a >= b for quantities and versions.",
)

GPU612 = rule(
    "GPU612", "cel-selector-does-not-compile", Severity.ERROR, CATEGORY,
    "A CEL selector does not compile in the DRA CEL environment of the target release.",
    "Write the selector for the target release (the message says what is new in which "
    "release), or target the release the cluster runs.",
)

GPU607 = rule(
    "GPU607", "undefined-resource-claim-reference", Severity.WARNING, CATEGORY,
    "A pod references a ResourceClaim or ResourceClaimTemplate that no scanned manifest defines.",
    "Add the ResourceClaim/ResourceClaimTemplate to the tree (same namespace) or fix the name.",
)

GPU608 = rule(
    "GPU608", "container-claim-not-in-pod", Severity.ERROR, CATEGORY,
    "A container's resources.claims[].name is not one of the pod's spec.resourceClaims names.",
    "Name the pod's spec.resourceClaims entry in the container, not the claim or template.",
)

GPU609 = rule(
    "GPU609", "invalid-pod-resource-claim-entry", Severity.ERROR, CATEGORY,
    "A pod's spec.resourceClaims entry uses the removed `source:` form, or sets both or neither "
    "of resourceClaimName/resourceClaimTemplateName.",
    "Set exactly one of resourceClaimName / resourceClaimTemplateName directly in the entry.",
)


GPU611 = rule(
    "GPU611", "dra-api-version-not-served", Severity.ERROR, CATEGORY,
    "A DRA object uses a resource.k8s.io version the target release does not serve by default "
    "(or does not have).",
    "Write the target's version (gpudra convert --target-version <release> does), or enable "
    "the version on the API server.",
)


@dataclass(frozen=True, slots=True)
class _ClaimUse:
    """A pod spec's reference to a claim or template, kept until the whole tree is read."""

    obj: SourceObject
    path: PathT
    kind: str  # "ResourceClaim" | "ResourceClaimTemplate"
    name: str
    entry: str  # the pod's resourceClaims[].name


@dataclass
class _Definitions:
    """(kind, name) -> namespaces that define it; None stands for "namespace not set"."""

    by_name: dict[tuple[str, str], set[str | None]] = field(default_factory=dict)

    def add(self, kind: str, name: Any, namespace: str | None) -> None:
        if isinstance(name, str) and name:
            self.by_name.setdefault((kind, name), set()).add(namespace)

    def defines(self, kind: str, name: str, namespace: str | None) -> bool:
        spaces = self.by_name.get((kind, name))
        if not spaces:
            return False
        return namespace is None or None in spaces or namespace in spaces


class DraObjects(Checker):
    rules = (GPU601, GPU602, GPU603, GPU604, GPU605, GPU606, GPU607, GPU608, GPU609, GPU611,
             GPU612)

    def __init__(self) -> None:
        self._defined = _Definitions()
        self._uses: list[_ClaimUse] = []

    # --- hooks --------------------------------------------------------------------------

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        if obj.group == GROUP:
            self._dra_object(obj, ctx)
        elif obj.kind == "ComputeDomain" and obj.group.endswith("nvidia.com"):
            self._compute_domain(obj)
        for spec in ctx.pod_specs(obj):
            self._pod_spec(obj, spec, ctx)

    def finish(self, ctx: AuditContext) -> None:
        for use in self._uses:
            if self._defined.defines(use.kind, use.name, use.obj.namespace):
                continue
            where = f" in namespace {use.obj.namespace!r}" if use.obj.namespace else ""
            ctx.emit(GPU607, use.obj,
                     f"resourceClaims entry {use.entry!r} references {use.kind} {use.name!r}, "
                     f"which no scanned manifest defines{where}", path=use.path)

    # --- DRA objects --------------------------------------------------------------------

    def _dra_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        version = obj.api_version.rpartition("/")[2]
        spec = as_mapping(obj.data.get("spec"))
        if obj.kind in ("ResourceClaim", "ResourceClaimTemplate"):
            self._defined.add(obj.kind, obj.metadata.get("name"), obj.namespace)
        self._served(obj, ctx)
        if version not in FLAT_VERSIONS | WRAPPED_VERSIONS:
            return  # v1alpha2 and older are another design altogether
        if obj.kind == "ResourceClaim":
            self._claim_spec(obj, ctx, ("spec",), spec, version)
        elif obj.kind == "ResourceClaimTemplate":
            if "devices" in spec:
                ctx.emit(GPU602, obj,
                         "ResourceClaimTemplate has spec.devices; the claim spec belongs in "
                         "spec.spec (spec.spec.devices)", path=("spec", "devices"))
                self._claim_spec(obj, ctx, ("spec",), spec, version)
            self._claim_spec(obj, ctx, ("spec", "spec"), as_mapping(spec.get("spec")), version)
        elif obj.kind == "DeviceClass":
            name = obj.name or ""
            self._selectors(obj, ctx, ("spec", "selectors"), spec.get("selectors"),
                            _Context(None, name.endswith("nvidia.com")))

    @staticmethod
    def _served(obj: SourceObject, ctx: AuditContext) -> None:
        # A live object is stored in whatever version its cluster serves: only manifests are
        # judged against the target.
        if obj.source != "file" or not obj.kind or "/" not in obj.api_version:
            return
        target = ctx.target
        found = availability(target, obj.api_version, obj.kind)
        if not found.exists:
            versions = versions_with_kind(target, obj.kind)
            has = (f"it has {', '.join(f'{GROUP}/{v}' for v in versions)}" if versions
                   else f"no version of it has {obj.kind}")
            ctx.emit(GPU611, obj, f"{obj.kind} {obj.api_version} is not in Kubernetes "
                     f"{target}; {has}", path=("apiVersion",))
        elif target.served_by_default and not found.served_by_default:
            ctx.emit(GPU611, obj, f"{obj.kind} {obj.api_version} is not served by default in "
                     f"Kubernetes {target}: use {target.resource_api_version}, or "
                     f"{found.how_to_enable()}", path=("apiVersion",))

    def _compute_domain(self, obj: SourceObject) -> None:
        channel = as_mapping(as_mapping(obj.data.get("spec")).get("channel"))
        template = as_mapping(channel.get("resourceClaimTemplate"))
        self._defined.add("ResourceClaimTemplate", template.get("name"), obj.namespace)

    def _claim_spec(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                    claim: Mapping[str, Any], version: str) -> None:
        requests = as_mapping(claim.get("devices")).get("requests")
        if not isinstance(requests, list):
            return
        for i, request in enumerate(requests):
            if isinstance(request, Mapping):
                where = path + ("devices", "requests", i)
                if version in WRAPPED_VERSIONS:
                    self._wrapped_request(obj, ctx, where, request, obj.api_version)
                else:
                    self._flat_request(obj, ctx, where, request, obj.api_version)

    def _wrapped_request(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                         request: Mapping[str, Any], api_version: str) -> None:
        label = _request_label(request, path)
        flat = [f for f in request if f in EXACT_FIELDS]  # document order: the first one is reported
        if flat:
            ctx.emit(GPU601, obj,
                     f"{label} sets {', '.join(flat)} directly in requests[] (the v1beta1 shape); "
                     f"{api_version} needs them wrapped in `exactly:`", path=path + (flat[0],))
        has_exactly, has_first = "exactly" in request, "firstAvailable" in request
        if has_exactly and has_first:
            ctx.emit(GPU604, obj, f"{label} sets both exactly and firstAvailable (exactly one "
                     "is allowed)", path=path + ("firstAvailable",))
        elif not has_exactly and not has_first and not flat:
            ctx.emit(GPU604, obj, f"{label} sets neither exactly nor firstAvailable",
                     path=path)
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            self._device_body(obj, ctx, path + ("exactly",), exactly, label)
        elif flat:
            # Lint the misplaced fields too: they will be moved into `exactly:` as they are.
            self._device_body(obj, ctx, path, request, label)
        self._first_available(obj, ctx, path, request, label)

    def _flat_request(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                      request: Mapping[str, Any], api_version: str) -> None:
        label = _request_label(request, path)
        if "exactly" in request:
            ctx.emit(GPU601, obj,
                     f"{label} uses `exactly:`, which {api_version} does not have: put its "
                     "fields directly in the request, or use apiVersion resource.k8s.io/v1",
                     path=path + ("exactly",))
            exactly = request.get("exactly")
            if isinstance(exactly, Mapping):
                self._device_body(obj, ctx, path + ("exactly",), exactly, label)
        has_class, has_first = "deviceClassName" in request, "firstAvailable" in request
        if has_class and has_first:
            ctx.emit(GPU604, obj, f"{label} sets both deviceClassName and firstAvailable "
                     "(exactly one is allowed)", path=path + ("firstAvailable",))
        elif not has_class and not has_first and "exactly" not in request:
            ctx.emit(GPU604, obj, f"{label} sets neither deviceClassName nor firstAvailable",
                     path=path)
        self._device_body(obj, ctx, path, request, label)
        self._first_available(obj, ctx, path, request, label)

    def _first_available(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                         request: Mapping[str, Any], label: str) -> None:
        entries = request.get("firstAvailable")
        if not isinstance(entries, list):
            return
        if len(entries) > MAX_SUBREQUESTS:
            ctx.emit(GPU604, obj, f"{label} lists {len(entries)} firstAvailable entries (at "
                     f"most {MAX_SUBREQUESTS})", path=path + ("firstAvailable",))
        for j, sub in enumerate(entries):
            if not isinstance(sub, Mapping):
                continue
            where = path + ("firstAvailable", j)
            sub_label = f"{label} firstAvailable[{j}]"
            if isinstance(sub.get("name"), str):
                sub_label = f"subrequest {_request_name(request, path)}/{sub['name']}"
            if "exactly" in sub:
                ctx.emit(GPU601, obj, f"{sub_label} uses `exactly:`; firstAvailable entries "
                         "carry deviceClassName/count/selectors directly",
                         path=where + ("exactly",))
            self._device_body(obj, ctx, where, sub, sub_label)

    def _device_body(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                     body: Mapping[str, Any], label: str) -> None:
        """What `exactly`, a flat v1beta1 request and a subrequest share: mode, count, selectors."""
        self._allocation(obj, ctx, path, body, label)
        class_name = body.get("deviceClassName")
        class_name = class_name if isinstance(class_name, str) else None
        nvidia = class_name is not None and class_name.endswith("nvidia.com")
        self._selectors(obj, ctx, path + ("selectors",), body.get("selectors"),
                        _Context(CLASS_DEVICE_TYPE.get(class_name or ""), nvidia))

    @staticmethod
    def _allocation(obj: SourceObject, ctx: AuditContext, path: PathT,
                    body: Mapping[str, Any], label: str) -> None:
        mode = body.get("allocationMode")
        if "allocationMode" in body and mode not in ALLOCATION_MODES and not _placeholder(mode):
            ctx.emit(GPU603, obj, f"{label}: allocationMode {mode!r} is not valid (use "
                     "ExactCount or All)", path=path + ("allocationMode",))
        if "count" not in body:
            return
        count = body["count"]
        if mode == "All":
            ctx.emit(GPU603, obj, f"{label}: count {count!r} is set with allocationMode All "
                     "(count is only allowed with ExactCount)", path=path + ("count",))
        elif not _placeholder(count) and (
                isinstance(count, bool) or not isinstance(count, int) or count < 1):
            ctx.emit(GPU603, obj, f"{label}: count {count!r} must be a whole number >= 1",
                     path=path + ("count",))

    # --- selectors ----------------------------------------------------------------------

    def _selectors(self, obj: SourceObject, ctx: AuditContext, path: PathT, selectors: Any,
                   context: _Context) -> None:
        if not isinstance(selectors, list):
            return
        for k, selector in enumerate(selectors):
            expression = as_mapping(as_mapping(selector).get("cel")).get("expression")
            if isinstance(expression, str) and not _placeholder(expression):
                self._expression(obj, ctx, path + (k, "cel", "expression"), expression, context)

    def _expression(self, obj: SourceObject, ctx: AuditContext, path: PathT, expression: str,
                    context: _Context) -> None:
        # The CEL checker loads with the first selector, not with every audit.
        from gpudra.dra.selector_check import selector_problems

        problems = selector_problems(expression, context.device_type, context.nvidia)
        for problem in problems:
            ctx.emit(GPU605 if problem.kind == "reference" else GPU606, obj, problem.message,
                     path=path)
        if any(p.kind == "comparison" for p in problems):
            return  # GPU606 says why it does not compile
        from gpudra.dra.cel import compile_selector  # the engine costs ~25 ms to load
        from gpudra.dra.cel_errors import CelError

        try:
            compile_selector(expression, ctx.target)
        except CelError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            ctx.emit(GPU612, obj, f"selector does not compile on Kubernetes {ctx.target}: "
                     f"{exc}{hint}", path=path)

    # --- pod specs ----------------------------------------------------------------------

    def _pod_spec(self, obj: SourceObject, spec: PodSpecRef, ctx: AuditContext) -> None:
        entries = spec.data.get("resourceClaims")
        names: list[str] = []
        if isinstance(entries, list):
            for j, entry in enumerate(entries):
                if isinstance(entry, Mapping):
                    self._claim_entry(obj, ctx, spec.path + ("resourceClaims", j), entry)
                    if isinstance(entry.get("name"), str):
                        names.append(entry["name"])
        for container in spec.containers:
            self._container_claims(obj, ctx, container, names)

    def _claim_entry(self, obj: SourceObject, ctx: AuditContext, path: PathT,
                     entry: Mapping[str, Any]) -> None:
        label = f"resourceClaims entry {entry.get('name')!r}"
        if "source" in entry:
            ctx.emit(GPU609, obj, f"{label} uses `source:`, the alpha form removed in "
                     "Kubernetes 1.31: move its resourceClaimName/resourceClaimTemplateName "
                     "into the entry", path=path + ("source",))
            return
        set_fields = [(k, entry[k]) for k in ("resourceClaimName", "resourceClaimTemplateName")
                      if entry.get(k) not in (None, "")]
        if len(set_fields) != 1:
            which = "both" if set_fields else "neither"
            ctx.emit(GPU609, obj, f"{label} sets {which} of resourceClaimName and "
                     "resourceClaimTemplateName (exactly one is required)", path=path)
            return
        key, name = set_fields[0]
        if isinstance(name, str) and not _placeholder(name):
            kind = "ResourceClaim" if key == "resourceClaimName" else "ResourceClaimTemplate"
            self._uses.append(_ClaimUse(obj, path + (key,), kind, name, str(entry.get("name"))))

    @staticmethod
    def _container_claims(obj: SourceObject, ctx: AuditContext, container: ContainerRef,
                          names: list[str]) -> None:
        claims = as_mapping(container.data.get("resources")).get("claims")
        if not isinstance(claims, list):
            return
        kind = "init container" if container.init else "container"
        for k, claim in enumerate(claims):
            name = as_mapping(claim).get("name")
            if not isinstance(name, str) or name in names or _placeholder(name):
                continue
            known = ", ".join(repr(n) for n in names) or "none"
            ctx.emit(GPU608, obj,
                     f"{kind} {container.name!r} resources.claims[{k}] names {name!r}, which is "
                     f"not in the pod's spec.resourceClaims ({known})",
                     path=container.path + ("resources", "claims", k, "name"),
                     container=container.name)


@dataclass(frozen=True, slots=True)
class _Context:
    """What is known about the devices a selector runs against."""

    device_type: DeviceType | None  # pinned by an NVIDIA class name, else None
    nvidia: bool  # an NVIDIA class: judge resource.kubernetes.io names as the NVIDIA driver's


def _request_name(request: Mapping[str, Any], path: PathT) -> str:
    name = request.get("name")
    return name if isinstance(name, str) else format_path(path[-3:])


def _request_label(request: Mapping[str, Any], path: PathT) -> str:
    name = request.get("name")
    return f"request {name!r}" if isinstance(name, str) else f"request {format_path(path[-2:])}"


def _placeholder(value: Any) -> bool:
    return isinstance(value, str) and any(mark in value for mark in _PLACEHOLDER_MARKS)

