"""CLUSTER004-006: is the NVIDIA DRA driver installed, publishing, and running?

Facts (docs/dra-reference.md section 7; facts-turn2 sections 3 and 9):
- Driver name `gpu.nvidia.com`; the chart (and the GPU Operator's GPUCluster) creates the
  DeviceClasses `gpu.nvidia.com` and `mig.nvidia.com` when GPU allocation is on.
- Chart v0.4.1: GPU allocation stays off unless `gpuResourcesEnabledOverride=true`
  (`templates/validation.yaml`); `resources.gpus.enabled` adds the `gpus` container to the
  kubelet-plugin DaemonSet, `resources.computeDomains.enabled` the `compute-domains` one
  (`templates/kubeletplugin.yaml` @ 6fade9733f3d).
- Kubelet-plugin DaemonSet names: `dra-driver-nvidia-gpu-kubelet-plugin` (chart 0.4+, label
  `app.kubernetes.io/name: dra-driver-nvidia-gpu`), `nvidia-dra-driver-gpu-kubelet-plugin`
  (chart 25.x), `nvidia-dra-driver-kubelet-plugin` (GPU Operator GPUCluster, label
  `app.kubernetes.io/name: nvidia-dra-driver`). Images: `registry.k8s.io/dra-driver-nvidia/
  dra-driver-nvidia-gpu`, `nvcr.io/nvidia/k8s-dra-driver-gpu` (25.x),
  `nvcr.io/nvidia/dra-driver-nvidia-gpu` (Operator). `nameOverride` changes names, so the image
  is matched too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.devices import DeviceKind, classify
from gpudra.dra.emit import GPU_CLASS, MIG_CLASS, NVIDIA_DRIVER
from gpudra.k8s.node_selection import describe_selection, selects_node
from gpudra.k8s.object_fields import (
    containers,
    daemonset_status,
    image_repository,
    labels_of,
    owned_pods,
    pod_node,
    pod_ready,
    workload_name,
)
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.nodes import (
    gpu_nodes,
    named,
    node_name,
    slice_devices_by_node,
)
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import (
    DAEMONSETS,
    DEVICECLASSES,
    NODES,
    PODS,
    RESOURCESLICES,
    ClusterSnapshot,
    Listing,
    unreadable,
)

DRIVER_DAEMONSETS = frozenset({"dra-driver-nvidia-gpu-kubelet-plugin",
                               "nvidia-dra-driver-gpu-kubelet-plugin",
                               "nvidia-dra-driver-kubelet-plugin"})
DRIVER_NAME_LABELS = frozenset({"dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu",
                                "nvidia-dra-driver"})
DRIVER_IMAGES = frozenset({"dra-driver-nvidia-gpu", "k8s-dra-driver-gpu", "k8s-dra-driver"})
INSTALL_DRIVER = (
    "install the NVIDIA DRA driver with GPU allocation on: helm upgrade -i dra-driver-nvidia-gpu "
    "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu -n dra-driver-nvidia-gpu"
    " --create-namespace --set gpuResourcesEnabledOverride=true (or, with GPU Operator v26.7+, "
    "switch to a GPUCluster: see CLUSTER010)")
NOT_SERVED = "the DRA API (resource.k8s.io) is not served, see CLUSTER001"

CLUSTER004 = check(
    "CLUSTER004", "NVIDIA DeviceClasses exist", Tier.CLUSTER,
    "The DeviceClasses `gpu.nvidia.com` (and `mig.nvidia.com` where MIG is used) exist.",
    """
**Why it matters.** Every claim names a DeviceClass. The NVIDIA DRA driver's chart (and the
GPU Operator's GPUCluster) creates `gpu.nvidia.com` for whole GPUs and `mig.nvidia.com` for
MIG devices when GPU allocation is on. Chart v0.4.x leaves GPU allocation off unless it is
installed with `--set gpuResourcesEnabledOverride=true`, so a driver installed with the
defaults creates neither class.

**Outcomes.** *pass*: `gpu.nvidia.com` exists, and `mig.nvidia.com` too when a node uses MIG
(label `nvidia.com/mig.strategy`, `nvidia.com/mig-*` resources or a `-MIG-` product label).
*warn*: `mig.nvidia.com` is missing while nodes use MIG. *fail*: `gpu.nvidia.com` is missing,
or `resource.k8s.io` is not served at all. *unavailable*: DeviceClasses could not be listed.

**Fix.** Install the driver with GPU allocation on (`gpuResourcesEnabledOverride=true`), or
switch the GPU Operator to a GPUCluster (CLUSTER010).
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

CLUSTER005 = check(
    "CLUSTER005", "GPU nodes publish ResourceSlices", Tier.CLUSTER,
    "Every GPU node has ResourceSlices of the driver `gpu.nvidia.com` with devices in them.",
    """
**Why it matters.** The scheduler only allocates devices that a driver publishes in
ResourceSlices. A GPU node without `gpu.nvidia.com` slices cannot run a single DRA GPU pod,
whatever its labels say. GPU nodes are recognised by GFD or GPU Operator labels
(`nvidia.com/gpu.present`, `nvidia.com/gpu.product`, `nvidia.com/gpu.count`), by
device-plugin resources (`nvidia.com/gpu`, `nvidia.com/mig-*`), or by the Node Feature
Discovery label of NVIDIA's PCI vendor id (`feature.node.kubernetes.io/pci-10de.present`,
`pci-0302_10de.present`).

Moving a cluster node pool by node pool is normal: nodes that still use the device plugin
have no slices yet, so a partial result is a warning, not a failure.

**Outcomes.** *pass*: every GPU node publishes devices. *warn*: some GPU nodes publish none
(the message names them), or none does yet while every GPU node offers device-plugin GPUs (the
state before the first wave: the driver installed beside the plugin, no node switched).
*fail*: no GPU node publishes any while some GPU node is on neither stack, or
`resource.k8s.io` is not served. *unavailable*: nodes or ResourceSlices could not be listed,
or no node could be recognised as a GPU node.

**Fix.** Check the driver's kubelet plugin on the named nodes (CLUSTER006 names the node
selector and affinity its DaemonSet really has), and its logs say why a node publishes
nothing.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

CLUSTER006 = check(
    "CLUSTER006", "DRA driver kubelet plugin is ready", Tier.CLUSTER,
    "The NVIDIA DRA driver's kubelet-plugin DaemonSet serves GPUs and all its pods are ready.",
    """
**Why it matters.** The kubelet plugin publishes a node's GPUs and prepares them for each
claim (it writes the CDI spec the runtime injects). A node whose plugin pod is not ready
publishes nothing new and cannot start DRA GPU pods. gpudra finds the DaemonSet by its chart
or GPU Operator name and labels, or by its image (`dra-driver-nvidia-gpu`,
`k8s-dra-driver-gpu`), and reads its status; with pods readable, it names the nodes whose
plugin pod is not ready. A DaemonSet without a `gpus` container runs only the ComputeDomain
plugin: GPU allocation is off.

When the DaemonSet is scheduled on no node, gpudra reads its own `nodeSelector` and required
node affinity (the chart's default wants `feature.node.kubernetes.io/pci-10de.present=true` or
`nvidia.com/gpu.present=true`; docs/cutover.md installs it with `gpudra.io/gpu-stack: dra`),
says them, and counts the nodes they select.

**Outcomes.** *pass*: one DaemonSet serves GPUs and all its pods are ready; or it is scheduled
on no node because no node has what it selects yet while every GPU node offers device-plugin
GPUs (the state before the first wave: labelling a wave's nodes starts it there). *warn*: some
pods are not ready, or more than one DaemonSet serves GPUs. *fail*: no kubelet plugin
DaemonSet, one without GPU allocation, one scheduled on no node otherwise (the message says
its selection and which nodes match it), or none of its pods ready.
*unavailable*: DaemonSets could not be listed, slices from `gpu.nvidia.com` exist but no
DaemonSet could be recognised as the driver, or it is scheduled on no node and nodes could not
be listed.

**Fix.** `kubectl -n <namespace> describe daemonset <name>` and the logs of its `gpus`
container; install the driver with GPU allocation on if it is missing.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def check_device_classes(snapshot: ClusterSnapshot,
                         options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    classes = snapshot.listing(DEVICECLASSES)
    if classes.served is False:
        return result(CLUSTER004, CheckOutcome.FAIL, f"no DeviceClass can exist: {NOT_SERVED}",
                      "make Kubernetes serve resource.k8s.io first (CLUSTER001)")
    if classes.items is None:
        return unreadable(CLUSTER004, "DeviceClasses", classes, "deviceclasses.resource.k8s.io")
    names = sorted(str(dig(c, "metadata", "name")) for c in classes.items)
    details = [f"DeviceClasses: {', '.join(names) or 'none'}"]
    if GPU_CLASS not in names:
        return result(CLUSTER004, CheckOutcome.FAIL,
                      f"no DeviceClass {GPU_CLASS}: the NVIDIA DRA driver is not installed, or "
                      "installed without GPU allocation", INSTALL_DRIVER, details=details)
    if MIG_CLASS in names:
        return result(CLUSTER004, CheckOutcome.PASS,
                      f"DeviceClasses {GPU_CLASS} and {MIG_CLASS} exist", details=details)
    nodes = snapshot.listing(NODES)
    mig_nodes = sorted(_mig_nodes(nodes.items or ()))
    if mig_nodes:
        return result(CLUSTER004, CheckOutcome.WARN,
                      f"{GPU_CLASS} exists but {MIG_CLASS} does not, while nodes use MIG "
                      f"({named(mig_nodes)})",
                      "reinstall or upgrade the NVIDIA DRA driver chart: it creates "
                      f"{MIG_CLASS} with {GPU_CLASS}", details=details)
    note = "no node uses MIG" if nodes.items is not None else \
        f"whether nodes use MIG is unknown: {nodes.reason}"
    return result(CLUSTER004, CheckOutcome.PASS,
                  f"DeviceClass {GPU_CLASS} exists ({MIG_CLASS} does not; {note})",
                  details=details)


def _mig_nodes(nodes: Iterable[Mapping[str, Any]]) -> Iterable[str]:
    for node in nodes:
        labels = labels_of(node)
        offered = dig(node, "status", "allocatable") or dig(node, "status", "capacity") or {}
        mig_resource = any((d := classify(name)) is not None and d.kind is DeviceKind.MIG
                           for name in offered)
        if labels.get("nvidia.com/mig.strategy") in ("single", "mixed") or mig_resource or \
                "-MIG-" in labels.get("nvidia.com/gpu.product", ""):
            yield str(dig(node, "metadata", "name"))


def check_resource_slices(snapshot: ClusterSnapshot,
                          options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    slices = snapshot.listing(RESOURCESLICES)
    if slices.served is False:
        return result(CLUSTER005, CheckOutcome.FAIL, f"no node can publish devices: {NOT_SERVED}",
                      "make Kubernetes serve resource.k8s.io first (CLUSTER001)")
    if slices.items is None:
        return unreadable(CLUSTER005, "ResourceSlices", slices, "resourceslices.resource.k8s.io")
    facts = snapshot.node_facts
    if facts is None:
        return unreadable(CLUSTER005, "nodes", snapshot.listing(NODES), "nodes")
    gpus = gpu_nodes(facts)
    known = {f.name for f in facts}
    with_slices = set(slice_devices_by_node(slices.items) or ())
    orphans = sorted(with_slices - known)
    details = [f"slices name nodes that do not exist: {named(orphans)}"] if orphans else []
    if not gpus:
        return result(CLUSTER005, CheckOutcome.UNAVAILABLE,
                      "no node is recognisable as a GPU node (no GFD or GPU Operator labels, no "
                      "nvidia.com/gpu capacity, no NFD pci-10de label, no gpu.nvidia.com slices)",
                      "deploy GPU Feature Discovery or Node Feature Discovery so GPU nodes are "
                      "labelled", details=details)
    publishing = [f for f in gpus if f.slice_devices]
    silent = [f for f in gpus if not f.slice_devices]
    for f in silent:
        offers = ", ".join(f"{k}: {v}" for k, v in sorted(f.device_plugin_resources.items()))
        empty = " (slices with no devices)" if f.name in with_slices else ""
        # the device-plugin capacity is said once: not again among the evidence
        evidence = [e for e in f.gpu_evidence if not e.startswith("offers ")]
        details.append(f"{f.name}: no {NVIDIA_DRIVER} devices{empty}; "
                       f"{'device plugin offers ' + offers if offers else 'no device plugin'}"
                       + (f"; recognised by {', '.join(evidence)}" if evidence else ""))
    total = sum(f.slice_devices or 0 for f in publishing)
    if not silent:
        every = "the GPU node publishes" if len(gpus) == 1 else \
            f"all {len(gpus)} GPU nodes publish"
        return result(CLUSTER005, CheckOutcome.PASS,
                      f"{every} {NVIDIA_DRIVER} devices ({total} in all)", details=details)
    names = named([f.name for f in silent])
    if not publishing and all(f.device_plugin_resources for f in silent):
        every = "the GPU node is" if len(gpus) == 1 else f"all {len(gpus)} GPU nodes are"
        return result(CLUSTER005, CheckOutcome.WARN,
                      f"no GPU node publishes {NVIDIA_DRIVER} devices yet: {every} on the "
                      "device plugin (expected before the first wave)",
                      "switch the first wave's nodes as gpudra cutover's runbook says: the "
                      "DRA driver's kubelet plugin then publishes their GPUs (CLUSTER006)",
                      details=details)
    if not publishing:
        return result(CLUSTER005, CheckOutcome.FAIL,
                      f"no GPU node publishes {NVIDIA_DRIVER} devices ({names})",
                      "check the DRA driver's kubelet plugin (CLUSTER006) and its logs on these "
                      "nodes", details=details)
    return result(CLUSTER005, CheckOutcome.WARN,
                  f"{len(silent)} of {len(gpus)} GPU nodes publish no {NVIDIA_DRIVER} devices "
                  f"({names}): DRA GPU pods cannot run there (expected while they stay on the "
                  "device plugin)",
                  "move them to the DRA driver when their turn comes, or check its kubelet "
                  "plugin there (CLUSTER006)", details=details)


@dataclass(frozen=True, slots=True)
class DriverDaemonSet:
    obj: Mapping[str, Any]
    serves_gpus: bool

    @property
    def name(self) -> str:
        return workload_name(self.obj)


def driver_daemonsets(daemonsets: Iterable[Mapping[str, Any]]) -> list[DriverDaemonSet]:
    """The NVIDIA DRA driver's kubelet-plugin DaemonSets (chart, 25.x chart or GPU Operator)."""
    found = []
    for ds in daemonsets:
        name = str(dig(ds, "metadata", "name") or "")
        labels = labels_of(ds)
        ctrs = containers(ds)
        images = {image_repository(c.image).rsplit("/", 1)[-1] for c in ctrs}
        is_driver = name in DRIVER_DAEMONSETS or bool(images & DRIVER_IMAGES) or (
            labels.get("app.kubernetes.io/name") in DRIVER_NAME_LABELS
            and name.endswith("kubelet-plugin"))
        if not is_driver:
            continue
        compute_domain_only = bool(ctrs) and all(
            c.name == "compute-domains" or "compute-domain-kubelet-plugin" in c.argv_text
            for c in ctrs)
        found.append(DriverDaemonSet(ds, not compute_domain_only))
    return found


UNRECOGNISED = (f"{NVIDIA_DRIVER} publishes ResourceSlices, but no DaemonSet is recognisable "
                "as its kubelet plugin (renamed image or DaemonSet?)")
CHECK_BY_HAND = "kubectl get daemonsets -A and check the driver's pods by hand"


def driver_unrecognised(snapshot: ClusterSnapshot) -> bool:
    """The driver publishes devices but none of the DaemonSets read looks like it: what it
    runs with cannot be judged (CLUSTER006, CLUSTER016 say so alike)."""
    slices = snapshot.listing(RESOURCESLICES).items or ()
    return any(dig(s, "spec", "driver") == NVIDIA_DRIVER for s in slices)


def check_driver_pods(snapshot: ClusterSnapshot,
                      options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    daemonsets = snapshot.listing(DAEMONSETS)
    if daemonsets.items is None:
        return unreadable(CLUSTER006, "DaemonSets", daemonsets, "daemonsets.apps in all namespaces")
    found = driver_daemonsets(daemonsets.items)
    serving = [d for d in found if d.serves_gpus]
    if not found:
        if driver_unrecognised(snapshot):
            return result(CLUSTER006, CheckOutcome.UNAVAILABLE, UNRECOGNISED, CHECK_BY_HAND)
        return result(CLUSTER006, CheckOutcome.FAIL,
                      "no NVIDIA DRA driver kubelet-plugin DaemonSet found", INSTALL_DRIVER)
    if not serving:
        return result(CLUSTER006, CheckOutcome.FAIL,
                      f"{named([d.name for d in found])} runs only the ComputeDomain plugin: "
                      "GPU allocation is off", "helm upgrade the driver with --set "
                      "resources.gpus.enabled=true --set gpuResourcesEnabledOverride=true")
    pods = snapshot.listing(PODS)
    results = [_judge_driver(d, pods, snapshot) for d in serving]
    worst = max(results, key=lambda r: r.outcome.rank)
    if len(serving) > 1 and worst.outcome is CheckOutcome.PASS:
        return result(CLUSTER006, CheckOutcome.WARN,
                      f"{plural(len(serving), 'DaemonSet')} serve {NVIDIA_DRIVER} "
                      f"({named([d.name for d in serving])}): two plugins on one node conflict",
                      "uninstall all but one DRA driver release",
                      details=[line for r in results for line in r.details])
    return worst


def _judge_driver(driver: DriverDaemonSet, pods: Listing,
                  snapshot: ClusterSnapshot) -> CheckResult:
    status = daemonset_status(driver.obj)
    namespace, _, short = driver.name.rpartition("/")
    describe = f"kubectl -n {namespace or 'default'} describe daemonset {short}"
    details = [f"{driver.name}: {status.ready}/{plural(status.desired, 'pod')} ready"]
    if status.desired == 0:
        return _scheduled_nowhere(driver, snapshot, describe, details)
    if status.all_ready:
        return result(CLUSTER006, CheckOutcome.PASS,
                      f"{driver.name}: all {status.desired} kubelet-plugin pods ready",
                      details=details)
    if pods.scope:
        details.append(f"pods read: {pods.scope}")
    if pods.items is None:
        details.append(f"which pods: cannot read pods ({pods.reason})")
        where = ""
    else:
        waiting = sorted(pod_node(p) for p in owned_pods(pods.items, driver.obj)
                         if not pod_ready(p))
        details += [f"not ready on {node}" for node in waiting]
        where = f" (not ready on {named(waiting)})" if waiting else ""
    outcome = CheckOutcome.FAIL if status.ready == 0 else CheckOutcome.WARN
    return result(CLUSTER006, outcome,
                  f"{driver.name}: {status.ready} of {status.desired} kubelet-plugin pods "
                  f"ready{where}", f"{describe}; kubectl -n {namespace or 'default'} logs "
                  f"daemonset/{short} -c gpus", details=details)


def _scheduled_nowhere(driver: DriverDaemonSet, snapshot: ClusterSnapshot, describe: str,
                       details: list[str]) -> CheckResult:
    """A kubelet plugin on no node: waiting for the first wave (every GPU node still on the
    device plugin, no node selected yet), or kept off the nodes it should serve. Said with the
    DaemonSet's own selection, never the chart's default."""
    template = as_mapping(dig(driver.obj, "spec", "template", "spec"))
    wants = describe_selection(template)
    details = [*details, f"{driver.name} runs on nodes with {wants}"]
    nodes, facts = snapshot.listing(NODES).items, snapshot.node_facts
    if nodes is None or facts is None:
        return result(CLUSTER006, CheckOutcome.UNAVAILABLE,
                      f"{driver.name} is scheduled on no node (it runs on nodes with {wants}); "
                      "whether that is the state before the first wave cannot be told: cannot "
                      f"read nodes: {snapshot.listing(NODES).reason}", "grant list on nodes",
                      details=details)
    selected = sorted(node_name(n) for n in nodes
                      if selects_node(template, labels_of(n), node_name(n)))
    gpus = gpu_nodes(facts)
    if selected:
        return result(CLUSTER006, CheckOutcome.FAIL,
                      f"{driver.name} is scheduled on no node although "
                      f"{plural(len(selected), 'node')} ({named(selected)}) "
                      f"{'matches' if len(selected) == 1 else 'match'} its "
                      f"{wants}: their taints are not tolerated, or the DaemonSet controller "
                      "is not running",
                      f"{describe} (its tolerations, events)", details=details)
    if gpus and all(f.device_plugin_resources for f in gpus):
        every = "the GPU node is" if len(gpus) == 1 else f"all {len(gpus)} GPU nodes are"
        return result(CLUSTER006, CheckOutcome.PASS,
                      f"{driver.name} is installed and scheduled on no node yet: it runs on "
                      f"nodes with {wants}, which no node has, and {every} on the device "
                      "plugin (the state before the first wave: switching a wave's nodes "
                      "starts it there)", details=details)
    return result(CLUSTER006, CheckOutcome.FAIL,
                  f"{driver.name} is scheduled on no node: it runs on nodes with {wants}, "
                  "which no node has",
                  f"label the GPU nodes it should serve to match, or change its node selection "
                  f"in the chart values; {describe}", details=details)
