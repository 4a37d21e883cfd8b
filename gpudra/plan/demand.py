"""What the workloads ask for: pods per workload, each pod's claims, each claim's requests.

Input is a list of plain Kubernetes objects (a tree's or a cluster's). Output is a
:class:`Demand`: workloads (with the pod groups they run and the claims of each pod), the
DeviceClasses to use, and problems that make a workload unplannable (reported, never raised).

Claims (kubernetes/api @ kubernetes-1.36.2, ``resource/v1/types.go``; ``core/v1`` PodSpec):

* ``spec.resourceClaims[]`` with ``resourceClaimTemplateName`` -> a new claim per pod;
  ``resourceClaimName`` -> one claim shared by every pod that names it (all on one node). The
  tombstoned ``source:`` form (<= 1.30) is reported.
* Requests: v1/v1beta2 ``{name, exactly: {...}}`` or ``{name, firstAvailable: [...]}``;
  v1beta1 (and v1alpha3) put ``deviceClassName``, ``selectors``, ``allocationMode``, ``count``,
  ``capacity`` directly on the request. A request whose shape does not fit its ``apiVersion`` is
  a problem (the API server rejects it; dra-reference sections 1.2 and 10a).
* ``allocationMode`` defaults to ExactCount and ``count`` to 1; ``capacity.requests`` is a map of
  quantities (DRAConsumableCapacity); ``constraints[].matchAttribute`` /
  ``distinctAttribute`` are fully qualified attribute names.

Pods per workload (how many run at once) are counted by :mod:`gpudra.k8s.pod_counts`, the same
way a cluster audit reports a workload's replicas.

DeviceClasses come from the input; names not found there fall back to the NVIDIA chart's
defaults (``gpu.nvidia.com``, ``mig.nvidia.com``, ``vfio.gpu.nvidia.com``, dra-reference section
7), marked ``default=True``.

Workloads not yet on DRA can be converted in memory first: pass ``converter`` (a callable that
returns the replacement objects for one object, e.g. the converted workload plus its generated
ResourceClaimTemplates as dicts, or None to keep it); workloads it produced are flagged
``converted``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from gpudra.dra.attributes import CLASS_DEVICE_TYPE
from gpudra.dra.emit import GPU_CLASS_SELECTOR
from gpudra.dra.request_shapes import FLAT_VERSIONS
from gpudra.dra.served import GROUP
from gpudra.k8s.gpu_use import read_container
from gpudra.k8s.objects import SourceObject, as_mapping, dig, expand_lists, format_path
from gpudra.k8s.pod_counts import pod_count
from gpudra.k8s.quantity import parse_quantity
from gpudra.k8s.workloads import PodSpecRef, WorkloadTable

_EMPTY: Mapping[str, Any] = MappingProxyType({})
EXACT_COUNT, ALL = "ExactCount", "All"
ConvertHook = Callable[[Mapping[str, Any]], "Sequence[Mapping[str, Any]] | None"]

_CLAIM_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass",
                          "ResourceSlice", "DeviceTaintRule", "ResourceSliceList"})
_NOT_WORKLOADS = frozenset({"Node", "Namespace", "ConfigMap", "Secret", "Service",
                            "ServiceAccount", "ResourceQuota", "LimitRange"})
_NO_INNER_SPEC = ("ResourceClaimTemplate has no spec.spec (the inner ResourceClaimSpec is "
                  "mandatory)")


def chart_class_selector(device_type: str) -> str:
    """The selector the NVIDIA chart renders for the class of one device type."""
    return GPU_CLASS_SELECTOR.replace("== 'gpu'", f"== '{device_type}'")


CHART_CLASSES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    name: (chart_class_selector(device_type.value),)
    for name, device_type in CLASS_DEVICE_TYPE.items()})


# --- records --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """One request (or one ``firstAvailable`` alternative: then ``subrequests`` is empty and
    the request is the parent's). ``count`` is meaningful for ExactCount only."""

    name: str
    device_class: str = ""
    selectors: tuple[str, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    capacity: Mapping[str, Fraction] = field(default_factory=lambda: _EMPTY)
    admin_access: bool = False
    tolerations: tuple[Mapping[str, Any], ...] = ()
    subrequests: tuple[Request, ...] = ()

    @property
    def alternatives(self) -> tuple[Request, ...]:
        """What the allocator tries, in order: the subrequests, or the request itself."""
        return self.subrequests or (self,)

    @property
    def needed(self) -> int:
        """Devices it needs at least: `count`, or for allocationMode All one (it takes every
        matching device, and fails on none)."""
        return 1 if self.allocation_mode == ALL else self.count


@dataclass(frozen=True, slots=True)
class Constraint:
    requests: tuple[str, ...]  # empty: every request of the claim
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True)
class ClaimSpec:
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()
    problems: tuple[str, ...] = ()


# An object as plan reads it: its data, or a record that holds it (a ManifestObject, whose file
# the workload keeps)
PlainOrRecord = SourceObject | Mapping[str, Any]
# ResourceClaimTemplates' or ResourceClaims' specs by (namespace, name); None: written without one
ClaimSpecs = Mapping[tuple[str | None, str], ClaimSpec]


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's ``resourceClaims``, resolved. `shared` names the ResourceClaim
    (namespace, name) shared by every pod referencing it; None for template claims."""

    name: str
    source: str  # "template <name>" / "claim <name>"
    spec: ClaimSpec | None
    shared: tuple[str, str] | None = None
    problem: str | None = None


@dataclass(frozen=True)
class PodGroup:
    """Identical pods of a workload. `pods` None: one per eligible node (DaemonSet)."""

    path: str
    pods: int | None
    claims: tuple[PodClaim, ...]
    node_selector: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    note: str | None = None


@dataclass(frozen=True)
class Workload:
    kind: str
    name: str
    namespace: str | None
    groups: tuple[PodGroup, ...]
    problems: tuple[str, ...] = ()
    converted: bool = False
    file: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace or "", self.kind, self.name)


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    default: bool = False  # the NVIDIA chart's, assumed because the input had none


@dataclass(frozen=True)
class Demand:
    workloads: tuple[Workload, ...]
    classes: Mapping[str, DeviceClass]
    unconverted: tuple[tuple[str, str, str | None], ...] = ()  # (kind, name, namespace)
    problems: tuple[str, ...] = ()


# --- extraction -----------------------------------------------------------------------------

def extract_demand(objects: Iterable[PlainOrRecord], table: WorkloadTable | None = None,
                   converter: ConvertHook | None = None) -> Demand:
    """Workloads, claims and classes from plain objects (dicts, or records with ``.data`` and
    ``.file`` such as :class:`gpudra.k8s.objects.ManifestObject`)."""
    table = table or WorkloadTable()
    entries = list(_entries(objects, converter))
    classes: dict[str, DeviceClass] = {}
    templates: dict[tuple[str | None, str], ClaimSpec] = {}
    claims: dict[tuple[str | None, str], ClaimSpec] = {}
    problems: list[str] = []
    for data, _, _ in entries:
        kind, version = data.get("kind"), _version(data)
        if version is None:
            continue
        name, namespace = _name(data), _namespace(data)
        if kind == "DeviceClass" and name:
            classes[name] = DeviceClass(name, _selectors(as_mapping(data.get("spec"))))
        elif kind == "ResourceClaimTemplate" and name:
            inner = dig(data, "spec", "spec")
            templates[(namespace, name)] = (
                _claim_spec(as_mapping(inner), version) if isinstance(inner, Mapping) else
                ClaimSpec((), problems=(_NO_INNER_SPEC,)))
        elif kind == "ResourceClaim" and name:
            claims[(namespace, name)] = _claim_spec(as_mapping(dig(data, "spec")), version)
    for name, selectors in CHART_CLASSES.items():
        classes.setdefault(name, DeviceClass(name, selectors, default=True))
    workloads: list[Workload] = []
    unconverted: list[tuple[str, str, str | None]] = []
    for data, file, converted in entries:
        kind = data.get("kind")
        if not isinstance(kind, str) or kind in _CLAIM_KINDS or kind in _NOT_WORKLOADS:
            continue
        group = str(data.get("apiVersion", "")).rpartition("/")[0]
        specs = table.pod_specs(group, kind, data)
        with_claims = [s for s in specs if s.data.get("resourceClaims")]
        if not with_claims:
            if any(read_container(c).device_plugin for s in specs for c in s.containers):
                unconverted.append((kind, _name(data) or "", _namespace(data)))
            continue
        workloads.append(_workload(data, kind, with_claims, templates, claims, file, converted))
    return Demand(tuple(workloads), MappingProxyType(classes), tuple(unconverted), tuple(problems))


def _entries(objects: Iterable[PlainOrRecord], converter: ConvertHook | None
             ) -> Iterator[tuple[Mapping[str, Any], str | None, bool]]:
    for data, record in expand_lists(objects):
        file = getattr(record, "file", None)
        replaced = converter(data) if converter is not None else None
        if replaced is None:
            yield data, file, False
        else:
            for new in replaced:
                if isinstance(new, Mapping):
                    yield new, file, True


def _version(data: Mapping[str, Any]) -> str | None:
    """The resource.k8s.io version of a DRA object, else None (workloads: not needed)."""
    group, _, version = str(data.get("apiVersion", "")).rpartition("/")
    return version if group == GROUP else None


def _name(data: Mapping[str, Any]) -> str | None:
    meta = as_mapping(data.get("metadata"))
    value = meta.get("name") or meta.get("generateName")
    return str(value) if value is not None else None


def _namespace(data: Mapping[str, Any]) -> str | None:
    value = as_mapping(data.get("metadata")).get("namespace")
    return str(value) if value is not None else None


def _selectors(body: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for selector in body.get("selectors") or ():
        expression = dig(selector, "cel", "expression")
        if isinstance(expression, str):
            out.append(expression)
    return tuple(out)


def _claim_spec(spec: Mapping[str, Any], version: str) -> ClaimSpec:
    devices = as_mapping(spec.get("devices"))
    problems: list[str] = []
    requests = []
    for index, raw in enumerate(devices.get("requests") or ()):
        if not isinstance(raw, Mapping):
            continue
        request, problem = _request(raw, version, index)
        requests.append(request)
        if problem:
            problems.append(problem)
    constraints = []
    for raw in devices.get("constraints") or ():
        raw = as_mapping(raw)
        names = tuple(str(r) for r in raw.get("requests") or ())
        match = raw.get("matchAttribute")
        distinct = raw.get("distinctAttribute")
        constraints.append(Constraint(names, str(match) if match else None,
                                      str(distinct) if distinct else None))
    if not requests:
        problems.append("the claim has no requests")
    return ClaimSpec(tuple(requests), tuple(constraints), tuple(problems))


def _request(raw: Mapping[str, Any], version: str, index: int) -> tuple[Request, str | None]:
    name = str(raw.get("name") or f"#{index}")
    flat = version in FLAT_VERSIONS
    if "exactly" in raw or "firstAvailable" in raw:
        if flat and "exactly" in raw:
            return Request(name), (f"request {name}: `exactly:` is not a field of "
                                   f"resource.k8s.io/{version} (it arrived in v1beta2)")
        if "exactly" in raw:
            return _body(name, as_mapping(raw.get("exactly")))
        subrequests = []
        problem = None
        for sub in raw.get("firstAvailable") or ():
            sub = as_mapping(sub)
            parsed, sub_problem = _body(str(sub.get("name", "")), sub)
            subrequests.append(parsed)
            problem = problem or sub_problem
        if not subrequests:
            problem = f"request {name}: firstAvailable is empty"
        return Request(name, subrequests=tuple(subrequests)), problem
    if "deviceClassName" in raw and not flat:
        return Request(name), (f"request {name}: deviceClassName directly on the request is the "
                               f"v1beta1 shape; resource.k8s.io/{version} needs `exactly:` (the "
                               "API server rejects it: unknown field)")
    if "deviceClassName" not in raw:
        return Request(name), f"request {name}: neither exactly nor firstAvailable is set"
    return _body(name, raw)


def _body(name: str, body: Mapping[str, Any]) -> tuple[Request, str | None]:
    device_class = body.get("deviceClassName")
    mode = body.get("allocationMode") or EXACT_COUNT
    count = body.get("count", 1)
    problem = None
    if not isinstance(device_class, str) or not device_class:
        problem = f"request {name}: no deviceClassName"
        device_class = ""
    if mode not in (EXACT_COUNT, ALL):
        problem = problem or f"request {name}: unknown allocationMode {mode!r}"
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        problem = problem or f"request {name}: count must be a positive integer, not {count!r}"
        count = 1
    capacity: dict[str, Fraction] = {}
    for key, value in as_mapping(dig(body, "capacity", "requests")).items():
        parsed = parse_quantity(str(value).strip()) if value is not None else None
        if parsed is None:
            problem = problem or f"request {name}: capacity {key} is not a quantity ({value!r})"
        else:
            capacity[str(key)] = parsed
    tolerations = tuple(t for t in body.get("tolerations") or () if isinstance(t, Mapping))
    return Request(name, device_class, _selectors(body), str(mode), count,
                   MappingProxyType(capacity), body.get("adminAccess") is True,
                   tolerations), problem


# --- workloads ------------------------------------------------------------------------------

def _workload(data: Mapping[str, Any], kind: str, specs: list[PodSpecRef],
              templates: ClaimSpecs, claims: ClaimSpecs, file: str | None, converted: bool) -> Workload:
    namespace = _namespace(data)
    groups = []
    problems: list[str] = []
    for spec in specs:
        pods, note = pod_count(kind, data, spec.path)
        pod_claims = []
        for entry in spec.data.get("resourceClaims") or ():
            pod_claim = _pod_claim(as_mapping(entry), namespace, templates, claims)
            pod_claims.append(pod_claim)
            if pod_claim.problem:
                problems.append(f"{format_path(spec.path) or 'pod'}: {pod_claim.problem}")
        selector = {str(k): str(v) for k, v in as_mapping(spec.data.get("nodeSelector")).items()}
        groups.append(PodGroup(format_path(spec.path), pods, tuple(pod_claims),
                               MappingProxyType(selector), note))
    return Workload(kind, _name(data) or "", namespace, tuple(groups), tuple(problems),
                    converted, file)


def _lookup(store: ClaimSpecs, namespace: str | None, name: str) -> ClaimSpec | None:
    """Same namespace first; an object written without a namespace lands wherever the workload
    is applied, so it matches any namespace."""
    found = store.get((namespace, name))
    if found is None and namespace is not None:
        found = store.get((None, name))
    if found is None and namespace is None:
        found = store.get(("default", name))
    return found


def _pod_claim(entry: Mapping[str, Any], namespace: str | None, templates: ClaimSpecs,
               claims: ClaimSpecs) -> PodClaim:
    name = str(entry.get("name", ""))
    template = entry.get("resourceClaimTemplateName")
    claim = entry.get("resourceClaimName")
    if "source" in entry and template is None and claim is None:
        return PodClaim(name, "source", None, problem=(
            f"claim {name}: `source:` was tombstoned in Kubernetes 1.31; use "
            "resourceClaimTemplateName or resourceClaimName directly"))
    if isinstance(template, str) and template:
        spec = _lookup(templates, namespace, template)
        problem = None if spec is not None else (
            f"claim {name}: ResourceClaimTemplate {template!r} not found"
            f"{' in namespace ' + namespace if namespace else ''}")
        return PodClaim(name, f"template {template}", spec, problem=problem)
    if isinstance(claim, str) and claim:
        spec = _lookup(claims, namespace, claim)
        problem = None if spec is not None else (
            f"claim {name}: ResourceClaim {claim!r} not found"
            f"{' in namespace ' + namespace if namespace else ''}")
        return PodClaim(name, f"claim {claim}", spec, (namespace or "", claim), problem)
    return PodClaim(name, "?", None, problem=(
        f"claim {name}: exactly one of resourceClaimTemplateName and resourceClaimName must "
        "be set"))
