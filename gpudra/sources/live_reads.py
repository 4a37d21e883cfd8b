"""What the cluster commands read: one `Read` per list (group, resource, why, which commands
need it), in the order the cluster source reads them. `gpudra rbac` derives its ClusterRole from
these, and the cluster source lists exactly these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.workloads import BUILTIN_KINDS


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
    without: str = ""            # what an audit lacks when it cannot be read (cluster-scoped)
    # The commands that read it only for notes: refused (403), it is not read, whatever the
    # scope, and `without` says what their notes lack; never an input error.
    notes_only: frozenset[str] = frozenset()


CORE_WORKLOADS = ("StatefulSet", "DaemonSet", "Deployment")
_WORKLOADS = frozenset({"audit", "plan", "export", "preflight", "verify", "cutover"})
_LIVE = frozenset({"audit", "plan", "preflight", "verify", "cutover"})
_DRA = ("v1", "v1beta2", "v1beta1")
_NOTES = frozenset({"cutover"})  # read for cutover's per-wave notes only
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
         commands=frozenset({"audit", "plan", "export", "verify", "cutover"})),
)
NODES = Read("", "nodes", "GPU capacity, labels, taints, kubelet and runtime versions",
             commands=_LIVE | {"export"},
             without="GPU801 (nodes that serve GPUs twice) and GPU803 (device-plugin GPUs "
                     "held per node)")
RESOURCESLICES = Read("resource.k8s.io", "resourceslices", "devices the DRA driver publishes",
                      _DRA, commands=_LIVE, without="GPU801 (nodes that serve GPUs twice)")
OTHERS = (
    NODES,
    RESOURCESLICES,
    Read("resource.k8s.io", "deviceclasses", "DRA device classes", _DRA, commands=_LIVE,
         without="the DeviceClass lint (GPU6xx) and which class serves nvidia.com/gpu through "
                 "extendedResourceName"),
    Read("resource.k8s.io", "resourceclaims", "DRA claims; the bridge's claims (preflight)",
         _DRA, commands=frozenset({"audit", "plan", "export", "preflight", "verify",
                                   "cutover"})),
    Read("resource.k8s.io", "resourceclaimtemplates", "DRA claim templates", _DRA,
         commands=frozenset({"audit", "plan", "export", "verify", "cutover"})),
    Read("", "resourcequotas", "quotas on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight", "export", "verify", "cutover"})),
    Read("", "limitranges", "limit ranges on nvidia.com/gpu", commands=frozenset({"audit"})),
    Read("monitoring.coreos.com", "prometheusrules", "alerts on nvidia_com_gpu metrics",
         commands=frozenset({"audit", "preflight", "verify"})),
    Read("kueue.x-k8s.io", "clusterqueues", "Kueue quotas on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight", "verify", "cutover"}),
         without="GPU204 (Kueue quota on nvidia.com/gpu)"),
    Read("karpenter.sh", "nodepools", "Karpenter limits on nvidia.com/gpu",
         commands=frozenset({"audit", "preflight", "verify", "cutover"}),
         without="GPU205 (Karpenter limits on nvidia.com/gpu)"),
    # cutover's notes on what the bridge changes around the pods (gpudra.cutover.bridge_context)
    Read("nvidia.com", "clusterpolicies", "GPU Operator device-plugin stack (the DRA driver's "
         "path per pool)", commands=_NOTES, notes_only=_NOTES,
         without="the GPU Operator note (its ClusterPolicy's device plugin)"),
    Read("kueue.x-k8s.io", "resourceflavors", "which Kueue flavors (and so which "
         "ClusterQueues) stand for each pool's nodes", commands=_NOTES, notes_only=_NOTES,
         without="which ClusterQueues stand for each wave's nodes"),
    Read("cluster.x-k8s.io", "machinedeployments", "Cluster API node groups: "
         "cluster-autoscaler's minimum size (scale from zero)", commands=_NOTES,
         notes_only=_NOTES, without="the minimum sizes of Cluster API MachineDeployments "
                                    "(which pools scale from zero)"),
    Read("cluster.x-k8s.io", "machinesets", "Cluster API node groups: a node's MachineSet and "
         "its MachineDeployment", commands=_NOTES, notes_only=_NOTES,
         without="each Cluster API node's MachineSet (which pools scale from zero)"),
    Read("cluster.x-k8s.io", "machinepools", "Cluster API node groups: cluster-autoscaler's "
         "minimum size (scale from zero)", commands=_NOTES, notes_only=_NOTES,
         without="the minimum sizes of Cluster API MachinePools (which pools scale from "
                 "zero)"),
)


# The ConfigMap a device-plugin DaemonSet mounts, by name: its sharing config (GPU111).
DEVICE_PLUGIN_CONFIG = Read("", "configmaps", "the device plugin's sharing config (the "
                            "ConfigMaps its DaemonSet mounts, by name)",
                            commands=frozenset({"audit"}), verbs=("get",))

# Read by verify only, with a field selector: why the scheduler left a pod Pending.
EVENTS = Read("", "events", "the scheduler's FailedScheduling events for Pending pods",
              commands=frozenset({"verify"}))

# Read by verify only, for the decommission gate: namespaces labelled as migrated that no
# binding of `gpudra guard`'s policy covers (a warning).
GUARD_READS = (
    Read("", "namespaces", "which namespaces are labelled gpudra.io/migrated (gpudra guard)",
         commands=frozenset({"verify"})),
    Read("admissionregistration.k8s.io", "validatingadmissionpolicies",
         "gpudra guard's policy", commands=frozenset({"verify"})),
    Read("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
         "which namespaces gpudra guard's binding covers", commands=frozenset({"verify"})),
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
                                                                         "export", "verify",
                                                                         "cutover"}),
                                                     kind=entry.kind))
    return tuple(reads.values())


def all_reads() -> tuple[Read, ...]:
    """Everything audit, plan and preflight read: what `gpudra rbac` grants."""
    return (PODS, REPLICASETS, JOBS, *TOP_LEVEL, *crd_reads(), *OTHERS, DEVICE_PLUGIN_CONFIG,
            EVENTS, *GUARD_READS, *PREFLIGHT_ONLY)
