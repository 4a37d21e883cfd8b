"""A live cluster as an audit source: read-only, paged, owner-aware.

What is read, and in which order (pages are processed as they arrive, never held):

1. Pods. A pod that a controller owns is not audited itself: its controller's pod template is.
   Per owner the source counts running pods, and per node the pods that hold device-plugin
   GPUs. Bare pods (no controller, or a controller gpudra does not read) are audited as pods.
2. ReplicaSets and Jobs, to know their owners (Pod -> ReplicaSet -> Deployment, Pod -> Job ->
   CronJob or JobSet). Those without an owner are audited as workloads of their own.
3. Top-level workloads: Deployments, StatefulSets, DaemonSets, CronJobs, ReplicationControllers
   and the GPU CRDs of the workload table whose API the cluster serves. Each is audited once,
   with its replicas, running pods, the nodes where its pods hold device-plugin GPUs, and the
   tool that manages its manifest (gpudra.managed).
4. Nodes (with the device-plugin GPU holders counted in step 1), DRA objects, quotas, limit
   ranges, alerting rules, Kueue ClusterQueues and Karpenter NodePools.

A resource type the server does not serve is skipped quietly; one that cannot be read (403,
repeated 5xx) becomes an input error naming the verb, resource and group, and the rest goes on.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpudra.gpu_use import device_plugin_total
from gpudra.managed import managed_by
from gpudra.model import ClusterInfo, InputError
from gpudra.objects import ClusterObject, as_mapping, dig
from gpudra.sources import Item, ScanStats
from gpudra.workloads import BUILTIN_KINDS, WorkloadTable

OwnerKey = tuple[str, str, str]  # (namespace, kind, name)


@dataclass(frozen=True, slots=True)
class Read:
    """One resource type a command reads; `gpudra rbac` grants exactly these."""

    group: str
    resource: str
    why: str
    versions: tuple[str, ...] | None = None  # preferred first; None: the group's preferred one
    commands: frozenset[str] = frozenset({"audit", "plan", "preflight"})
    verbs: tuple[str, ...] = ("get", "list")
    names: tuple[str, ...] = ()  # only these objects (RBAC resourceNames; `get` only)
    kind: str | None = None      # a CRD's kind: discovery gives its real plural


_CORE_WORKLOADS = ("StatefulSet", "DaemonSet", "Deployment")
_WORKLOADS = frozenset({"audit", "plan", "export", "preflight"})
_DRA = ("v1", "v1beta2", "v1beta1")
PODS = Read("", "pods", "owner resolution, running pods, device-plugin GPUs held per node",
            commands=_WORKLOADS)
REPLICASETS = Read("apps", "replicasets", "Pod -> ReplicaSet -> Deployment",
                   commands=_WORKLOADS)
JOBS = Read("batch", "jobs", "Pod -> Job -> CronJob / JobSet; Jobs of their own",
            commands=_WORKLOADS)
TOP_LEVEL = (
    Read("apps", "deployments", "pod templates", commands=_WORKLOADS),
    Read("apps", "statefulsets", "pod templates", commands=_WORKLOADS),
    Read("apps", "daemonsets", "pod templates; the device-plugin and DRA driver DaemonSets",
         commands=_WORKLOADS),
    Read("batch", "cronjobs", "pod templates", commands=_WORKLOADS),
    Read("", "replicationcontrollers", "pod templates",
         commands=frozenset({"audit", "plan", "export"})),
)
NODES = Read("", "nodes", "GPU capacity, labels, kubelet and runtime versions")
RESOURCESLICES = Read("resource.k8s.io", "resourceslices", "devices the DRA driver publishes",
                      _DRA)
OTHERS = (
    NODES,
    RESOURCESLICES,
    Read("resource.k8s.io", "deviceclasses", "DRA device classes", _DRA),
    Read("resource.k8s.io", "resourceclaims", "DRA claims", _DRA,
         commands=frozenset({"audit", "plan", "export"})),
    Read("resource.k8s.io", "resourceclaimtemplates", "DRA claim templates", _DRA,
         commands=frozenset({"audit", "plan", "export"})),
    Read("", "resourcequotas", "quotas on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight", "export"})),
    Read("", "limitranges", "limit ranges on nvidia.com/gpu", commands=frozenset({"audit"})),
    Read("monitoring.coreos.com", "prometheusrules", "alerts on nvidia_com_gpu metrics",
         commands=frozenset({"audit", "preflight"})),
    Read("kueue.x-k8s.io", "clusterqueues", "Kueue quotas on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight"})),
    Read("karpenter.sh", "nodepools", "Karpenter limits on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight"})),
)


# Read by preflight only (the GPU Operator's stack, Kueue's device-class mappings).
PREFLIGHT_ONLY = (
    Read("nvidia.com", "clusterpolicies", "GPU Operator device-plugin stack",
         commands=frozenset({"preflight"})),
    Read("nvidia.com", "gpuclusters", "GPU Operator DRA stack", commands=frozenset({"preflight"})),
    Read("", "configmaps", "Kueue's configuration (deviceClassMappings)",
         commands=frozenset({"preflight"}), verbs=("get",), names=("kueue-manager-config",)),
)


def crd_reads(table: Iterable[Any] = BUILTIN_KINDS) -> tuple[Read, ...]:
    """The GPU CRDs of the workload table (their plural is the lower-case kind plus `s`)."""
    reads: dict[tuple[str, str], Read] = {}
    for entry in table:
        if entry.group in ("", "apps", "batch", "*"):
            continue
        plural = f"{entry.kind.lower()}s"
        reads.setdefault((entry.group, plural), Read(entry.group, plural, "GPU workload CRD",
                                                     commands=frozenset({"audit", "plan",
                                                                         "export"}),
                                                     kind=entry.kind))
    return tuple(reads.values())


def all_reads() -> tuple[Read, ...]:
    """Everything audit, plan and preflight read: what `gpudra rbac` grants."""
    return (PODS, REPLICASETS, JOBS, *TOP_LEVEL, *crd_reads(), *OTHERS, *PREFLIGHT_ONLY)


class ClusterReader(Protocol):
    """What the source needs of a cluster connection (gpudra.cluster.Cluster)."""

    def resource(self, group: str, name: str, version: Any = None) -> Any: ...

    def list(self, resource: Any, **kwargs: Any) -> Iterable[list[dict[str, Any]]]: ...

    @property
    def errors(self) -> tuple[Any, ...]: ...


@dataclass
class ClusterSource:
    """The current kube context (or `--context`, `-n`) as a source for `command` (audit,
    plan or export): only the resource types that command needs are read."""

    cluster: ClusterReader
    table: WorkloadTable = field(default_factory=WorkloadTable)
    on_page: Callable[[Any], None] | None = None
    command: str = "audit"
    kind: str = "cluster"
    stats: ScanStats = field(default_factory=ScanStats)

    def items(self) -> Iterator[Item]:
        owners = _Owners()
        crds = self._resolve_crds()
        read_kinds = {*_CORE_WORKLOADS, "CronJob", "ReplicationController", "ReplicaSet", "Job",
                      *(kind for kind, _ in crds)}
        for pod in self._list(PODS):
            if not owners.add_pod(pod, read_kinds):
                yield ClusterObject(pod, owners.info_for_pod(pod))
        for read, kind in ((REPLICASETS, "ReplicaSet"), (JOBS, "Job")):
            for obj in self._list(read):
                if owners.add_intermediate(obj, kind, read_kinds):
                    yield ClusterObject(obj, owners.info(obj))
        # Workloads another workload controls (a LeaderWorkerSet's StatefulSet, an
        # InferenceService's Deployment, a RayJob's RayCluster) are the controller's business:
        # they only add their pods to it. Top-level ones wait until every such child is known.
        top: list[dict[str, Any]] = []
        resources = [self._resource(read) for read in self._reads(TOP_LEVEL)]
        resources += [resource for _, resource in crds]
        for resource in resources:
            for obj in self._pages(resource):
                if owners.add_intermediate(obj, str(obj.get("kind", "")), read_kinds):
                    top.append(obj)
        for obj in top:
            yield ClusterObject(obj, owners.info(obj))
        del top
        for read in self._reads(OTHERS):
            for obj in self._list(read):
                info = owners.node_info(obj) if read.resource == "nodes" else None
                yield ClusterObject(obj, info)
        for problem in self.cluster.errors:
            yield InputError(None, _problem_message(problem), object=_problem_subject(problem))

    def finish(self, ctx: Any) -> None:
        """Nothing beyond the objects: every cluster finding comes from a rule."""

    def _reads(self, reads: Iterable[Read]) -> list[Read]:
        return [r for r in reads if self.command in r.commands]

    def _resolve_crds(self) -> list[tuple[str, Any]]:
        """(kind, resource type) of every workload CRD the cluster serves; kinds configured
        without a group are looked up in every served group."""
        found: list[tuple[str, Any]] = []
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

    def _resource(self, read: Read) -> Any:
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

    def _pages(self, resource: Any) -> Iterator[dict[str, Any]]:
        if resource is None:
            return  # not served: nothing to read, nothing wrong
        for page in self.cluster.list(resource, on_page=self.on_page):
            self.stats.objects += len(page)
            yield from page


@dataclass
class _Owners:
    """Who owns what, with running-pod counts and GPU holders, kept as small indexes."""

    running: Counter = field(default_factory=Counter)              # owner key -> pods
    nodes: dict[OwnerKey, set[str]] = field(default_factory=lambda: defaultdict(set))
    holders: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    children: dict[OwnerKey, list[OwnerKey]] = field(default_factory=lambda: defaultdict(list))

    def add_pod(self, pod: Mapping[str, Any], top_kinds: set[str]) -> bool:
        """Count the pod; True when its controller is of a kind gpudra reads (the pod is then
        audited through its controller, not itself)."""
        namespace = str(dig(pod, "metadata", "namespace") or "")
        owner = _controller(pod)
        key = (namespace, owner[0], owner[1]) if owner else ("", "Pod", _name(pod))
        running = dig(pod, "status", "phase") == "Running"
        if running:
            self.running[key] += 1
        held = _device_plugin_gpus(pod)
        node = dig(pod, "spec", "nodeName")
        if held and isinstance(node, str) and dig(pod, "status", "phase") in ("Running", "Pending"):
            self.holders[node].append(f"{namespace}/{_name(pod)} ({held})")
            self.nodes[key].add(node)
        return owner is not None and owner[0] in top_kinds and bool(owner[1])

    def add_intermediate(self, obj: Mapping[str, Any], kind: str, read_kinds: set[str]) -> bool:
        """Record an object's controller when gpudra reads that kind (its pods then count
        for the controller); True when it has none that is read: audit it itself."""
        namespace = str(dig(obj, "metadata", "namespace") or "")
        owner = _controller(obj)
        if owner is None or owner[0] not in read_kinds or not owner[1]:
            return True
        key = (namespace, kind, _name(obj))
        parent = (namespace, owner[0], owner[1])
        self.children[parent].append(key)
        return False

    def info(self, obj: Mapping[str, Any]) -> ClusterInfo:
        key = (str(dig(obj, "metadata", "namespace") or ""), str(obj.get("kind", "")), _name(obj))
        running, nodes = 0, set()
        pending, seen = [key], set()
        while pending:  # the controller, its children, their children (a JobSet's Jobs)
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            running += self.running[current]
            nodes |= self.nodes.get(current, set())
            pending += self.children.get(current, ())
        return ClusterInfo(_replicas(obj), running, tuple(sorted(nodes)),
                           managed_by(as_mapping(obj.get("metadata"))))

    def info_for_pod(self, pod: Mapping[str, Any]) -> ClusterInfo:
        running = 1 if dig(pod, "status", "phase") == "Running" else 0
        node = dig(pod, "spec", "nodeName")
        nodes = (node,) if _device_plugin_gpus(pod) and isinstance(node, str) else ()
        return ClusterInfo(None, running, nodes, managed_by(as_mapping(pod.get("metadata"))))

    def node_info(self, node: Mapping[str, Any]) -> ClusterInfo:
        holders = self.holders.get(_name(node), [])
        return ClusterInfo(None, 0, (), managed_by(as_mapping(node.get("metadata"))),
                           tuple(holders))


def _controller(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    refs = dig(obj, "metadata", "ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def _name(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def _device_plugin_gpus(pod: Mapping[str, Any]) -> int:
    """NVIDIA device-plugin devices a pod's containers hold (init containers: the largest)."""
    def held(containers: Any) -> list[int]:
        return [device_plugin_total(dig(c, "resources", "limits"))
                for c in (containers if isinstance(containers, list) else ())]

    spec = as_mapping(pod.get("spec"))
    # As the scheduler counts: app containers together, or the largest init container.
    return max(sum(held(spec.get("containers"))), max(held(spec.get("initContainers")), default=0))


def _replicas(obj: Mapping[str, Any]) -> int | None:
    kind = obj.get("kind")
    if kind == "DaemonSet":
        value = dig(obj, "status", "desiredNumberScheduled")
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"):
        value = dig(obj, "spec", "replicas")
        value = 1 if value is None else value
    elif kind == "Job":
        value = dig(obj, "spec", "parallelism")
    else:
        value = None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _problem_subject(problem: Any) -> str:
    subject = getattr(problem, "subject", None) or str(problem)
    scope = getattr(problem, "scope", "")
    return f"{subject} ({scope})" if scope else subject


def _problem_message(problem: Any) -> str:
    verb = getattr(problem, "verb", "list")
    status = getattr(problem, "status", None)
    reason = getattr(problem, "reason", "")
    message = getattr(problem, "message", "") or reason
    code = f"{status} {reason}".strip() if status else reason
    return f"cannot {verb}: {message}" + (f" ({code})" if code and code not in message else "")
