"""What a switch changes around the pods, judged once per cluster and said per wave: Kueue's
admission and quota, node autoscalers that scale pools from zero, ResourceQuotas on
`requests.nvidia.com/gpu`, and the GPU Operator's ClusterPolicy.

Each note is one line naming the fact it rests on (docs/facts.md, "The bridge, its neighbours
and the strategy"). Notes depend on the strategy: `rewrite` (each moving workload rewritten to
claims in its wave) or `bridge` (pods stay unchanged and DRA serves their `nvidia.com/gpu`
through a DeviceClass's `extendedResourceName`, KEP-5004).

Read from what cutover already reads (the cluster source, or a `--from` export): Deployments
(cluster-autoscaler, Karpenter, Kueue and the GPU Operator are found by their images),
ClusterQueues and ResourceFlavors, NodePools, Cluster API MachineDeployments, MachineSets and
MachinePools, ClusterPolicies (each through its typed reader, gpudra.sources.shapes),
ResourceQuotas and the fleet's nodes (their Cluster API annotations name their node group).

Which pools scale from zero, as far as the cluster says: a cluster-autoscaler Deployment's
`--nodes=0:MAX:NAME`; a Cluster API node group's minimum-size annotation (nodes name their
MachineSet or MachinePool, a MachineSet its MachineDeployment); every Karpenter NodePool (none
has a minimum). A managed pool (GKE, EKS, AKS) keeps its minimum in the cloud's API, which no
node label shows: gpudra cannot tell, and says so only where a visible autoscaler might.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpudra.cutover.pools import Fleet, Workload
from gpudra.cutover.waves import Wave
from gpudra.k8s.devices import GPU, DeviceKind, classify
from gpudra.dra.strategy_advice import FleetMix
from gpudra.k8s.gpu_use import quota_keys
from gpudra.k8s.object_fields import (
    Container,
    containers,
    image_repository,
    image_tag,
    workload_name,
)
from gpudra.k8s.objects import as_list, as_mapping, dig

REWRITE = "rewrite"  # as convert and cutover spell it: --strategy rewrite|bridge
BRIDGE = "bridge"
STRATEGIES = (REWRITE, BRIDGE)

NODEPOOL_LABEL = "karpenter.sh/nodepool"  # Karpenter labels each node with its NodePool
GPU_QUOTA = f"requests.{GPU}"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"  # GFD: time-slicing or MPS replicas per GPU
PRODUCT_LABEL = "nvidia.com/gpu.product"    # GFD: `<model>-MIG-<profile>` on MIG single nodes

# The sources each note names (docs/facts.md holds them with their commits).
KUEUE_ER = ("KueueDRAIntegrationExtendedResource, beta and on by default from Kueue v0.19: "
            "kueue pkg/dra/extended_resources.go")
KUEUE_CLAIMS = "kueue pkg/controller/core/workload_controller.go"
# The issue that tracked the mapping in cluster-autoscaler's simulation; the resolver reached
# cluster-autoscaler 1.35.0 (docs/facts.md), while a group at zero is planned from a template.
CA_ISSUE = "kubernetes/autoscaler #8742, DeviceClassResolver: in cluster-autoscaler 1.35.0+"
CAPI_SOURCE = "kubernetes/autoscaler cloudprovider/clusterapi"
# Cluster API node groups (kubernetes-sigs/cluster-api api/core/v1beta2/common_types.go; the
# cluster-autoscaler's clusterapi provider reads the sizes and capacities, CAPI_SOURCE)
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
DRA_DRIVER_CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/dra-driver"
OWNER_KIND = "cluster.x-k8s.io/owner-kind"       # on each node: its Machine's controller kind
OWNER_NAME = "cluster.x-k8s.io/owner-name"       # ... and name
CLUSTER_NAMESPACE = "cluster.x-k8s.io/cluster-namespace"  # ... and the Machine's namespace
DEPLOYMENT_NAME = "cluster.x-k8s.io/deployment-name"      # on a MachineSet: its deployment
CAPI_GROUP = "cluster.x-k8s.io"
CAPI_KINDS = ("MachineDeployment", "MachineSet", "MachinePool")
_SIZE = re.compile(r"[0-9]{1,9}")
KARPENTER_ISSUE = "kubernetes-sigs/karpenter #3231, open"
QUOTA_SOURCE = "kubernetes v1.37.2 pkg/quota/v1/evaluator/core/resource_claims.go"
OPERATOR_SOURCE = ("gpu-operator v26.7.0 controllers/gpucluster_controller.go, "
                   "deployments/gpu-operator/templates/validations.yaml")
OPERATOR_CLASSES = "NVIDIA/gpu-operator PR #2859, open at the last record"
MAX_NAMED = 5


@dataclass(frozen=True)
class KueueFound:
    """Kueue in the cluster: its controller (and version, from the image tag), the
    ClusterQueues whose quota covers `nvidia.com/gpu`, and, where their ResourceFlavors were
    read, which flavors' node labels stand for which nodes."""

    controller: str | None
    version: str | None
    gpu_queues: tuple[str, ...]
    # GPU ClusterQueue -> the flavors it gives `nvidia.com/gpu` quota in
    gpu_flavors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ResourceFlavor name -> its nodeLabels (a flavor without labels stands for every node)
    flavor_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeGroup:
    """A Cluster API node group cluster-autoscaler sizes: both size annotations integers."""

    label: str              # `MachineDeployment namespace/name`
    min_size: int
    dra_driver: str | None  # the capacity annotation that gives a group at zero DRA devices


@dataclass(frozen=True)
class Autoscaling:
    """Node autoscalers that add GPU nodes for pending pods."""

    cluster_autoscaler: str | None = None  # `namespace/name` of its Deployment
    # node groups it may scale from zero: `--nodes=0:MAX:NAME` -> NAME
    from_zero: tuple[str, ...] = ()
    discovers: bool = False        # --node-group-auto-discovery: minimum sizes not visible
    karpenter: str | None = None   # its controller, or "the NodePool API" when only that shows
    nodepools: tuple[str, ...] = ()  # Karpenter launches nodes of any NodePool from none
    # node name -> its Cluster API node group, for the nodes of groups with size annotations
    node_groups: Mapping[str, NodeGroup] = field(default_factory=dict)


@dataclass(frozen=True)
class BridgeContext:
    """What the cluster runs around the GPU pods; empty when nothing of it is found."""

    kueue: KueueFound | None = None
    autoscaling: Autoscaling = Autoscaling()
    # namespace -> `namespace/name` of its ResourceQuotas with a `requests.nvidia.com/gpu` key
    gpu_quotas: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cluster_policy: str | None = None  # a ClusterPolicy that runs the device plugin


def read_context(objects: Iterable[Mapping[str, Any]], fleet: Fleet) -> BridgeContext:
    """The context among the objects cutover read (already judged by their typed readers)."""
    objects = list(objects)
    deployments = [o for o in objects if o.get("kind") == "Deployment"
                   and str(o.get("apiVersion", "")).startswith("apps/")]
    return BridgeContext(_kueue(objects, deployments), _autoscaling(objects, deployments),
                         _gpu_quotas(fleet.quotas), _cluster_policy(objects))


def _of_kind(objects: Iterable[Mapping[str, Any]], group: str, kind: str
             ) -> list[Mapping[str, Any]]:
    return [o for o in objects if o.get("kind") == kind
            and str(o.get("apiVersion", "")).rpartition("/")[0] == group]


def _image_named(deployments: Iterable[Mapping[str, Any]], test: Callable[[str], bool]
                 ) -> tuple[Mapping[str, Any], Container] | None:
    """The first Deployment with a container whose image repository passes `test`."""
    for deploy in deployments:
        for ctr in containers(deploy):
            if test(image_repository(ctr.image).lower()):
                return deploy, ctr
    return None


def _last(repository: str) -> str:
    return repository.rsplit("/", 1)[-1]


def _kueue(objects: list[Mapping[str, Any]], deployments: list[Mapping[str, Any]]
           ) -> KueueFound | None:
    queues = _of_kind(objects, "kueue.x-k8s.io", "ClusterQueue")
    found = _image_named(deployments, lambda repo: _last(repo).startswith("kueue"))
    if found is None and not queues:
        return None
    gpu_queues = sorted(str(dig(q, "metadata", "name")) for q in queues
                        if GPU in _covered(q))
    flavors = {str(dig(f, "metadata", "name")): {str(k): str(v) for k, v in
                                                 as_mapping(dig(f, "spec", "nodeLabels")).items()}
               for f in _of_kind(objects, "kueue.x-k8s.io", "ResourceFlavor")}
    gpu_flavors = {str(dig(q, "metadata", "name")): _gpu_flavors(q) for q in queues
                   if GPU in _covered(q)}
    deploy, ctr = found if found is not None else (None, None)
    return KueueFound(workload_name(deploy) if deploy is not None else None,
                      image_tag(ctr.image) if ctr is not None else None, tuple(gpu_queues),
                      gpu_flavors, flavors)


def _gpu_flavors(queue: Mapping[str, Any]) -> tuple[str, ...]:
    """The flavors a ClusterQueue gives `nvidia.com/gpu` quota in."""
    return tuple(sorted({str(as_mapping(flavor).get("name"))
                         for group in as_list(dig(queue, "spec", "resourceGroups"))
                         for flavor in as_list(as_mapping(group).get("flavors"))
                         if any(as_mapping(r).get("name") == GPU
                                for r in as_list(as_mapping(flavor).get("resources")))}))


def _covered(queue: Mapping[str, Any]) -> set[str]:
    return {str(name) for group in as_list(dig(queue, "spec", "resourceGroups"))
            for name in as_list(as_mapping(group).get("coveredResources"))}


def _autoscaling(objects: list[Mapping[str, Any]], deployments: list[Mapping[str, Any]]
                 ) -> Autoscaling:
    autoscaler = _image_named(deployments,
                              lambda repo: _last(repo).startswith("cluster-autoscaler"))
    from_zero: list[str] = []
    discovers = False
    name = None
    if autoscaler is not None:
        deploy, ctr = autoscaler
        name = workload_name(deploy)
        # `--nodes=MIN:MAX:NAME` or `--nodes MIN:MAX:NAME`, once per node group; shell-wrapped
        # command lines are split into words too (as object_fields.flag_value does)
        words = [w for word in ctr.command + ctr.args for w in word.split()]
        for index, word in enumerate(words):
            flag, equals, value = word.partition("=")
            if flag == "--nodes":
                value = value if equals else (words[index + 1] if index + 1 < len(words)
                                              else "")
                low, _, rest = value.partition(":")
                group = rest.partition(":")[2]
                if low == "0" and group:
                    from_zero.append(group)
            elif flag == "--node-group-auto-discovery":
                discovers = True
    karpenter = _image_named(deployments, lambda repo: "karpenter" in repo)
    pools = sorted(str(dig(p, "metadata", "name"))
                   for p in _of_kind(objects, "karpenter.sh", "NodePool"))
    running = workload_name(karpenter[0]) if karpenter is not None else \
        ("the NodePool API" if pools else None)
    return Autoscaling(name, tuple(sorted(set(from_zero))), discovers, running, tuple(pools),
                       _node_groups(objects))


def _node_groups(objects: list[Mapping[str, Any]]) -> dict[str, NodeGroup]:
    """Each node's Cluster API node group, as cluster-autoscaler's clusterapi provider sees it:
    the node names its Machine's owner (a MachineSet or a MachinePool); a MachineSet of a
    MachineDeployment is sized through the deployment. Groups without both size annotations
    are not node groups to it, and their nodes are left out."""
    groups = {(kind, str(dig(o, "metadata", "namespace")), str(dig(o, "metadata", "name"))):
              as_mapping(o.get("metadata"))
              for kind in CAPI_KINDS for o in _of_kind(objects, CAPI_GROUP, kind)}
    if not groups:
        return {}
    found: dict[str, NodeGroup] = {}
    for node in _of_kind(objects, "", "Node"):
        notes = as_mapping(dig(node, "metadata", "annotations"))
        key = (str(notes.get(OWNER_KIND)), str(notes.get(CLUSTER_NAMESPACE)),
               str(notes.get(OWNER_NAME)))
        if key[0] == "MachineSet" and key in groups:
            deployment = ("MachineDeployment", key[1],
                          str(as_mapping(groups[key].get("labels")).get(DEPLOYMENT_NAME)))
            key = deployment if deployment in groups else key
        group = _node_group(key, groups[key]) if key in groups else None
        if group is not None:
            found[str(dig(node, "metadata", "name"))] = group
    return found


def _node_group(key: tuple[str, str, str], meta: Mapping[str, Any]) -> NodeGroup | None:
    notes = as_mapping(meta.get("annotations"))
    low, high = notes.get(MIN_SIZE), notes.get(MAX_SIZE)
    if not all(isinstance(v, str) and _SIZE.fullmatch(v) for v in (low, high)):
        return None
    if int(str(low)) > int(str(high)):  # cluster-autoscaler rejects such a group (CAPI_SOURCE)
        return None
    driver = notes.get(DRA_DRIVER_CAPACITY)
    return NodeGroup(f"{key[0]} {key[1]}/{key[2]}", int(str(low)),
                     driver if isinstance(driver, str) and driver else None)


def _gpu_quotas(quotas: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for quota in quotas:
        if any(key.key == GPU_QUOTA for key in quota_keys(quota)):
            namespace = str(dig(quota, "metadata", "namespace"))
            found.setdefault(namespace, []).append(
                f"{namespace}/{dig(quota, 'metadata', 'name')}")
    return {ns: tuple(sorted(names)) for ns, names in sorted(found.items())}


def _cluster_policy(objects: list[Mapping[str, Any]]) -> str | None:
    for policy in _of_kind(objects, "nvidia.com", "ClusterPolicy"):
        # The device plugin is on unless the policy turns it off (the CRD's default).
        if dig(policy, "spec", "devicePlugin", "enabled") is not False:
            return str(dig(policy, "metadata", "name"))
    return None


# --- per wave --------------------------------------------------------------------------------

def wave_notes(context: BridgeContext, wave: Wave, fleet: Fleet, strategy: str = REWRITE,
               first_switch: bool = False) -> tuple[str, ...]:
    """The lines to say in `wave`: each about something this wave changes around its pods.
    `first_switch`: the first wave that switches nodes (cluster-wide set-up is said there)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    notes: list[str] = []
    if wave.nodes and first_switch and context.cluster_policy is not None:
        notes.append(_operator_note(context.cluster_policy, strategy))
    if context.kueue is not None:
        notes += _kueue_notes(context.kueue, wave, fleet, strategy)
    if wave.nodes:
        notes += _autoscaler_notes(context.autoscaling, wave, fleet, strategy)
    if wave.nodes and strategy == BRIDGE:
        notes += _quota_notes(context.gpu_quotas, wave, fleet)
    return tuple(notes)


def _operator_note(policy: str, strategy: str) -> str:
    note = (f"GPU Operator: ClusterPolicy {policy} runs the device plugin, and the Operator's "
            f"GPUCluster DRA mode cannot run beside a ClusterPolicy ({OPERATOR_SOURCE}): the "
            "DRA driver comes from its standalone chart on the switched nodes, and the device "
            "plugin leaves each node through the label nvidia.com/gpu.deploy.device-plugin="
            "false (the steps below)")
    if strategy == BRIDGE:
        note += (f"; the Operator's DeviceClasses have no extendedResourceName "
                 f"({OPERATOR_CLASSES}), so the mapping class is the one gpudra writes")
    return note


def _kueue_notes(kueue: KueueFound, wave: Wave, fleet: Fleet, strategy: str) -> list[str]:
    who = "Kueue" + (f" {kueue.version}" if kueue.version else "")
    queues = (f" (ClusterQueues covering {GPU}: {_named(kueue.gpu_queues)})"
              if kueue.gpu_queues else "")
    if strategy == BRIDGE:
        if not wave.nodes:
            return []
        queues = _queues_of_nodes(kueue, wave, fleet) or queues
        return [f"{who}: the pods the bridge serves on these nodes are charged under the "
                f"deviceClassMappings name of the mapping class, else under {GPU}{queues} "
                f"({KUEUE_ER}); before v0.19 that gate is alpha and off"]
    direct = [w.label for w in wave.moved if _names_claim(w)]
    if not direct:
        return []
    return [f"{who} admits no workload whose pods name a ResourceClaim directly, only "
            f"ResourceClaimTemplates ({KUEUE_CLAIMS}): {len(direct)} of this wave's workloads "
            f"share one and stay pending under Kueue: {_named(direct)}"]


def _queues_of_nodes(kueue: KueueFound, wave: Wave, fleet: Fleet) -> str:
    """Which GPU ClusterQueues stand for the wave's nodes, through the ResourceFlavors whose
    node labels some of them carry; "" when the flavors do not tell (none read, or a queue's
    GPU flavor was not read)."""
    named = {flavor for flavors in kueue.gpu_flavors.values() for flavor in flavors}
    if not named or not named <= kueue.flavor_labels.keys():
        return ""
    switching = frozenset(wave.nodes)
    labels = [n.labels for n in fleet.nodes if n.name in switching]
    flavors = sorted(name for name in named
                     if any(all(node.get(k) == v for k, v in kueue.flavor_labels[name].items())
                            for node in labels))
    queues = [queue for queue, own in sorted(kueue.gpu_flavors.items())
              if set(own) & set(flavors)]
    if not queues:
        return f" (no ClusterQueue's {GPU} ResourceFlavor names these nodes' labels)"
    return (f" (ClusterQueues covering {GPU} on these nodes: {_named(queues)}, through "
            f"ResourceFlavor {_named(flavors)})")


def _names_claim(workload: Workload) -> bool:
    """Whether the converted workload names a ResourceClaim (not a template) in a pod spec."""
    return any(obj.get("kind") == "ResourceClaim" for obj in workload.converted[1:]) or \
        _has_key(workload.converted[0] if workload.converted else {}, "resourceClaimName")


def _has_key(value: Any, key: str) -> bool:
    return any(mapping.get(key) for mapping in _mappings(value))


def _mappings(value: Any, descend: Callable[[Any, Any], bool] = lambda key, item: True
              ) -> Iterator[Mapping[Any, Any]]:
    """Every mapping in an object's data, depth first, without recursion (a manifest may nest
    deeply); `descend(key, item)` says whether to look inside a mapping's `item`."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, Mapping):
            yield current
            pending += [item for key, item in current.items() if descend(key, item)]
        elif isinstance(current, list):
            pending += current


def _autoscaler_notes(scaling: Autoscaling, wave: Wave, fleet: Fleet, strategy: str
                      ) -> list[str]:
    notes: list[str] = []
    pools = {unit.partition("#")[0] for unit in wave.units}
    # the Cluster API node groups of the wave's nodes: their minimum sizes are visible
    sized = sorted({group for name in wave.nodes
                    if (group := scaling.node_groups.get(name)) is not None},
                   key=lambda group: group.label)
    zero = [group for group in sized if group.min_size == 0]
    if zero:
        who = (f"cluster-autoscaler {scaling.cluster_autoscaler}"
               if scaling.cluster_autoscaler is not None else "cluster-autoscaler")
        what = (f"Cluster API node group {_named([g.label for g in zero])} scales from zero "
                f"({MIN_SIZE}: 0)")
        bare = [g.label for g in zero if g.dra_driver is None]
        if bare:
            what += (f"; at zero its template has DRA devices only where the group names the "
                     f"driver ({DRA_DRIVER_CAPACITY}, {CAPI_SOURCE}), which {_named(bare)} "
                     "does not")
        notes += _scale_up_note(who, what, wave, strategy)
    if scaling.cluster_autoscaler is not None:
        groups = [g for g in scaling.from_zero if any(_names_pool(g, p) for p in pools)]
        what = (f"node group {_named(groups)} scales from zero (--nodes=0:...)" if groups else
                "its node groups are auto-discovered, so their minimum sizes are not visible"
                if scaling.discovers and not sized else "")
        if what:
            notes += _scale_up_note(f"cluster-autoscaler {scaling.cluster_autoscaler}", what,
                                    wave, strategy)
    if scaling.karpenter is not None:
        names = set(scaling.nodepools)
        hit = sorted({fleet_node.labels.get(NODEPOOL_LABEL, "") for fleet_node in fleet.nodes
                      if fleet_node.name in wave.nodes} & names | (pools & names))
        if hit and strategy == BRIDGE:
            notes.append(f"Karpenter ({scaling.karpenter}): NodePool {_named(hit)} launches "
                         f"nodes from none and does not model the bridge ({KARPENTER_ISSUE}): "
                         "a pending unchanged pod gets no node from it; keep capacity in the "
                         "pool during the switch")
        elif hit and wave.moved:
            notes.append(f"Karpenter ({scaling.karpenter}): NodePool {_named(hit)} launches no "
                         "node for pods with claims by default (--ignore-dra-requests, "
                         "preflight CLUSTER013)")
    return notes


def _scale_up_note(who: str, what: str, wave: Wave, strategy: str) -> list[str]:
    if strategy == BRIDGE:
        return [f"{who}: {what}; cluster-autoscaler maps {GPU} to the mapping class ({CA_ISSUE}) "
                "but plans a group at zero from its template alone: keep the group's minimum "
                "above 0 until verify shows its unchanged pods placed"]
    if wave.moved:
        return [f"{who}: {what}; a group at zero scales up for claims only from node templates "
                "that describe the DRA devices (preflight CLUSTER012)"]
    return []


def _names_pool(group: str, pool: str) -> bool:
    """Whether a cluster-autoscaler node group is the pool: the same name, or the pool's words
    in a row among the group's (an EKS group `eks-gpu-a-1a2b3c` for the node group `gpu-a`);
    a pool `a` is not the group `eks-gpu-a100-1a2b`."""
    words, wanted = _WORDS.split(group), _WORDS.split(pool)
    return group == pool or any(words[i:i + len(wanted)] == wanted
                                for i in range(len(words) - len(wanted) + 1))


_WORDS = re.compile(r"[-_./:]")


def _quota_notes(quotas: Mapping[str, tuple[str, ...]], wave: Wave, fleet: Fleet) -> list[str]:
    """Quotas of the namespaces whose workloads may run on the wave's nodes."""
    switching = frozenset(wave.nodes)
    namespaces = {w.namespace for w in fleet.workloads if not w.on_claims
                  and not w.eligible.isdisjoint(switching)}
    named = [name for ns in sorted(namespaces) for name in quotas.get(ns, ())]
    if not named:
        return []
    return [f"ResourceQuota {_named(named)}: {GPU_QUOTA} keeps counting the pods the bridge "
            "serves on these nodes (the pod's request counts, and its scheduler-made claim "
            f"adds only what the pod does not count already: {QUOTA_SOURCE})"]


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


# --- the strategy's recommendation -----------------------------------------------------------

def fleet_mix(fleet: Fleet) -> FleetMix:
    """The fleet's workloads still on the device plugin, whole GPUs against MIG or shared: a
    workload is partial when it asks for a MIG profile or a shared name, or when a node it may
    run on shares its GPUs (GFD's replicas above 1) or is a MIG single-strategy node."""
    shared = {n.name for n in fleet.nodes if _shares(n.labels)}
    whole = partial = 0
    for workload in fleet.workloads:
        if workload.on_claims:
            continue
        kinds = {device.kind for name in _limit_names(workload.original)
                 if (device := classify(name)) is not None}
        if kinds & {DeviceKind.MIG, DeviceKind.SHARED} or not workload.eligible.isdisjoint(
                shared):
            partial += 1
        elif DeviceKind.GPU in kinds:
            whole += 1
    return FleetMix(whole, partial)


def _shares(labels: Mapping[str, str]) -> bool:
    replicas = labels.get(REPLICAS_LABEL, "")
    return (replicas.isascii() and replicas.isdigit() and int(replicas) > 1) or \
        "-MIG-" in labels.get(PRODUCT_LABEL, "")


def _limit_names(value: Any) -> set[str]:
    """Every resource name under a `limits` or `requests` mapping anywhere in the object."""
    names: set[str] = set()
    for mapping in _mappings(value, lambda key, item: not _resources(key, item)):
        for key, item in mapping.items():
            if _resources(key, item):
                names.update(str(name) for name in item)
    return names


def _resources(key: Any, item: Any) -> bool:
    return key in ("limits", "requests") and isinstance(item, Mapping)
