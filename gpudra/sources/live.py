"""A live cluster as an audit source: read-only, paged, owner-aware.

What is read, and in which order (pages are processed as they arrive, never held):

1. Pods. A pod that a controller owns is not audited itself: its controller's pod template is.
   Per owner the source counts running pods, pods the KEP-5004 bridge serves (their status
   has `extendedResourceClaimStatus`), and per node the pods that hold device-plugin GPUs.
   Bare pods (no controller, or a controller gpudra does not read) are audited as pods.
2. ReplicaSets and Jobs, to know their owners (Pod -> ReplicaSet -> Deployment, Pod -> Job ->
   CronJob or JobSet). Those without an owner are audited as workloads of their own.
3. Top-level workloads: Deployments, StatefulSets, DaemonSets, CronJobs, ReplicationControllers
   and the GPU CRDs of the workload table whose API the cluster serves. Each is audited once,
   with its replicas, running pods, the nodes where its pods hold device-plugin GPUs, and the
   tool that manages its manifest (gpudra.k8s.managed). A controller whose own controller is a Pod
   (a LeaderWorkerSet's worker StatefulSet, controlled by its group's leader pod) belongs to
   that pod's controller: Pod -> StatefulSet -> Pod -> StatefulSet -> LeaderWorkerSet.
4. Nodes (with the device-plugin GPU holders counted in step 1), DRA objects, quotas, limit
   ranges, alerting rules, Kueue ClusterQueues and Karpenter NodePools.

Objects that use GPUs and whose controller is never read although its kind was (a dangling
ownerReference: the ReplicaSet was deleted with `--cascade=orphan`) are audited at themselves
once everything is read: until then only their names are kept, and they are got again (`get`,
one request each) when their controller never showed. Where a kind between a
workload and its pods could not be read, its running pods are unknown (None), never 0.

A resource type the server does not serve is skipped quietly; one that cannot be read (403,
repeated 5xx) becomes an input error naming the verb, resource and group, and the rest goes on.
Under `-n NS`, a refused cluster-scoped read is what a namespaced Role allows, not an error:
it is reported once as `NotRead`, with what it would have added.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from gpudra.k8s.gpu_use import device_plugin_total, is_device_plugin_resource, read_object
from gpudra.k8s.managed import managed_by
from gpudra.results.model import ClusterInfo, InputError, NotRead
from gpudra.k8s.objects import ClusterObject, as_mapping, dig
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets
from gpudra.k8s.pod_counts import pods_at_once
from gpudra.sources import Item, ScanStats
from gpudra.sources.live_reads import (
    CORE_WORKLOADS,
    DEVICE_PLUGIN_CONFIG,
    JOBS,
    OTHERS,
    PODS,
    REPLICASETS,
    TOP_LEVEL,
    Read,
    all_reads,
    crd_reads,
)
from gpudra.k8s.workloads import WorkloadTable

if TYPE_CHECKING:  # the cluster client and msgspec's shapes load only when a cluster is read
    from gpudra.cluster.discovery import Versions
    from gpudra.cluster.listing import ProgressHook
    from gpudra.cluster.records import ResourceError, ResourceType
    from gpudra.sources.shapes import Pod, PodOutline

OwnerKey = tuple[str, str, str]  # (namespace, kind, name)
# The commands that judge objects field by field (placing claims, reading pod states): they
# read every object through its kind's typed reader (gpudra.sources.shapes) and leave out one
# that does not decode. The audit and export read objects as rules and convert do, tolerantly.
TYPED_COMMANDS = frozenset({"plan", "verify", "cutover"})


class ClusterReader(Protocol):
    """What the source needs of a cluster connection (gpudra.cluster.Cluster)."""

    def resource(self, group: str, name: str, version: Versions = None
                 ) -> ResourceType | None: ...

    def list(self, resource: ResourceType, *, on_page: ProgressHook | None = None
             ) -> Iterable[list[dict[str, Any]]]: ...

    @property
    def errors(self) -> tuple[ResourceError, ...]: ...


@dataclass
class ClusterSource:
    """The current kube context (or `--context`, `-n`) as a source for `command` (audit,
    plan or export): only the resource types that command needs are read."""

    cluster: ClusterReader
    table: WorkloadTable = field(default_factory=WorkloadTable)
    on_page: ProgressHook | None = None
    command: str = "audit"
    kind: str = "cluster"
    stats: ScanStats = field(default_factory=ScanStats)
    # Sees every pod as it is read, with what the source works out of it (verify keeps what
    # it judges; the source keeps no pod)
    on_pod: Callable[[Mapping[str, Any], PodRead], None] | None = None
    # Objects left out by the typed reader, reported once everything is read
    refused: list[InputError] = field(default_factory=list)
    # The objects were judged by their typed readers already (an export read as files, each
    # refusal naming its file and line): not judged twice
    judged: bool = False

    def items(self) -> Iterator[Item]:
        owners = _Owners(self.table)
        crds = self._resolve_crds()
        read_kinds = {*CORE_WORKLOADS, "CronJob", "ReplicationController", "ReplicaSet", "Job",
                      *(kind for kind, _ in crds)}
        pods = self._resource(PODS) if self.command in PODS.commands else None
        for pod, pod_read in self._pod_pages(pods, owners, read_kinds):
            if self.on_pod is not None:
                self.on_pod(pod, pod_read)
            if not owners.add_pod(pod, read_kinds, pods, pod_read):
                yield ClusterObject(pod, owners.info_for_pod(pod))
        # A controller may be controlled by a pod (a LeaderWorkerSet's worker StatefulSets):
        # from here on, Pod is a kind whose objects were read.
        read_kinds.add("Pod")
        for read, kind in ((REPLICASETS, "ReplicaSet"), (JOBS, "Job")):
            resource = self._resource(read) if self.command in read.commands else None
            for obj in self._pages(resource, owners):
                if owners.add_controlled(obj, kind, read_kinds, resource):
                    yield ClusterObject(obj, owners.info(obj))
        owners.prune()  # pods whose ReplicaSet or Job was read need not wait any longer
        # Workloads another workload controls (a LeaderWorkerSet's StatefulSet, an
        # InferenceService's Deployment, a RayJob's RayCluster) are the controller's business:
        # they only add their pods to it. Top-level ones wait until every such child is known.
        top: list[dict[str, Any]] = []
        resources = [self._resource(read) for read in self._reads(TOP_LEVEL)]
        resources += [resource for _, resource in crds]
        for resource in resources:
            for obj in self._pages(resource, owners):
                if owners.add_controlled(obj, str(obj.get("kind", "")), read_kinds, resource):
                    top.append(obj)
        for obj in top:
            yield ClusterObject(obj, owners.info(obj))
        yield from self._device_plugin_configs(top)
        del top
        yield from self._orphans(owners)
        for read in self._reads(OTHERS):
            for obj in self._list(read):
                info = owners.node_info(obj) if read.resource == "nodes" else None
                yield ClusterObject(obj, info)
        yield from self.refused
        self.refused.clear()
        namespaced_run = getattr(getattr(self.cluster, "target", None), "list_namespace", None)
        for problem in self.cluster.errors:
            notes_only = _refused_notes_read(problem, self.command)
            refused = _refused_cluster_read(problem) if namespaced_run else None
            if notes_only is not None:
                yield NotRead(problem_subject(problem), problem_message(problem), notes_only,
                              notes_only=True)
            elif refused is not None:
                yield NotRead(problem_subject(problem), problem_message(problem), refused)
            else:
                yield InputError(None, problem_message(problem),
                                 object=problem_subject(problem))

    def _device_plugin_configs(self, objects: list[dict[str, Any]]) -> Iterator[ClusterObject]:
        """The ConfigMaps the device-plugin DaemonSets mount (their time-slicing or MPS
        sharing), each got by name; a cluster's ConfigMaps are never listed."""
        get = getattr(self.cluster, "get", None)
        if self.command not in DEVICE_PLUGIN_CONFIG.commands or get is None:
            return
        daemonsets = device_plugin_daemonsets([o for o in objects if o.get("kind") == "DaemonSet"])
        wanted = sorted({(str(dig(d, "metadata", "namespace") or ""), str(name))
                         for d in daemonsets
                         for v in dig(d, "spec", "template", "spec", "volumes") or ()
                         if (name := dig(v, "configMap", "name"))})
        resource = self._resource(DEVICE_PLUGIN_CONFIG) if wanted else None
        for namespace, name in wanted if resource is not None else ():
            found = get(resource, name, namespace)
            if found is not None:
                self.stats.objects += 1
                yield ClusterObject(found, None)

    def _orphans(self, owners: _Owners) -> Iterator[ClusterObject]:
        """Objects whose controller is gone, got again by name (only they are: what waits for
        a controller is kept as its name), and audited at themselves when they use GPUs."""
        get = getattr(self.cluster, "get", None)
        if get is None:
            return
        for resource, namespace, name, gone in owners.orphans():
            obj = get(resource, name, namespace)
            if obj is None:
                continue  # deleted meanwhile
            self.stats.objects += 1
            if not self._well_formed(obj):
                continue
            if obj.get("kind") == "Pod":
                yield ClusterObject(obj, replace(owners.info_for_pod(obj), controller_gone=gone))
                continue
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            use = read_object(self.table, group, str(obj.get("kind", "")), obj, strays=False)
            if use.device_plugin or use.dra:
                yield ClusterObject(obj, replace(owners.info(obj), controller_gone=gone))

    @property
    def kubernetes_minor(self) -> int | None:
        """The cluster's release (1.<minor>), for rules whose truth depends on it."""
        version = getattr(self.cluster, "server_version", None)  # cached by discovery
        return None if version is None else int(version().minor)

    def _well_formed(self, obj: Mapping[str, Any]) -> bool:
        """True when `obj` decodes as its kind (always, for the commands that read objects
        tolerantly); else its input error is kept for the end of the items."""
        if self.command not in TYPED_COMMANDS or self.judged:
            return True
        from gpudra.sources.shapes import object_problem, refusal

        problem = object_problem(obj, self.table)
        if problem is None:
            return True
        self.refused.append(refusal(obj, problem))
        return False

    def _pod_pages(self, resource: ResourceType | None, owners: _Owners, read_kinds: set[str]
                   ) -> Iterator[tuple[dict[str, Any], PodRead]]:
        """Each pod with its PodRead. The typed commands decode every pod anyway (its typed
        check): its owner and GPUs are read from that decoding, which costs a third of reading
        them from the dicts again. A pod that holds no GPU, has no claims and is counted for a
        controller of `read_kinds` (most pods) has only its outline checked
        (shapes.PodOutline: all that is read of it), any other pod the whole Pod (issue 32:
        verify at most 1.1x the audit)."""
        if self.command not in TYPED_COMMANDS or self.judged:
            for pod in self._pages(resource, owners):
                yield pod, PodRead(controller_of(pod), device_plugin_gpus(pod))
            return
        from gpudra.sources.shapes import decoded_pod, outlined_pod, refusal

        for pod in self._pages(resource, owners, typed=False):
            outline = outlined_pod(pod)
            if outline is not None:
                read = _typed_pod_read(outline, pod)
                if not read.device_plugin_gpus and _controlled(read.owner, read_kinds) and \
                        not (outline.spec is not None and outline.spec.resourceClaims):
                    yield pod, read
                    continue
            # Not outlined (its whole check names the field), or more than the outline is read
            decoded, problem = decoded_pod(pod, self.table)
            if problem is not None:
                self.refused.append(refusal(pod, problem))
            elif decoded is not None:
                yield pod, _typed_pod_read(decoded, pod)
            else:  # well-formed, but not a core Pod (what a pods list should never hold)
                yield pod, PodRead(controller_of(pod), device_plugin_gpus(pod))

    def _reads(self, reads: Iterable[Read]) -> list[Read]:
        return [r for r in reads if self.command in r.commands]

    def _resolve_crds(self) -> list[tuple[str, ResourceType]]:
        """(kind, resource type) of every workload CRD the cluster serves; kinds configured
        without a group are looked up in every served group."""
        found: list[tuple[str, ResourceType]] = []
        discovery = getattr(self.cluster, "discovery", None)
        for read in self._reads(crd_reads(self.table.kinds)):
            resource = self._resource(read)
            if resource is not None:
                found.append((read.kind or "", resource))
        for entry in self.table.kinds:
            if entry.group == "*" and discovery is not None:
                for group in discovery.groups():
                    resource = discovery.find_kind(group, entry.kind)
                    if resource is not None:
                        found.append((entry.kind, resource))
        return found

    def _resource(self, read: Read) -> ResourceType | None:
        resource = self.cluster.resource(read.group, read.resource, read.versions)
        discovery = getattr(self.cluster, "discovery", None)
        if resource is None and read.kind and discovery is not None:
            # A plural that is not the kind plus "s": discovery knows the real one.
            resource = discovery.find_kind(read.group, read.kind)
        return resource

    def _list(self, read: Read) -> Iterator[dict[str, Any]]:
        if self.command not in read.commands:
            return
        yield from self._pages(self._resource(read))

    def _pages(self, resource: ResourceType | None, owners: _Owners | None = None, typed: bool = True
               ) -> Iterator[dict[str, Any]]:
        """The objects of one resource type; a list that fails is recorded in `owners`: the
        pods below that kind are then unknown, not absent. `typed=False`: the caller checks
        each object itself."""
        if resource is None:
            return  # not served: nothing to read, nothing wrong
        failed = len(self.cluster.errors)
        typed = typed and self.command in TYPED_COMMANDS and not self.judged
        for page in self.cluster.list(resource, on_page=self.on_page):
            self.stats.objects += len(page)
            yield from (obj for obj in page if self._well_formed(obj)) if typed else page
        if owners is not None and len(self.cluster.errors) > failed:
            owners.unreadable.add(str(getattr(resource, "kind", "")))


# The kinds between a workload and its pods: when one could not be read, its pods are unknown.
_BETWEEN: dict[str, frozenset[str]] = {
    "Deployment": frozenset({"ReplicaSet"}),
    "CronJob": frozenset({"Job"}),
    "JobSet": frozenset({"Job"}),
    "LeaderWorkerSet": frozenset({"StatefulSet"}),
    "InferenceService": frozenset({"Deployment", "ReplicaSet"}),
    "RayJob": frozenset({"RayCluster", "Job"}),
    "RayService": frozenset({"RayCluster"}),
}


@dataclass
class _Owners:
    """Who owns what, with running-pod counts and GPU holders, kept as small indexes."""

    table: WorkloadTable
    running: Counter[OwnerKey] = field(default_factory=Counter)    # owner key -> pods
    bridged: Counter[OwnerKey] = field(default_factory=Counter)    # owner key -> bridge pods
    nodes: dict[OwnerKey, set[str]] = field(default_factory=lambda: defaultdict(set))
    holders: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    children: dict[OwnerKey, list[OwnerKey]] = field(default_factory=lambda: defaultdict(list))
    # A pod's controller, for pods that turn out to control something (LWS leader pods).
    # Kept for every controlled pod, so small: "namespace/name" -> one shared key per owner.
    pod_controllers: dict[str, OwnerKey] = field(default_factory=dict)
    owner_keys: dict[OwnerKey, OwnerKey] = field(default_factory=dict)
    seen: set[OwnerKey] = field(default_factory=set)  # controllers read (leader pods too)
    # What waits for its controller, as (resource type, namespace, name): GPU pods, and every
    # ReplicaSet, Job or workload another one controls; got again if the controller never shows.
    waiting: dict[OwnerKey, list[tuple[ResourceType | None, str, str]]] = field(
        default_factory=lambda: defaultdict(list))
    unreadable: set[str] = field(default_factory=set)              # kinds whose list failed

    def add_pod(self, pod: Mapping[str, Any], top_kinds: set[str],
                resource: ResourceType | None = None,
                read: PodRead | None = None) -> bool:
        """Count the pod; True when its controller is of a kind gpudra reads (the pod is then
        audited through its controller, not itself). `read`: the pod's owner and GPUs when
        the caller has them."""
        namespace = str(dig(pod, "metadata", "namespace") or "")
        owner = controller_of(pod) if read is None else read.owner
        key = (namespace, owner[0], owner[1]) if owner else ("", "Pod", _name(pod))
        if dig(pod, "status", "phase") == "Running":
            self.running[key] += 1
        held = device_plugin_gpus(pod) if read is None else read.device_plugin_gpus
        if held and dig(pod, "status", "extendedResourceClaimStatus"):
            self.bridged[key] += 1  # DRA serves its nvidia.com/gpu: no device-plugin GPU held
        elif (holding := device_plugin_holding(pod, held)) is not None:
            node, held = holding
            self.holders[node].append(f"{namespace}/{_name(pod)} ({held})")
            self.nodes[key].add(node)
        controlled = _controlled(owner, top_kinds)
        if controlled:
            self.pod_controllers[f"{namespace}/{_name(pod)}"] = \
                self.owner_keys.setdefault(key, key)
            if held or dig(pod, "spec", "resourceClaims"):
                self.waiting[key].append((resource, namespace, _name(pod)))
        return controlled

    def add_controlled(self, obj: Mapping[str, Any], kind: str, read_kinds: set[str],
                       resource: ResourceType | None = None) -> bool:
        """Record an object's controller when gpudra reads that kind (its pods then count
        for the controller); True when it has none that is read: audit it itself."""
        namespace = str(dig(obj, "metadata", "namespace") or "")
        key = (namespace, kind, _name(obj))
        self.seen.add(key)
        owner = controller_of(obj)
        if owner is None or owner[0] not in read_kinds or not owner[1]:
            return True
        parent = (namespace, owner[0], owner[1])
        if owner[0] == "Pod":
            pod_parent = self.pod_controllers.get(f"{namespace}/{owner[1]}")
            if pod_parent is None:
                return True  # a bare or missing pod: nothing above it to report at
            self.children[pod_parent].append(parent)
            self.seen.add(parent)
        self.children[parent].append(key)
        self.waiting[parent].append((resource, namespace, key[2]))
        return False

    def prune(self) -> None:
        for key in [key for key in self.waiting if key in self.seen]:
            del self.waiting[key]

    def orphans(self) -> Iterator[tuple[ResourceType | None, str, str, str]]:
        """(resource type, namespace, name, `Kind/name` of the controller) of what waited for
        a controller that was never read although its kind was (a dangling ownerReference).
        Those below an unreadable kind are unknown, not orphans."""
        self.prune()
        for (_, kind, name), objects in self.waiting.items():
            if kind not in self.unreadable:
                yield from ((*waiting, f"{kind}/{name}") for waiting in objects)
        self.waiting.clear()

    def info(self, obj: Mapping[str, Any]) -> ClusterInfo:
        kind = str(obj.get("kind", ""))
        key = (str(dig(obj, "metadata", "namespace") or ""), kind, _name(obj))
        running, bridged, nodes = 0, 0, set()
        pending, seen = [key], set()
        while pending:  # the controller, its children, their children (a JobSet's Jobs)
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            running += self.running[current]
            bridged += self.bridged[current]
            nodes |= self.nodes.get(current, set())
            pending += self.children.get(current, ())
        unknown = "Pod" in self.unreadable or bool(_BETWEEN.get(kind, frozenset())
                                                   & self.unreadable)
        return ClusterInfo(_replicas(obj, self.table), None if unknown else running,
                           tuple(sorted(nodes)), managed_by(as_mapping(obj.get("metadata"))),
                           bridge_pods=bridged, members=frozenset(seen))

    def info_for_pod(self, pod: Mapping[str, Any]) -> ClusterInfo:
        running = 1 if dig(pod, "status", "phase") == "Running" else 0
        node = dig(pod, "spec", "nodeName")
        held = device_plugin_gpus(pod)
        bridged = held > 0 and bool(dig(pod, "status", "extendedResourceClaimStatus"))
        nodes = (node,) if held and not bridged and isinstance(node, str) else ()
        return ClusterInfo(None, running, nodes, managed_by(as_mapping(pod.get("metadata"))),
                           bridge_pods=int(bridged))

    def node_info(self, node: Mapping[str, Any]) -> ClusterInfo:
        holders = self.holders.get(_name(node), [])
        return ClusterInfo(None, 0, (), managed_by(as_mapping(node.get("metadata"))),
                           tuple(holders))


def _refused_cluster_read(problem: ResourceError) -> str | None:
    """What a refused (403) cluster-scoped read would have added, or None for any other
    problem (those stay input errors)."""
    if getattr(problem, "status", None) != 403 or getattr(problem, "namespace", None):
        return None
    for read in all_reads():
        if read.resource == getattr(problem, "resource", None) and \
                read.group == getattr(problem, "group", None) and read.without:
            return read.without
    return None


def _refused_notes_read(problem: ResourceError, command: str) -> str | None:
    """What `command`'s notes lack when a read it makes only for them was refused (403),
    in any scope; None for any other problem."""
    if getattr(problem, "status", None) != 403:
        return None
    for read in all_reads():
        if read.resource == getattr(problem, "resource", None) and \
                read.group == getattr(problem, "group", None) and command in read.notes_only:
            return read.without
    return None


@dataclass(frozen=True, slots=True)
class PodRead:
    """What the source works out of each pod once, for its indexes and for `on_pod`."""

    owner: tuple[str, str] | None  # (kind, name) of its controller
    device_plugin_gpus: int


def _controlled(owner: tuple[str, str] | None, kinds: set[str]) -> bool:
    """Whether a pod with this controller is counted for it rather than audited itself."""
    return owner is not None and owner[0] in kinds and bool(owner[1])


def _typed_pod_read(decoded: Pod | PodOutline, pod: Mapping[str, Any]) -> PodRead:
    """The PodRead of a pod that decoded as shapes.Pod or shapes.PodOutline, from the
    decoding: what controller_of and device_plugin_gpus give for the pod's dicts."""
    meta, spec = decoded.metadata, decoded.spec
    owner: tuple[str, str] | None = None
    for ref in (meta.ownerReferences or ()) if meta is not None else ():
        if ref.controller:
            if ref.kind is None or ref.name is None:
                # absent and null differ in the dicts (str(None) is "None"): read them there
                owner = controller_of(pod)
            else:
                owner = (ref.kind, ref.name)
            break
    if spec is None:
        return PodRead(owner, 0)
    # As the scheduler counts: app containers together, or the largest init container.
    # Plain loops: this runs for every pod of the cluster.
    app = init = 0
    for container in spec.containers or ():
        resources = container.resources
        if resources is not None and resources.limits:
            app += device_plugin_total(resources.limits)
    for container in spec.initContainers or ():
        resources = container.resources
        if resources is not None and resources.limits:
            init = max(init, device_plugin_total(resources.limits))
    return PodRead(owner, max(app, init))


def controller_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    refs = dig(obj, "metadata", "ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def _name(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def device_plugin_gpus(pod: Mapping[str, Any]) -> int:
    """NVIDIA device-plugin devices a pod's containers hold (init containers: the largest)."""
    spec = as_mapping(pod.get("spec"))
    # As the scheduler counts: app containers together, or the largest init container.
    return max(sum(map(device_plugin_total, _limits(spec.get("containers")))),
               max(map(device_plugin_total, _limits(spec.get("initContainers"))), default=0))


def device_plugin_names(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The device-plugin resources a pod's containers ask for (`nvidia.com/gpu`, a MIG
    profile's `nvidia.com/mig-1g.10gb`), sorted."""
    spec = as_mapping(pod.get("spec"))
    return tuple(sorted({name for field in ("containers", "initContainers")
                         for limits in _limits(spec.get(field)) if isinstance(limits, Mapping)
                         for name in limits
                         if isinstance(name, str) and is_device_plugin_resource(name)}))


def _limits(containers: Any) -> Iterator[Any]:
    """Each container's `resources.limits` (None where it has none)."""
    for container in containers if isinstance(containers, list) else ():
        yield dig(container, "resources", "limits")


def device_plugin_holding(pod: Mapping[str, Any], held: int | None = None
                          ) -> tuple[str, int] | None:
    """(node, GPUs) when the pod holds device-plugin GPUs on a node: bound, Running or
    Pending (its GPUs are the node's until it ends), and not served by the KEP-5004 bridge.
    `held`: the pod's device_plugin_gpus when the caller has it (not counted twice per pod)."""
    held = device_plugin_gpus(pod) if held is None else held
    node = dig(pod, "spec", "nodeName")
    if not held or not isinstance(node, str) or not node or \
            dig(pod, "status", "phase") not in ("Running", "Pending") or \
            dig(pod, "status", "extendedResourceClaimStatus"):
        return None
    return node, held


def _replicas(obj: Mapping[str, Any], table: WorkloadTable) -> int | None:
    kind = obj.get("kind")
    if kind == "DaemonSet":
        value = dig(obj, "status", "desiredNumberScheduled")
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"):
        value = dig(obj, "spec", "replicas")
        value = 1 if value is None else value
    elif kind == "Job":
        value = dig(obj, "spec", "parallelism")
    else:
        # CRDs: the pods all of its pod templates run at once, as plan counts them.
        value = pods_at_once(str(obj.get("apiVersion", "")).rpartition("/")[0], str(kind), obj,
                             table)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def problem_subject(problem: ResourceError) -> str:
    subject = getattr(problem, "subject", None) or str(problem)
    scope = getattr(problem, "scope", "")
    return f"{subject} ({scope})" if scope else subject


def problem_message(problem: ResourceError) -> str:
    verb = getattr(problem, "verb", "list")
    status = getattr(problem, "status", None)
    reason = getattr(problem, "reason", "")
    message = getattr(problem, "message", "") or reason
    code = f"{status} {reason}".strip() if status else reason
    return f"cannot {verb}: {message}" + (f" ({code})" if code and code not in message else "")
