"""The fleet a cutover plans: GPU nodes grouped into pools, and the GPU workloads with where
they may run.

Read from the live cluster (the cluster source, owner-resolved: each workload once, at its top
owner, with the replicas it runs) or from exported YAML (`--from FILE`: `kubectl get
nodes,deployments,statefulsets,jobs,cronjobs -A -o yaml`, ResourceSlices optional). Each workload
is converted once, in memory, with convert's planner (as `gpudra plan` does), so both sides of
every wave are checked by the plan engine on claims.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gpudra.cutover.eligibility import eligible
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.k8s.gpu_use import quota_keys, read_object
from gpudra.k8s.objects import as_mapping, dig, is_dns_label, is_dns_subdomain, is_label
from gpudra.results.vouches import VouchSet
from gpudra.k8s.workloads import PodSpecRef, WorkloadTable
from gpudra.k8s.gpu_use import device_plugin_total
from gpudra.k8s.pod_counts import pod_count
from gpudra.k8s.plugin_daemonsets import device_plugin_daemonsets

if TYPE_CHECKING:
    from gpudra.plan.demand import PodGroup

# Cloud node-pool labels, first found wins; else the GFD product label.
POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
               "karpenter.sh/nodepool", "kubernetes.azure.com/agentpool",
               "node.kubernetes.io/instance-type")
PRODUCT_LABEL = "nvidia.com/gpu.product"
ELIGIBLE_LABEL = "cutover.gpudra.io/eligible-"
# Set by the runbook with the DRA stack label: the wave that switched the node, so a re-run
# numbers its waves after the ones done (docs/cutover.md, "Running cutover again").
WAVE_LABEL = "gpudra.io/cutover-wave"
MAX_WAVE = 100_000  # more waves than nodes any cluster has: a larger label value is not ours
_PLACEMENT = ("nodeSelector", "affinity", "tolerations")
_BATCH = frozenset({"Job", "CronJob", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob",
                    "PaddleJob", "TrainJob", "RayJob", "Workflow", "VolcanoJob"})
RISK_NAMES = ("batch (Job, CronJob)", "several replicas", "StatefulSet or singleton")


@dataclass(frozen=True)
class Node:
    name: str
    pool: str
    labels: Mapping[str, str]
    gpus: int
    on_dra: bool          # publishes ResourceSlices and advertises no device-plugin GPUs
    data: Mapping[str, Any]
    # What the DRA driver publishes (or would): physical devices. `gpus` is what the device
    # plugin advertises, time-slicing replicas included (GFD's nvidia.com/gpu.replicas).
    devices: int = 0
    wave: int = 0         # the runbook wave that switched it (WAVE_LABEL), 0: none


@dataclass(frozen=True)
class Workload:
    kind: str
    name: str
    namespace: str
    pods: int
    gpus_per_pod: int
    risk: int                      # 0 batch, 1 several replicas, 2 StatefulSet or singleton
    on_claims: bool                # already converted (claims) in the cluster
    eligible: frozenset[str]       # GPU nodes its pods may run on
    original: Mapping[str, Any]    # as read (for the rollback and the wave's manifests)
    # the workload on claims (its pods pinned by `mark`, see waves.py), then its templates
    converted: tuple[Mapping[str, Any], ...]
    mark: str = ""                 # the node label that stands for `eligible`
    # Workloads of one shape (one pod template, the same claims, the same mark) are placed as
    # one by the checks: their pods are interchangeable. None: checked on its own.
    shape: str | None = None
    pod: Mapping[str, Any] | None = None  # its pinned pod spec, for a shape's stand-in
    # Why convert cannot move it (its controller reads the GPU limit convert removes): it
    # stays on the device plugin, where its pods keep needing room. None: it can move.
    stays: str | None = None

    @cached_property  # read a million times while waves are tried on a large fleet
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)

    @cached_property
    def label(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"

    @cached_property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True)
class Fleet:
    nodes: tuple[Node, ...]
    workloads: tuple[Workload, ...]
    slices: tuple[Mapping[str, Any], ...]
    classes: tuple[Mapping[str, Any], ...]
    pool_label: str | None
    unconvertible: tuple[str, ...] = ()   # workloads convert cannot move (blocked)
    node_marks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> marks
    target: TargetVersion = DEFAULT  # the release whose DRA CEL environment judges selectors
    # (namespace, label selector) of the device plugin's pods, from its DaemonSets: the runbook
    # waits for them to leave a node before the DRA kubelet plugin starts there
    plugin_pods: tuple[tuple[str, str], ...] = ()
    # ResourceQuotas that count device-plugin GPUs: converted in the waves of their namespace
    quotas: tuple[Mapping[str, Any], ...] = ()
    # (workload label, template name) of workloads on claims that name a ResourceClaimTemplate
    # the input does not hold: they cannot be placed, and capacity is not why
    missing_templates: tuple[tuple[str, str], ...] = ()
    # Why convert writes nothing for each of `unconvertible`, in the same order
    unconvertible_why: tuple[str, ...] = ()

    @property
    def waves_done(self) -> int:
        """The highest wave number of the nodes a runbook switched and that are on DRA now:
        a re-run numbers its waves from the next one, so they keep the first plan's numbers."""
        return max((n.wave for n in self.nodes if n.on_dra), default=0)

    def pools(self) -> dict[str, tuple[Node, ...]]:
        out: dict[str, list[Node]] = {}
        for node in self.nodes:
            out.setdefault(node.pool, []).append(node)
        return {name: tuple(nodes) for name, nodes in sorted(out.items())}


def build_fleet(objects: Iterable[Mapping[str, Any]], table: WorkloadTable,
                pool_label: str | None = None, target: TargetVersion = DEFAULT,
                vouches: VouchSet | None = None) -> Fleet:
    """Nodes, ResourceSlices, DeviceClasses and GPU workloads among plain objects. `vouches`:
    the kinds outside the controller registry that convert may move (.gpudra.yaml)."""
    from gpudra.convert.memory import in_memory_converter
    from gpudra.convert.planner import ConvertOptions
    from gpudra.plan.demand import extract_demand

    objects = list(objects)
    slices = tuple(o for o in objects if o.get("kind") == "ResourceSlice")
    classes = tuple(o for o in objects if o.get("kind") == "DeviceClass")
    templates = [o for o in objects if o.get("kind") == "ResourceClaimTemplate"]
    publishing = _devices_per_node(slices)
    nodes = tuple(sorted((n for n in (_node(o, publishing, pool_label) for o in objects
                                      if o.get("kind") == "Node") if n is not None),
                         key=lambda n: n.name))
    # Cluster state (read live or exported): a bare pod's nodeName is where the scheduler put
    # it, and the converted pod is created anew, as convert --from-cluster writes it.
    converter = in_memory_converter(ConvertOptions(target, vouches=vouches), table, objects,
                                    live=True)
    workloads: list[Workload] = []
    blocked: list[str] = []
    why: list[str] = []
    missing: list[tuple[str, str]] = []
    allowed_nodes: dict[str, frozenset[str]] = {}  # placement constraints -> nodes
    marks: dict[frozenset[str], str] = {}
    for obj in objects:
        kind = str(obj.get("kind", ""))
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if kind in ("Node", "ResourceSlice", "DeviceClass", "ResourceClaimTemplate",
                    "ResourceClaim") or group == "resource.k8s.io":
            continue
        use = read_object(table, group, kind, obj, strays=False)
        if not (use.device_plugin or use.dra):
            continue
        label = f"{dig(obj, 'metadata', 'namespace') or ''}/{kind}/{dig(obj, 'metadata', 'name')}"
        if use.dra:
            absent = _missing_templates(obj, group, kind, table, templates)
            if absent:
                missing += [(label, name) for name in absent]
                continue
        converted = [dict(obj), *_own_templates(obj, templates)] if use.dra else converter(obj)
        stays = None
        if not converted and use.device_plugin:
            # Its pods still need device-plugin GPUs where they may run: they are placed as
            # the plain pods they are (one Deployment of each GPU pod template).
            stays = blocked_reason(obj, table, target, vouches)
            converted = _as_plain_pods(obj, group, kind, table, converter) if stays else None
        if not converted:
            blocked.append(label)
            why.append(unconvertible_reason(obj, table, target, vouches))
            continue
        demand = extract_demand(converted, table)
        if not demand.workloads:
            blocked.append(label)
            why.append("its converted pods ask for no device to place")
            continue
        # A workload that stays is placed as one Deployment per GPU pod template: all count.
        groups = [g for w in demand.workloads for g in w.groups] if stays \
            else demand.workloads[0].groups
        pods = sum(g.pods or 0 for g in groups)
        per_pod = max((sum(r.alternatives[0].count for c in g.claims if c.spec
                           for r in c.spec.requests) for g in groups), default=0)
        specs = [p.spec.data for p in use.pods]  # table.pod_specs of obj, as read_object read it
        allowed = _allowed_nodes(specs, nodes, allowed_nodes)
        mark = marks.setdefault(allowed, f"{ELIGIBLE_LABEL}{len(marks)}")
        main, *rest = converted
        pinned, pinned_specs = _pinned(main, mark, table)
        if stays:
            rest = [_pinned(o, mark, table)[0] if o.get("kind") == "Deployment" else o
                    for o in rest]
            # placed as plain pods of another kind: its own kind's pod specs, as read
            pinned_specs = [p.data for p in table.pod_specs(group, kind, pinned)]
        claimed = [p for p in pinned_specs if p.get("resourceClaims")]
        shape, pod = _pod_shape(groups, claimed, mark)
        if stays:
            shape, pod = None, None
        workloads.append(Workload(kind, str(dig(obj, "metadata", "name")),
                                  str(dig(obj, "metadata", "namespace") or ""), pods, per_pod,
                                  _risk(kind, pods), use.dra, allowed, obj,
                                  (pinned, *rest), mark, shape, pod, stays))
    node_marks = {n.name: tuple(m for allowed, m in marks.items() if n.name in allowed)
                  for n in nodes}
    # The plan engine places greedily, in the order it is given: one canonical order makes a
    # file plan what the cluster it was exported from plans, whatever order each lists in.
    workloads.sort(key=lambda w: w.label)
    return Fleet(nodes, tuple(workloads), slices, classes, pool_label, tuple(blocked),
                 node_marks, target, plugin_pods(objects), device_plugin_quotas(objects),
                 tuple(missing), tuple(why))


def blocked_reason(obj: Mapping[str, Any], table: WorkloadTable, target: TargetVersion,
                   vouches: VouchSet | None = None) -> str | None:
    """Why convert blocks `obj` (a controller that reads the GPU limit it would remove), or
    None when convert leaves it for another reason (nothing to convert)."""
    from gpudra.convert.memory import convert_result
    from gpudra.convert.planner import ConvertOptions

    result = convert_result(ConvertOptions(target, vouches=vouches), table, obj)
    return result.reason if result is not None and result.strategy == "blocked" else None


def unconvertible_reason(obj: Mapping[str, Any], table: WorkloadTable,
                         target: TargetVersion, vouches: VouchSet | None = None) -> str:
    """Why convert writes no claims for a workload that asks for device-plugin GPUs."""
    from gpudra.convert.memory import convert_result
    from gpudra.convert.planner import ConvertOptions

    result = convert_result(ConvertOptions(target, vouches=vouches), table, obj)
    if result is None:
        return "convert does not read this object"
    if result.reason:
        return str(result.reason)
    return f"convert leaves it as it is (strategy {result.strategy})"


def _as_plain_pods(obj: Mapping[str, Any], group: str, kind: str, table: WorkloadTable,
                   converter: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]] | None]
                   ) -> Sequence[Mapping[str, Any]] | None:
    """A workload convert cannot move, as one Deployment per GPU pod template (the first named
    as it is, the others `<name>-<n>`, in its namespace), converted in memory: what its pods
    ask, for the plan engine to place while it stays on the device plugin. None when there is
    no such template or one does not convert."""

    specs = [ref for ref in table.pod_specs(group, kind, obj)
             if any(device_plugin_total(dig(c.data, "resources", "limits"))
                    for c in ref.containers)]
    out: list[Mapping[str, Any]] = []
    for index, ref in enumerate(specs):
        pods, _ = pod_count(kind, obj, ref.path)
        name = str(dig(obj, "metadata", "name")) + (f"-{index}" if index else "")
        labels = {"gpudra.io/stays": name}
        plain = {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": name, "namespace": dig(obj, "metadata", "namespace")},
                 "spec": {"replicas": 1 if pods is None else pods,
                          "selector": {"matchLabels": labels},
                          "template": {"metadata": {"labels": labels},
                                       "spec": _plain_pod_spec(ref)}}}
        converted = converter(plain)
        if not converted:
            return None
        out += converted
    return out or None


def _plain_pod_spec(ref: PodSpecRef) -> dict[str, Any]:
    """A pod spec of the containers a workload's pod template holds wherever its kind keeps
    them (KServe's `model`, say), with its node constraints."""
    spec: dict[str, Any] = {k: copy.deepcopy(ref.data[k]) for k in _PLACEMENT if k in ref.data}
    for key, init in (("containers", False), ("initContainers", True)):
        found = [{"name": f"c{index}", **copy.deepcopy(dict(c.data))}
                 for index, c in enumerate(ref.containers) if c.init is init]
        if found:
            spec[key] = found
    return spec


def device_plugin_quotas(objects: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The ResourceQuotas with a key on an NVIDIA device-plugin resource
    (`requests.nvidia.com/gpu`, MIG forms), each with a valid namespace and name."""
    return tuple(o for o in objects if o.get("kind") == "ResourceQuota"
                 and o.get("apiVersion") == "v1"
                 and isinstance(dig(o, "metadata", "namespace"), str)
                 and isinstance(dig(o, "metadata", "name"), str)
                 and any(q.device.is_nvidia_device_plugin for q in quota_keys(o)))


def plugin_pods(objects: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """(namespace, label selector) of each device-plugin DaemonSet's pods, as kubectl's -l
    takes it: its `spec.selector.matchLabels` (a selector with expressions is left out: the
    runbook then has no wait for its pods)."""

    found: list[tuple[str, str]] = []
    daemonsets = device_plugin_daemonsets([o for o in objects if o.get("kind") == "DaemonSet"])
    for daemonset in daemonsets:
        selector = as_mapping(dig(daemonset, "spec", "selector"))
        labels = as_mapping(selector.get("matchLabels"))
        namespace = dig(daemonset, "metadata", "namespace")
        if (not labels or selector.get("matchExpressions") or not is_dns_label(namespace)
                or not all(is_label(k, v) for k, v in labels.items())):
            continue
        found.append((namespace, ",".join(f"{k}={v}" for k, v in sorted(labels.items()))))
    return tuple(sorted(set(found)))



def _devices_per_node(slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many devices the ResourceSlices publish on each node."""
    publishing: dict[str, int] = {}
    for piece in slices:
        if dig(piece, "spec", "nodeName") and dig(piece, "spec", "devices"):
            node_name = str(dig(piece, "spec", "nodeName"))
            publishing[node_name] = publishing.get(node_name, 0) + len(
                dig(piece, "spec", "devices"))
    return publishing


def _allowed_nodes(specs: list[Mapping[str, Any]], nodes: tuple[Node, ...],
                   cache: dict[str, frozenset[str]]) -> frozenset[str]:
    """The nodes every pod spec may run on, computed once per set of placement constraints."""
    # The key only finds a result computed before: repr tells apart what JSON would (and
    # constraints written in another key order are merely computed again), at a fraction of
    # json.dumps's cost.
    constraints = repr([[s.get(k) for k in _PLACEMENT] for s in specs])
    allowed = cache.get(constraints)
    if allowed is None:
        allowed = cache[constraints] = frozenset(
            n.name for n in nodes if all(eligible(s, n.data) for s in specs))
    return allowed


def _pod_shape(groups: Sequence[PodGroup], claimed: list[Mapping[str, Any]], mark: str
               ) -> tuple[str | None, Mapping[str, Any] | None]:
    """(shape, pod) of a workload whose pods are all alike and claim nothing shared: pods of
    one shape are placed alike; (None, None) for any other."""
    if len(groups) == 1 and len(claimed) == 1 and groups[0].pods and all(
            c.shared is None for c in groups[0].claims):
        pod = claimed[0]
        shape = json.dumps([mark, [(c.name, repr(c.spec)) for c in groups[0].claims],
                            [e.get("name") for e in pod.get("resourceClaims") or ()],
                            [ctr.get("resources") for ctr in pod.get("containers") or ()]],
                           sort_keys=True, default=str)
        return shape, pod
    return None, None


def _pinned(obj: Mapping[str, Any], mark: str, table: WorkloadTable
            ) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """The object with every pod spec's node constraints replaced by the mark's nodeSelector:
    the plan engine honours nodeSelector, so the nodes a workload may use (its nodeSelector,
    required affinity and tolerations, judged here) carry the mark. Also its pod specs."""
    pinned = _copied(obj)
    group = str(pinned.get("apiVersion", "")).rpartition("/")[0]
    specs = [spec.data for spec in table.pod_specs(group, str(pinned.get("kind", "")), pinned)]
    for spec in specs:
        if isinstance(spec, dict):
            spec["nodeSelector"] = {mark: "true"}
            spec.pop("affinity", None)
    return pinned, specs


def _copied(data: Any) -> Any:
    """A deep copy of parsed YAML or JSON (mappings, lists, scalars), a few times faster than
    copy.deepcopy, which a fleet of 10,000 workloads felt; anything else is deep-copied."""
    if isinstance(data, Mapping):
        return {k: _copied(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copied(v) for v in data]
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    return copy.deepcopy(data)


def _missing_templates(obj: Mapping[str, Any], group: str, kind: str, table: WorkloadTable,
                       templates: list[Mapping[str, Any]]) -> list[str]:
    """The ResourceClaimTemplates `obj`'s pods name that are not in its namespace."""
    namespace = dig(obj, "metadata", "namespace")
    held = {dig(t, "metadata", "name") for t in templates
            if dig(t, "metadata", "namespace") == namespace}
    named = [entry.get("resourceClaimTemplateName")
             for spec in table.pod_specs(group, kind, obj)
             for entry in _as_list(spec.data.get("resourceClaims"))
             if isinstance(entry, Mapping)]
    return sorted({str(n) for n in named if isinstance(n, str) and n and n not in held})


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _own_templates(obj: Mapping[str, Any], templates: list[Mapping[str, Any]]
                   ) -> list[Mapping[str, Any]]:
    namespace = dig(obj, "metadata", "namespace")
    return [t for t in templates if dig(t, "metadata", "namespace") == namespace]


def _risk(kind: str, pods: int) -> int:
    if kind in _BATCH:
        return 0
    if kind != "StatefulSet" and pods > 1:
        return 1
    return 2


def _node(obj: Mapping[str, Any], publishing: Mapping[str, int], pool_label: str | None
          ) -> Node | None:

    meta = as_mapping(obj.get("metadata"))
    name = meta.get("name")
    if not is_dns_subdomain(name):
        # No API server holds such a node; from a file it is only a way into the runbook's
        # shell lines (`--all` would be an option of kubectl label).
        return None
    labels = {str(k): str(v) for k, v in as_mapping(meta.get("labels")).items()}
    advertised = device_plugin_total(dig(obj, "status", "allocatable"))
    counted = labels.get("nvidia.com/gpu.count", "")
    gpus = advertised or publishing.get(name, 0) or (int(counted) if _digits(counted) else 0)
    if not gpus and name not in publishing:
        return None  # not a GPU node
    pool = next((labels[k] for k in ((pool_label,) if pool_label else POOL_LABELS)
                 if k and k in labels), None) or labels.get(PRODUCT_LABEL) or "(no pool label)"
    replicas = labels.get("nvidia.com/gpu.replicas", "")
    shared = int(replicas) if _digits(replicas) and int(replicas) > 1 else 1
    devices = publishing.get(name) or (gpus // shared if advertised else gpus)
    wave = labels.get(WAVE_LABEL, "")
    done = int(wave) if _digits(wave) and len(wave) <= 6 and int(wave) <= MAX_WAVE else 0
    return Node(name, pool, labels, gpus, name in publishing and not advertised,
                _copied(obj), devices, done)


def _digits(text: str) -> bool:
    """ASCII digits only: str.isdigit() is true of '²', which int() refuses."""
    return text.isascii() and text.isdigit()
