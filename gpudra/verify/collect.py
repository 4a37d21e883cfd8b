"""What verify reads from a live cluster, kept as small records.

The cluster source (gpudra.sources.live) does the reading and the owner resolution; verify
adds a pod hook that keeps, per pod, only what is judged (phase, readiness, claims, device-plugin
GPUs held), the whole pod only for pods that are not Running and Ready (their reasons need the
spec), and the scheduler's FailedScheduling events (one field-selected list).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpudra.k8s.gpu_use import OPERATOR_DRA_FIELDS, quota_keys, read_object
from gpudra.results.model import InputError, NotRead
from gpudra.k8s.objects import ClusterObject, as_mapping, dig
from gpudra.sources.live import (
    ClusterSource,
    PodRead,
    controller_of,
    device_plugin_gpus,
    device_plugin_names,
    problem_message,
    problem_subject,
)
from gpudra.sources.live_reads import EVENTS
from gpudra.k8s.workloads import WorkloadTable
from gpudra.k8s.gpu_use import is_device_plugin_resource
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets
from gpudra.sources.live_reads import OTHERS

if TYPE_CHECKING:  # read_guard (and the guard's records) load when the guard is read
    from gpudra.cluster.client import Cluster
    from gpudra.cluster.listing import ProgressHook
    from gpudra.verify.guarded import GuardState

OwnerKey = tuple[str, str, str]  # (namespace, kind, name), as the cluster source keys owners
DeviceKey = tuple[str, str, str]  # (driver, pool, device), as allocation results name one


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    entry: str                 # the pod's spec.resourceClaims[].name
    claim: str | None          # the ResourceClaim's name; None: not created yet
    template: str | None       # resourceClaimTemplateName, when made from a template


@dataclass(frozen=True, slots=True)
class PodState:
    namespace: str
    name: str
    uid: str
    owner: OwnerKey
    phase: str
    ready: bool
    node: str | None
    claims: tuple[PodClaimRef, ...]
    device_plugin_gpus: int      # held through the device plugin (the bridge's excluded)
    bridged: bool                # nvidia.com/gpu served by DRA (extendedResourceClaimStatus)
    data: Mapping[str, Any] | None = None  # the whole pod, for pods that are not fine
    # the device-plugin resources its containers ask for (nvidia.com/gpu, nvidia.com/mig-...)
    device_plugin_names: tuple[str, ...] = ()

    @property
    def fine(self) -> bool:
        return self.phase == "Succeeded" or (self.phase == "Running" and self.ready)

    @property
    def subject(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ClaimState:
    namespace: str
    name: str
    devices: tuple[DeviceKey, ...]          # status.allocation.devices.results
    reserved_for: frozenset[str]            # pod uids and names in status.reservedFor
    bridge: bool                            # made by the scheduler for the KEP-5004 bridge
    data: Mapping[str, Any] | None = None   # the whole claim, while it is not allocated

    @property
    def allocated(self) -> bool:
        return bool(self.devices)


@dataclass
class ClusterState:
    """Everything verify judges; filled by :func:`read_cluster` (or by tests)."""

    workloads: list[ClusterObject] = field(default_factory=list)
    pods: dict[OwnerKey, list[PodState]] = field(default_factory=lambda: defaultdict(list))
    claims: dict[tuple[str, str], ClaimState] = field(default_factory=dict)
    templates: list[Mapping[str, Any]] = field(default_factory=list)
    classes: list[Mapping[str, Any]] = field(default_factory=list)
    slices: list[Mapping[str, Any]] = field(default_factory=list)
    nodes: list[Mapping[str, Any]] = field(default_factory=list)
    plugin_daemonsets: list[Mapping[str, Any]] = field(default_factory=list)
    daemonset_nodes: dict[tuple[str, str], set[str]] = field(
        default_factory=lambda: defaultdict(set))
    keyed_objects: list[Mapping[str, Any]] = field(default_factory=list)  # quotas, queues, ...
    events: dict[tuple[str, str], str] = field(default_factory=dict)  # pod -> last message
    errors: list[InputError] = field(default_factory=list)
    read: int = 0
    # Namespaces, admission policies and bindings (the whole cluster only): is every namespace
    # labelled as migrated covered by gpudra guard? None: not read (under -n).
    guard: GuardState | None = None
    # Under -n: why the claims of other namespaces (which hold devices too) could not be read;
    # None when they were, or when every namespace was read anyway.
    other_claims_unread: str | None = None
    # Worked out once, on first use, for the reasons of Pending device-plugin pods.
    _held_per_node: dict[str, int] | None = field(default=None, repr=False)
    _allocatable: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    # Node selection (its repr) -> the nodes it selects: the pods of one workload share theirs.
    eligible_by_selection: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def device_plugin_held(self) -> dict[str, int]:
        """Node -> device-plugin GPUs its pods that have not ended hold."""
        if self._held_per_node is None:
            held: dict[str, int] = {}
            for pods in self.pods.values():
                for pod in pods:
                    if pod.node and pod.device_plugin_gpus and \
                            pod.phase not in ("Succeeded", "Failed"):
                        held[pod.node] = held.get(pod.node, 0) + pod.device_plugin_gpus
            self._held_per_node = held
        return self._held_per_node

    def allocatable_gpus(self, resource: str) -> dict[str, int]:
        """Node -> its allocatable `resource` (a whole count; anything else is 0)."""
        if resource not in self._allocatable:
            counts: dict[str, int] = {}
            for node in self.nodes:
                value = as_mapping(dig(node, "status", "allocatable")).get(resource)
                try:
                    count = max(int(str(value)), 0) if value is not None else 0
                except ValueError:
                    count = 0  # not a whole count: nothing the scheduler would hand out
                counts[str(dig(node, "metadata", "name"))] = count
            self._allocatable[resource] = counts
        return self._allocatable[resource]

    def pods_of(self, workload: ClusterObject) -> list[PodState]:
        if workload.kind == "Pod" and workload.group == "":
            return list(self.pods.get((workload.namespace or "", "Pod", workload.name or ""),
                                      ()))
        members = workload.cluster.members if workload.cluster is not None else frozenset()
        return [p for key in sorted(members) for p in self.pods.get(key, ())]


def pod_state(pod: Mapping[str, Any]) -> PodState:
    meta = as_mapping(pod.get("metadata"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    owner = controller_of(pod)
    key = (namespace, owner[0], owner[1]) if owner else (namespace, "Pod", name)
    statuses = {str(s.get("name")): s.get("resourceClaimName")
                for s in dig(pod, "status", "resourceClaimStatuses") or ()
                if isinstance(s, Mapping)}
    claims = []
    for entry in dig(pod, "spec", "resourceClaims") or ():
        if not isinstance(entry, Mapping):
            continue
        entry_name = str(entry.get("name") or "")
        template = entry.get("resourceClaimTemplateName")
        claim = entry.get("resourceClaimName") or (statuses.get(entry_name) if template else None)
        claims.append(PodClaimRef(entry_name, str(claim) if claim else None,
                                  str(template) if template else None))
    phase = str(dig(pod, "status", "phase") or "Pending")
    ready = any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
                for c in dig(pod, "status", "conditions") or ())
    held = device_plugin_gpus(pod)
    bridged = bool(held and dig(pod, "status", "extendedResourceClaimStatus"))
    node = dig(pod, "spec", "nodeName")
    fine = phase == "Succeeded" or (phase == "Running" and ready)
    return PodState(namespace, name, str(meta.get("uid") or ""), key, phase, ready,
                    node if isinstance(node, str) else None, tuple(claims),
                    0 if bridged else held, bridged, None if fine else pod,
                    device_plugin_names(pod) if held else ())


def claim_state(claim: Mapping[str, Any]) -> ClaimState:
    meta = as_mapping(claim.get("metadata"))
    results = dig(claim, "status", "allocation", "devices", "results") or ()
    devices = tuple((str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
                    for r in results if isinstance(r, Mapping))
    reserved = frozenset(str(v) for r in dig(claim, "status", "reservedFor") or ()
                         if isinstance(r, Mapping) for v in (r.get("uid"), r.get("name")) if v)
    bridge = as_mapping(meta.get("annotations")).get(
        "resource.kubernetes.io/extended-resource-claim") == "true"
    return ClaimState(str(meta.get("namespace") or ""), str(meta.get("name") or ""), devices,
                      reserved, bridge, None if devices else claim)


def keys_on_device_plugin(obj: Mapping[str, Any]) -> list[str]:
    """What in a quota, Kueue ClusterQueue, Karpenter NodePool or PrometheusRule still keys on
    device-plugin GPUs; empty for anything else."""

    kind = obj.get("kind")
    if kind == "ResourceQuota":
        return [f"hard {q.key}" for q in quota_keys(obj) if q.device.is_nvidia_device_plugin]
    if kind == "ClusterQueue":
        return sorted({f"covers {r}" for g in dig(obj, "spec", "resourceGroups") or ()
                       if isinstance(g, Mapping) for r in g.get("coveredResources") or ()
                       if is_device_plugin_resource(str(r))})
    if kind == "NodePool":
        return [f"limit {k}" for k in as_mapping(dig(obj, "spec", "limits"))
                if is_device_plugin_resource(str(k))]
    if kind == "PrometheusRule":
        # Imported only for one: it loads every preflight check (gpudra.preflight.cluster).
        from gpudra.preflight.cluster.monitoring import gpu_metric_rules

        return [f"rule {r} reads device-plugin GPU metrics" for r in gpu_metric_rules(obj)]
    return []


def read_cluster(cluster: Cluster, table: WorkloadTable,
                 on_page: ProgressHook | None = None) -> ClusterState:
    """Read what verify judges. Raises gpudra.cluster.ClusterError when the cluster cannot be
    reached at all; what one resource type could not give is an input error in the state."""

    state = ClusterState()

    def keep_pod(pod: Mapping[str, Any], read: PodRead) -> None:
        # Most pods of a cluster hold no GPU: what decides that is read first, and the pod's
        # record made only for those kept (100,000 records cost a tenth of verify's time).
        owner = read.owner
        if owner is not None and owner[0] == "DaemonSet":
            node = dig(pod, "spec", "nodeName")
            if isinstance(node, str) and node:
                namespace = str(as_mapping(pod.get("metadata")).get("namespace") or "")
                state.daemonset_nodes[(namespace, owner[1])].add(node)
        claims = dig(pod, "spec", "resourceClaims")
        if read.device_plugin_gpus or (claims and any(isinstance(e, Mapping) for e in claims)):
            record = pod_state(pod)
            state.pods[record.owner].append(record)

    source = ClusterSource(cluster, table, on_page, command="verify", on_pod=keep_pod)
    daemonsets = []
    for item in source.items():
        if isinstance(item, (InputError, NotRead)):
            state.errors.append(item if isinstance(item, InputError) else
                                InputError(None, item.message, object=item.object))
            continue
        if not isinstance(item, ClusterObject):
            continue
        data = item.data
        kind = item.kind
        if item.group == "resource.k8s.io":
            _keep_dra_object(state, kind, data)
            continue
        if kind == "Node":
            state.nodes.append(_small_node(data))
            continue
        if kind == "DaemonSet":
            daemonsets.append(data)
        if keys_on_device_plugin(data):
            state.keyed_objects.append(data)
            continue
        if not _may_use_gpus(data, item.group, kind):
            continue
        use = read_object(table, item.group, kind, data, strays=False)
        if use.device_plugin or use.dra:
            state.workloads.append(item)
    state.plugin_daemonsets = device_plugin_daemonsets(daemonsets)
    state.read = source.stats.objects
    _read_scheduling_events(cluster, state, on_page)
    if cluster.target.list_namespace is not None:
        _read_other_namespaces_claims(cluster, state, on_page)
    else:
        from gpudra.verify.guarded import read_guard

        state.guard = read_guard(cluster, on_page)
    return state


def _read_other_namespaces_claims(cluster: Cluster, state: ClusterState,
                                  on_page: ProgressHook | None) -> None:
    """Under -n the explanations still need every device that is taken: claims of other
    namespaces hold devices on the same nodes. They are read cluster-wide and kept for their
    allocations only; a refused read is not an input error (the namespace's own verdicts stand),
    it is said where free devices are counted."""

    read = next(r for r in OTHERS if r.resource == "resourceclaims")
    claims = cluster.resource(read.group, read.resource, read.versions)
    if claims is None:
        return
    before = len(cluster.errors)
    for page in cluster.list(claims, namespace=None, on_page=on_page):
        for claim in page:
            record = claim_state(claim)
            key = (record.namespace, record.name)
            if record.allocated and key not in state.claims:
                state.claims[key] = replace(record, data=None)
    problems = cluster.errors[before:]
    if problems:
        state.other_claims_unread = "; ".join(problem_message(p) for p in problems)


_NVIDIA_KEY, _CLAIMS_KEY = b'"nvidia.com/', b'"resourceClaims"'


def _may_use_gpus(data: Mapping[str, Any], group: str, kind: str) -> bool:
    """False only when read_object would find no GPU use: a device-plugin request is a key
    that starts with `nvidia.com/` and a claim a pod spec's `resourceClaims` key, and neither
    is anywhere in the object (an operator's own DRA field aside). The object as JSON,
    searched in C, tells that for most of a cluster's workloads (none use GPUs) in a fraction
    of what reading their pod specs costs. True when the data is not JSON: then read_object
    decides."""
    import orjson  # a dependency; also what the cluster layer parses with

    if (group, kind) in OPERATOR_DRA_FIELDS:
        return True
    try:
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return True
    return _NVIDIA_KEY in text or _CLAIMS_KEY in text


def _keep_dra_object(state: ClusterState, kind: str, data: Mapping[str, Any]) -> None:
    if kind == "ResourceClaim":
        record = claim_state(data)
        state.claims[(record.namespace, record.name)] = record
    elif kind == "ResourceClaimTemplate":
        state.templates.append(data)
    elif kind == "DeviceClass":
        state.classes.append(data)
    elif kind == "ResourceSlice":
        state.slices.append(data)


def _read_scheduling_events(cluster: Cluster, state: ClusterState,
                            on_page: ProgressHook | None) -> None:
    """The scheduler's FailedScheduling events, which say why Pending pods wait."""
    events = cluster.resource(EVENTS.group, EVENTS.resource)
    if events is None:
        return
    before = len(cluster.errors)
    for page in cluster.list(events, field_selector="reason=FailedScheduling", on_page=on_page):
        for event in page:
            _keep_event(state.events, event)
    for problem in cluster.errors[before:]:
        state.errors.append(InputError(None, problem_message(problem),
                                       object=problem_subject(problem)))


def _keep_event(events: dict[tuple[str, str], str], event: Mapping[str, Any]) -> None:
    involved = as_mapping(event.get("involvedObject") or event.get("regarding"))
    if involved.get("kind") != "Pod":
        return
    key = (str(involved.get("namespace") or ""), str(involved.get("name") or ""))
    when = str(event.get("lastTimestamp") or event.get("eventTime")
               or dig(event, "series", "lastObservedTime") or "")
    message = " ".join(str(event.get("message") or event.get("note") or "").split())
    previous = events.get(key)
    if previous is None or when >= previous.split("\0", 1)[0]:
        events[key] = f"{when}\0{message}"


def event_message(state: ClusterState, pod: PodState) -> str | None:
    found = state.events.get((pod.namespace, pod.name))
    return found.split("\0", 1)[1] if found else None


def _small_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """A Node with what verify and plan read: name, labels, allocatable."""
    meta = as_mapping(node.get("metadata"))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": meta.get("name"), "labels": dict(as_mapping(meta.get("labels")))},
            "spec": {"taints": list(dig(node, "spec", "taints") or ())},
            "status": {"allocatable": dict(as_mapping(dig(node, "status", "allocatable"))),
                       "capacity": dict(as_mapping(dig(node, "status", "capacity")))}}
