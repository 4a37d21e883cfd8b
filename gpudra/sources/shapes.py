"""The typed reader of the Kubernetes objects plan, verify and cutover judge: what a cluster
lists, what `cutover --from` and `plan --inventory` files hold.

Each kind's fields that gpudra reads are declared below with the types the API server
enforces (kubernetes/api `core/v1`, `apps/v1`, `batch/v1`, `resource/v1{,beta1,beta2}`);
fields not declared are never read and pass unchecked. msgspec decodes an object against its
kind's declaration in C, so one call checks every field; its error names the path
(`spec.devices[0].capacity[memory].value`). A cluster's objects went through the API server and
are already well-formed: what fails here is an export edited by hand, a proxy, a fake server
or an attack, and the object is left out with an input error naming it and the field, while
the others are still judged. Counts are bounded by what a node can hold
(gpudra.k8s.devices.MAX_NODE_DEVICES) and numbers by int64 and finite floats, as the API server
bounds them: a label `nvidia.com/gpu.count: "10000000"`, `.inf` or `2**64` is refused here
instead of becoming millions of predicted devices, an OverflowError or an abort.

Why msgspec (a declared dependency): one declaration per kind instead of an isinstance test
before each of some hundred reads, and about 2.4 us per Pod, 30 us per ResourceSlice of 8
devices of 10 attributes (docs/security.md, "Inputs and their readers"). It is imported with
this module, which only the cluster commands and plan's and cutover's readers import.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, TypeVar

import msgspec
import orjson

from gpudra.k8s.devices import MAX_NODE_DEVICES
from gpudra.results.model import InputError
from gpudra.k8s.objects import PathT, SourceObject, as_mapping, format_path
from gpudra.k8s.quantity import parse_quantity
from gpudra.k8s.workloads import WorkloadTable

# Numbers as the API server holds them: int64, and floats a quantity can hold (finite).
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Float = Annotated[float, msgspec.Meta(ge=-9.2e18, le=9.2e18)]  # also refuses .inf and .nan
Quantity = str | Int64 | Float
Strings = dict[str, str]


class _Struct(msgspec.Struct, omit_defaults=True, gc=False):
    """Every declared field may be absent or null (exports carry `nodeSelector: null`).
    Untracked by the cyclic collector: decoded from acyclic data and dropped at once, they
    cannot be in a cycle, and tracking them made a ResourceSlice of 8 devices take 52 us
    instead of 30."""


_Shape = TypeVar("_Shape", bound=_Struct)


# --- shared ---------------------------------------------------------------------------------

class OwnerReference(_Struct):
    apiVersion: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None


class ObjectMeta(_Struct):
    name: str | None = None
    generateName: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: Strings | None = None
    annotations: Strings | None = None
    ownerReferences: list[OwnerReference] | None = None


class NodeSelectorRequirement(_Struct):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class NodeSelectorTerm(_Struct):
    matchExpressions: list[NodeSelectorRequirement] | None = None
    matchFields: list[NodeSelectorRequirement] | None = None


class NodeSelector(_Struct):
    nodeSelectorTerms: list[NodeSelectorTerm] | None = None


class PreferredTerm(_Struct):
    weight: Int32 | None = None
    preference: NodeSelectorTerm | None = None


class NodeAffinity(_Struct):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredTerm] | None = None


class Affinity(_Struct):
    nodeAffinity: NodeAffinity | None = None


class Toleration(_Struct):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class Taint(_Struct):
    key: str | None = None
    value: str | None = None
    effect: str | None = None


# --- pods -----------------------------------------------------------------------------------

class ContainerClaim(_Struct):
    name: str | None = None
    request: str | None = None


class Resources(_Struct):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ContainerClaim] | None = None


class EnvVar(_Struct):
    name: str | None = None
    value: str | None = None


class Container(_Struct):
    name: str | None = None
    image: str | None = None
    resources: Resources | None = None
    env: list[EnvVar] | None = None


class PodResourceClaim(_Struct):
    name: str | None = None
    resourceClaimName: str | None = None
    resourceClaimTemplateName: str | None = None


class PodSpec(_Struct):
    containers: list[Container] | None = None
    initContainers: list[Container] | None = None
    resourceClaims: list[PodResourceClaim] | None = None
    nodeSelector: Strings | None = None
    nodeName: str | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None


class PodCondition(_Struct):
    type: str | None = None
    status: str | None = None


class PodClaimStatus(_Struct):
    name: str | None = None
    resourceClaimName: str | None = None


class PodStatus(_Struct):
    phase: str | None = None
    conditions: list[PodCondition] | None = None
    resourceClaimStatuses: list[PodClaimStatus] | None = None
    extendedResourceClaimStatus: dict[str, Any] | None = None


class Pod(_Struct):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


# --- the outline of a pod that holds no GPU ---------------------------------------------------
# Most of a cluster's pods hold no GPU, have no claims and are counted for a controller gpudra
# reads. Of such a pod the cluster source (gpudra.sources.live: its owner indexes) and verify's
# pod hook (gpudra.verify.collect.read_cluster) read only the fields below, so only they are
# checked: half the typed check's cost per pod (issue 32: verify at most 1.1x the audit on
# 100,000 pods). Every other pod (one with device-plugin GPUs or claims, a bare pod audited as
# itself) still gets the whole Pod check above. The contract, that nothing reads a field of
# such a pod the outline does not declare, is tests/sources/test_pod_outline.py.

class OutlineOwner(_Struct):
    kind: str | None = None
    name: str | None = None
    controller: bool | None = None


class OutlineMeta(_Struct):
    name: str | None = None
    namespace: str | None = None
    ownerReferences: list[OutlineOwner] | None = None


class OutlineResources(_Struct):
    limits: dict[str, Quantity] | None = None


class OutlineContainer(_Struct):
    resources: OutlineResources | None = None


class OutlineSpec(_Struct):
    containers: list[OutlineContainer] | None = None
    initContainers: list[OutlineContainer] | None = None
    resourceClaims: list[PodResourceClaim] | None = None  # only whether there are any
    nodeName: str | None = None                           # a DaemonSet's pods: where it runs


class OutlineStatus(_Struct):
    phase: str | None = None


class PodOutline(_Struct):
    metadata: OutlineMeta | None = None
    spec: OutlineSpec | None = None
    status: OutlineStatus | None = None


# --- workloads (their pod specs are found through the workload table) ----------------------

class WorkloadSpec(_Struct):
    replicas: Int32 | None = None
    parallelism: Int32 | None = None
    completions: Int32 | None = None


class WorkloadStatus(_Struct):
    desiredNumberScheduled: Int32 | None = None


class Workload(_Struct):
    metadata: ObjectMeta | None = None
    spec: WorkloadSpec | None = None
    status: WorkloadStatus | None = None


class PodTemplate(_Struct):
    spec: PodSpec | None = None


class TemplatedSpec(WorkloadSpec):
    template: PodTemplate | None = None


class TemplatedWorkload(_Struct):
    """A workload whose one pod spec is `spec.template.spec` (Deployment, Job, ...), declared
    whole: one decode checks what Workload and that PodSpec check apart."""

    metadata: ObjectMeta | None = None
    spec: TemplatedSpec | None = None
    status: WorkloadStatus | None = None


class Other(_Struct):
    """Any other kind: only its metadata is read by everything."""

    metadata: ObjectMeta | None = None


# --- nodes ----------------------------------------------------------------------------------

class NodeSpec(_Struct):
    taints: list[Taint] | None = None
    unschedulable: bool | None = None


class NodeStatus(_Struct):
    allocatable: dict[str, Quantity] | None = None
    capacity: dict[str, Quantity] | None = None


class Node(_Struct):
    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


# --- DRA ------------------------------------------------------------------------------------

class CelSelector(_Struct):
    expression: str | None = None


class DeviceSelector(_Struct):
    cel: CelSelector | None = None


class CapacityRequests(_Struct):
    requests: dict[str, Quantity] | None = None


class ExactRequest(_Struct):
    deviceClassName: str | None = None
    selectors: list[DeviceSelector] | None = None
    allocationMode: str | None = None
    count: Int64 | None = None
    adminAccess: bool | None = None
    tolerations: list[Toleration] | None = None
    capacity: CapacityRequests | None = None


class SubRequest(ExactRequest):
    name: str | None = None


class DeviceRequest(ExactRequest):
    name: str | None = None
    exactly: ExactRequest | None = None
    firstAvailable: list[SubRequest] | None = None


class DeviceConstraint(_Struct):
    requests: list[str] | None = None
    matchAttribute: str | None = None
    distinctAttribute: str | None = None


class DeviceClaim(_Struct):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    config: list[dict[str, Any]] | None = None


class ClaimSpec(_Struct):
    devices: DeviceClaim | None = None


class AllocationResult(_Struct):
    request: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class AllocatedDevices(_Struct):
    results: list[AllocationResult] | None = None


class Allocation(_Struct):
    devices: AllocatedDevices | None = None


class ConsumerReference(_Struct):
    resource: str | None = None
    name: str | None = None
    uid: str | None = None


class ClaimStatus(_Struct):
    allocation: Allocation | None = None
    reservedFor: list[ConsumerReference] | None = None


class ResourceClaim(_Struct):
    metadata: ObjectMeta | None = None
    spec: ClaimSpec | None = None
    status: ClaimStatus | None = None


class TemplateSpec(_Struct):
    metadata: ObjectMeta | None = None
    spec: ClaimSpec | None = None


class ResourceClaimTemplate(_Struct):
    metadata: ObjectMeta | None = None
    spec: TemplateSpec | None = None


class DeviceClassSpec(_Struct):
    selectors: list[DeviceSelector] | None = None
    config: list[dict[str, Any]] | None = None
    extendedResourceName: str | None = None


class DeviceClass(_Struct):
    metadata: ObjectMeta | None = None
    spec: DeviceClassSpec | None = None


class Attribute(_Struct):
    integer: Int64 | None = msgspec.field(default=None, name="int")
    boolean: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None
    ints: list[Int64] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None


class Counter(_Struct):
    value: Quantity | None = None


class ValidRange(_Struct):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class RequestPolicy(_Struct):
    default: Quantity | None = None
    validValues: list[Quantity] | None = None
    validRange: ValidRange | None = None


class Capacity(_Struct):
    value: Quantity | None = None
    requestPolicy: RequestPolicy | None = None


class CounterConsumption(_Struct):
    counterSet: str | None = None
    counters: dict[str, Counter] | None = None


class DeviceBody(_Struct):
    attributes: dict[str, Attribute] | None = None
    # v1alpha3 wrote plain quantities as capacities
    capacity: dict[str, Capacity | str | Int64 | Float] | None = None
    consumesCounters: list[CounterConsumption] | None = None
    taints: list[Taint] | None = None
    allowMultipleAllocations: bool | None = None
    nodeName: str | None = None
    allNodes: bool | None = None
    nodeSelector: NodeSelector | None = None


class Device(DeviceBody):
    name: str | None = None
    basic: DeviceBody | None = None  # v1beta1


class Pool(_Struct):
    name: str | None = None
    generation: Int64 | None = None
    resourceSliceCount: Int64 | None = None


class CounterSet(_Struct):
    name: str | None = None
    counters: dict[str, Counter] | None = None


class ResourceSliceSpec(_Struct):
    driver: str | None = None
    pool: Pool | None = None
    nodeName: str | None = None
    allNodes: bool | None = None
    nodeSelector: NodeSelector | None = None
    perDeviceNodeSelection: bool | None = None
    sharedCounters: list[CounterSet] | None = None
    # ResourceSliceMaxDevices: the API server refuses more (docs/facts.md)
    devices: Annotated[list[Device], msgspec.Meta(max_length=MAX_NODE_DEVICES)] | None = None


class ResourceSlice(_Struct):
    metadata: ObjectMeta | None = None
    spec: ResourceSliceSpec | None = None


# --- what the bridge changes around the pods (gpudra.cutover.bridge_context) ---------------

class FlavorResource(_Struct):
    name: str | None = None


class FlavorQuotas(_Struct):
    name: str | None = None
    resources: list[FlavorResource] | None = None


class ClusterQueueResourceGroup(_Struct):
    coveredResources: list[str] | None = None
    flavors: list[FlavorQuotas] | None = None


class ClusterQueueSpec(_Struct):
    resourceGroups: list[ClusterQueueResourceGroup] | None = None


class ClusterQueue(_Struct):
    """Kueue's `kueue.x-k8s.io` ClusterQueue: the resources its quota covers."""

    metadata: ObjectMeta | None = None
    spec: ClusterQueueSpec | None = None


class ResourceFlavorSpec(_Struct):
    nodeLabels: Strings | None = None


class ResourceFlavor(_Struct):
    """Kueue's `kueue.x-k8s.io` ResourceFlavor: the node labels of the nodes it stands for."""

    metadata: ObjectMeta | None = None
    spec: ResourceFlavorSpec | None = None


class MachineGroup(_Struct):
    """A Cluster API `cluster.x-k8s.io` MachineDeployment, MachineSet or MachinePool: its
    metadata only (cluster-autoscaler's node-group size and capacity annotations, the
    MachineSet's `cluster.x-k8s.io/deployment-name` label)."""

    metadata: ObjectMeta | None = None


class NodeClaimTemplateSpec(_Struct):
    requirements: list[NodeSelectorRequirement] | None = None
    taints: list[Taint] | None = None


class NodeClaimTemplate(_Struct):
    metadata: ObjectMeta | None = None
    spec: NodeClaimTemplateSpec | None = None


class NodePoolSpec(_Struct):
    template: NodeClaimTemplate | None = None
    limits: dict[str, Quantity] | None = None


class NodePool(_Struct):
    """Karpenter's `karpenter.sh` NodePool: which nodes it may launch, from none."""

    metadata: ObjectMeta | None = None
    spec: NodePoolSpec | None = None


class ClusterPolicyComponent(_Struct):
    enabled: bool | None = None


class ClusterPolicySpec(_Struct):
    devicePlugin: ClusterPolicyComponent | None = None


class ClusterPolicy(_Struct):
    """The GPU Operator's `nvidia.com` ClusterPolicy: whether it runs the device plugin."""

    metadata: ObjectMeta | None = None
    spec: ClusterPolicySpec | None = None


# Custom resources cutover reads around the pods, by (group, kind).
_AROUND_KINDS: dict[tuple[str, str], type[_Struct]] = {
    ("kueue.x-k8s.io", "ClusterQueue"): ClusterQueue,
    ("kueue.x-k8s.io", "ResourceFlavor"): ResourceFlavor,
    ("cluster.x-k8s.io", "MachineDeployment"): MachineGroup,
    ("cluster.x-k8s.io", "MachineSet"): MachineGroup,
    ("cluster.x-k8s.io", "MachinePool"): MachineGroup,
    ("karpenter.sh", "NodePool"): NodePool,
    ("nvidia.com", "ClusterPolicy"): ClusterPolicy}

_DRA_KINDS: dict[str, type[_Struct]] = {
    "ResourceClaim": ResourceClaim, "ResourceClaimTemplate": ResourceClaimTemplate,
    "DeviceClass": DeviceClass, "ResourceSlice": ResourceSlice}
_CORE_KINDS: dict[str, type[_Struct]] = {"Pod": Pod, "Node": Node}
_DRA_GROUP = "resource.k8s.io"

# GPU Feature Discovery's labels that count physical devices: bounded by MAX_NODE_DEVICES.
# The device plugin's allocatable counts each device once per time-slicing or MPS replica
# (GFD's `nvidia.com/gpu.replicas`): bounded by MAX_NODE_DEVICES times the replicas.
_COUNT_LABEL = re.compile(r"^nvidia\.com/(?:gpu|mig-.+)\.count$")
_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
_NVIDIA_RESOURCE = "nvidia.com/"


def object_label(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` (or `Kind name`), printable whatever the fields hold."""
    meta = as_mapping(obj.get("metadata"))
    kind = obj.get("kind")
    name, namespace = meta.get("name"), meta.get("namespace")
    parts = [str(part) for part in (namespace, name) if isinstance(part, str) and part]
    kind_name = kind if isinstance(kind, str) and kind else "object"
    return f"{kind_name} {'/'.join(parts) or '(no name)'}"


def well_formed(objects: Iterable[Any], errors: list[InputError],
                table: WorkloadTable | None = None) -> list[Any]:
    """The live objects that decode as their kind; an input error naming each other one."""
    kept = []
    for obj in objects:
        problem = object_problem(obj, table)
        if problem is None:
            kept.append(obj)
        else:
            errors.append(refusal(obj, problem))
    return kept


def well_formed_items(items: Iterable[Any], errors: list[InputError],
                      table: WorkloadTable | None = None,
                      kinds: tuple[str, ...] | None = None) -> Iterator[Any]:
    """A file source's items without the objects (of `kinds`, else of every kind) that do not
    decode as their kind; an input error naming the file, the object and the field for each.
    Other items pass as they are."""
    for item in items:
        if isinstance(item, SourceObject) and not item.listing and (
                kinds is None or item.kind in kinds):
            problem = object_problem(item.data, table)
            if problem is not None:
                errors.append(refusal(item.data, problem, item.file, item.line_of(())))
                continue
        yield item


def refusal(obj: Any, problem: str, file: str | None = None, line: int | None = None
            ) -> InputError:
    """The input error of an object left out: `Kind ns/name: field: what; left out`."""
    label = object_label(obj) if isinstance(obj, Mapping) else "object"
    if file is None:
        return InputError(None, f"{problem}; left out", object=label)
    return InputError(file, f"{label}: {problem}; left out", line)


def object_problem(obj: Any, table: WorkloadTable | None = None) -> str | None:
    """Why `obj` cannot be judged (`field: what is wrong`), or None when every field gpudra
    reads has the type the API server gives it and counts stay within what a node holds."""
    if not isinstance(obj, Mapping):
        return f"not an object but {_type_name(obj)}"
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return "kind and apiVersion must be strings"
    group = api_version.rpartition("/")[0]
    declared = (_DRA_KINDS.get(kind) if group == _DRA_GROUP else
                _CORE_KINDS.get(kind) if group == "" else _AROUND_KINDS.get((group, kind)))
    if declared is not None:
        problem = _decoded(obj, declared)
        return _node_counts_problem(obj) if problem is None and declared is Node else problem
    table = table or WorkloadTable()
    if _templated_passes(obj, table, group, kind):
        return None
    problem = _decoded(obj, Workload if table.lookup(group, kind) else Other)
    return problem if problem is not None else _pod_specs_problem(obj, table, group, kind)


_TEMPLATE = "spec.template.spec"
_CONTAINERS_KEY = b'"containers"'


def _templated_passes(obj: Mapping[str, Any], table: WorkloadTable, group: str,
                      kind: str) -> bool:
    """True when a kind whose one pod spec is `spec.template.spec` passes both checks below
    (the Workload fields, then every pod spec the table and the generic search find) in one
    decode. Most of a cluster's workloads are such kinds, and the generic search, a walk in
    Python, cost three times the decoding. It can find only mappings with a `containers` key:
    when the object as JSON (searched in C) holds that key at most once, and then in
    `spec.template.spec`, the template is the only pod spec there is. False says nothing:
    the checks below decide, and name the field."""
    entries = table.lookup(group, kind)
    if not entries or any(entry.pod_specs != (_TEMPLATE,) for entry in entries):
        return False
    try:
        found = orjson.dumps(obj).count(_CONTAINERS_KEY)
    except TypeError:  # orjson.JSONEncodeError: not plain JSON data
        return False
    if found > 1 or (found == 1 and "containers" not in as_mapping(
            as_mapping(as_mapping(obj.get("spec")).get("template")).get("spec"))):
        return False
    try:
        _convert(obj, TemplatedWorkload)
    except msgspec.ValidationError:
        return False
    return True


def decoded_pod(obj: Any, table: WorkloadTable | None = None) -> tuple[Pod | None, str | None]:
    """object_problem, keeping the decoded Pod when `obj` is a core Pod that passes: what the
    source reads of every pod is then read from it, not looked up in the dicts again."""
    if isinstance(obj, Mapping) and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        try:
            return _convert(obj, Pod), None
        except msgspec.ValidationError:
            pass  # object_problem names the field
    return None, object_problem(obj, table)


def outlined_pod(obj: Any) -> PodOutline | None:
    """The outline of a core Pod whose outlined fields have the API server's types; None for
    anything else (the caller then gives it the whole check, which names the field)."""
    if isinstance(obj, Mapping) and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        try:
            outline: PodOutline = _convert(obj, PodOutline)
        except msgspec.ValidationError:
            return None
        return outline
    return None


def _pod_specs_problem(obj: Mapping[str, Any], table: WorkloadTable, group: str,
                       kind: str) -> str | None:
    # Nearly every workload passes: checked first without pod_specs' paths and order, which
    # only the first problem's message needs.
    if all(_decoded(spec, PodSpec) is None
           for spec in table.pod_spec_mappings(group, kind, obj)):
        return None
    for ref in table.pod_specs(group, kind, obj):
        problem = _decoded(ref.data, PodSpec, ref.path)
        if problem is not None:
            return problem
    return None


def _node_counts_problem(node: Mapping[str, Any]) -> str | None:
    """A device count beyond what one node holds, in a GFD label or the device plugin's
    allocatable or capacity."""
    labels = as_mapping(as_mapping(node.get("metadata")).get("labels"))
    for key, value in labels.items():
        if key.startswith(_NVIDIA_RESOURCE) and _COUNT_LABEL.match(key):
            problem = _count_problem(value, MAX_NODE_DEVICES)
            if problem:
                return f"metadata.labels[{key}]: {problem}"
    replicas = _count(labels.get(_REPLICAS_LABEL))
    ceiling = MAX_NODE_DEVICES * replicas if replicas else MAX_NODE_DEVICES
    status = as_mapping(node.get("status"))
    for field in ("allocatable", "capacity"):
        for key, value in as_mapping(status.get(field)).items():
            if key.startswith(_NVIDIA_RESOURCE):
                problem = _count_problem(value, ceiling)
                if problem:
                    return f"status.{field}[{key}]: {problem}"
    return None


def _count_problem(value: Any, ceiling: int) -> str | None:
    parsed = _count(value)
    if parsed is not None and parsed > ceiling:
        per = f" ({MAX_NODE_DEVICES} devices x {ceiling // MAX_NODE_DEVICES} replicas)" \
            if ceiling > MAX_NODE_DEVICES else ", the devices of one ResourceSlice"
        return f"{value} devices is more than a node holds (at most {ceiling}{per})"
    return None


def _count(value: Any) -> Any:
    """A count as GFD and the kubelet write it (digits), else as a quantity; None if neither."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, str):
        return parse_quantity(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _decoded(value: Any, declared: type[_Struct], where: PathT = ()) -> str | None:
    """Why `value` (found at `where` in its object) does not decode as `declared`."""
    try:
        _convert(value, declared)
    except msgspec.ValidationError as exc:
        return _message(str(exc), value, declared, format_path(where) if where else "")
    return None


def _convert(value: Any, declared: type[_Shape]) -> _Shape:
    """msgspec.convert with the cyclic collector paused. A decoding is acyclic and dropped
    (or kept a moment) by its caller, but its lists and dicts are tracked: across 100,000
    pods they set off collections that walk every long-lived object of the run, a tenth of
    verify's time (issue 32), as gpudra.cluster.jsonparse found for the JSON decoding."""
    if not gc.isenabled():
        return msgspec.convert(value, declared)
    gc.disable()
    try:
        return msgspec.convert(value, declared)
    finally:
        gc.enable()


_AT = " - at `$"


def _message(text: str, value: Any, declared: type[_Struct], prefix: str) -> str:
    """msgspec's `Expected `int`, got `str` - at `$.spec.x[...]`` as `spec.x[key]: expected
    `int`, got `str``: the key a dict's `[...]` stands for is found again."""
    problem, _, where = text.partition(_AT)
    path = where.rstrip("`")
    if "[...]" in path:
        path = _keys_named(path, value, declared)
    path = (prefix + path) if prefix else path.lstrip(".")
    for bound, plain in _BOUNDS.items():
        problem = problem.replace(bound, plain)
    problem = problem.replace(" | null`", "`")
    problem = problem[:1].lower() + problem[1:]
    return f"{path}: {problem}" if path else problem


# What msgspec says of a bound, as the reader would put it.
_BOUNDS = {"Expected `float` <= 9.2e+18": "not a finite number an int64 holds",
           "Expected `float` >= -9.2e+18": "not a finite number an int64 holds",
           "Expected `int` <= 9223372036854775807": "a number past int64",
           "Expected `int` >= -9223372036854775808": "a number past int64",
           "Expected `int` <= 2147483647": "a number past int32",
           "Expected `int` >= -2147483648": "a number past int32"}


_SEGMENT = re.compile(r"\.(\w+)|\[(\d+)\]|\[\.\.\.\]")


def _keys_named(path: str, value: Any, declared: type[_Struct]) -> str:
    """The path with each `[...]` replaced by the first key of that mapping whose value alone
    fails to decode (decoding each value again: only on the error path)."""
    out: list[str] = []
    current = value
    segments = [m for m in _SEGMENT.finditer(path)]
    for index, match in enumerate(segments):
        field, item = match.group(1), match.group(2)
        if field is not None:
            out.append(f".{field}")
            current = as_mapping(current).get(field)
        elif item is not None:
            out.append(f"[{item}]")
            current = current[int(item)] if isinstance(current, list) and int(item) < len(
                current) else None
        else:
            key = _failing_key(value, [m.group(0) for m in segments[:index]], current, declared)
            if key is None:
                return path
            out.append(f"[{key}]")
            current = as_mapping(current).get(key)
    return "".join(out)


def _failing_key(root: Any, before: list[str], mapping: Any, declared: type[_Struct]
                 ) -> str | None:
    if not isinstance(mapping, Mapping):
        return None
    for key in mapping:
        trial = _replaced(root, before, {key: mapping[key]})
        try:
            msgspec.convert(trial, declared)
        except msgspec.ValidationError as exc:
            if str(exc).partition(_AT)[2].startswith("".join(before)):
                return str(key)
    return None


def _replaced(root: Any, path: list[str], new: Any) -> Any:
    """`root` with the value at `path` (`.field` and `[index]` segments) replaced by `new`,
    copying only the containers on the way."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if head.startswith("."):
        key = head[1:]
        return {**root, key: _replaced(root.get(key), rest, new)}
    index = int(head[1:-1])
    return [*root[:index], _replaced(root[index], rest, new), *root[index + 1:]]


def _type_name(value: Any) -> str:
    return {str: "a string", int: "a number", float: "a number", bool: "a boolean",
            list: "a list", type(None): "null"}.get(type(value), type(value).__name__)
