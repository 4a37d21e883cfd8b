"""Which nodes are GPU nodes, what each advertises, and how per-node judgements add up.

A node is a GPU node when any of these says so (each is a reason shown to the user):
- GPU Feature Discovery / GPU Operator labels: `nvidia.com/gpu.present=true`, or any of
  `nvidia.com/gpu.product`, `nvidia.com/gpu.count` (k8s-device-plugin v0.20.0 `internal/lm`;
  GPU Operator v26.7.0 node labels, facts-turn2 section 9);
- device-plugin resources in `status.allocatable` (or `capacity`): `nvidia.com/gpu`,
  `nvidia.com/mig-<profile>`, `*.shared` (gpudra.k8s.devices);
- a Node Feature Discovery PCI label with NVIDIA's vendor id `10de`:
  `feature.node.kubernetes.io/pci-10de.present` with the GPU Operator's NFD config
  (`deviceLabelFields: [vendor]`), `pci-0302_10de.present` with NFD's default `[class, vendor]`;
- a ResourceSlice of the NVIDIA DRA driver (`spec.driver: gpu.nvidia.com`) for the node.

**Grading per-node checks** (CLUSTER002, CLUSTER003): GPU nodes are graded as judged. A non-GPU
node never receives a GPU claim, so its problems matter less: its `fail` counts as `warn` (the
node is still outside what is supported, and other DRA drivers or a future GPU pool would hit
it), and its `warn` and `unavailable` are listed in the details without changing the outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpudra.dra.emit import NVIDIA_DRIVER
# advertised_device_plugin_resources lives beside is_device_plugin_resource: verify's gate
# reads it without loading every preflight check.
from gpudra.k8s.gpu_use import advertised_device_plugin_resources  # noqa: F401 (re-exported)
from gpudra.k8s.gpu_use import device_plugin_counts as _device_plugin_counts
from gpudra.k8s.object_fields import labels_of
from gpudra.k8s.objects import as_mapping, dig, plural
from gpudra.preflight.check_records import CheckInfo, CheckOutcome, CheckResult, result
from gpudra.preflight.runtime import Judgement

GFD_PRESENT = "nvidia.com/gpu.present"
GFD_VALUE_LABELS = ("nvidia.com/gpu.product", "nvidia.com/gpu.count")
NFD_PCI = re.compile(r"^feature\.node\.kubernetes\.io/pci-(?P<fields>[0-9a-fA-F_]+)\.present$")
NVIDIA_PCI_VENDOR = "10de"
MAX_NAMED = 5


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the cluster tier knows about one node."""

    name: str
    labels: Mapping[str, str]
    gpu_evidence: tuple[str, ...]
    device_plugin_resources: Mapping[str, int]  # nvidia.com/gpu -> 8 (allocatable > 0 only)
    slice_devices: int | None  # devices in gpu.nvidia.com slices; None when slices unreadable
    kubelet_version: str
    runtime_version: str

    @property
    def is_gpu(self) -> bool:
        return bool(self.gpu_evidence)


def node_name(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "(unnamed)")


def slice_devices_by_node(slices: Iterable[Mapping[str, Any]] | None,
                          driver: str = NVIDIA_DRIVER) -> dict[str, int] | None:
    """Node name -> number of devices in `driver`'s slices (a slice with no devices counts 0)."""
    if slices is None:
        return None
    counts: dict[str, int] = {}
    for obj in slices:
        spec = as_mapping(obj.get("spec"))
        node = spec.get("nodeName")
        if spec.get("driver") != driver or not isinstance(node, str) or not node:
            continue
        devices = spec.get("devices")
        counts[node] = counts.get(node, 0) + (len(devices) if isinstance(devices, list) else 0)
    return counts


def device_plugin_resources(node: Mapping[str, Any]) -> dict[str, int]:
    """NVIDIA device-plugin resources the node offers (allocatable, else capacity), > 0 only."""
    status = as_mapping(node.get("status"))
    return _device_plugin_counts(as_mapping(status.get("allocatable"))
                                 or as_mapping(status.get("capacity")))


def gpu_evidence(labels: Mapping[str, str], resources: Mapping[str, int],
                 slice_devices: int | None) -> tuple[str, ...]:
    reasons = []
    if str(labels.get(GFD_PRESENT, "")).lower() == "true":
        reasons.append(f"label {GFD_PRESENT}=true")
    reasons += [f"label {key}" for key in GFD_VALUE_LABELS if labels.get(key)]
    reasons += [f"offers {name}: {count}" for name, count in sorted(resources.items())]
    for key, value in labels.items():
        match = NFD_PCI.match(key)
        if match and NVIDIA_PCI_VENDOR in match["fields"].lower().split("_") \
                and str(value).lower() == "true":
            reasons.append(f"NFD label {key}")
    if slice_devices is not None:
        reasons.append(f"{NVIDIA_DRIVER} ResourceSlices ({plural(slice_devices, 'device')})")
    return tuple(reasons)


def node_facts(nodes: Iterable[Mapping[str, Any]],
               slices: Iterable[Mapping[str, Any]] | None) -> tuple[NodeFacts, ...]:
    by_node = slice_devices_by_node(slices)
    facts = []
    for node in nodes:
        name = node_name(node)
        labels = labels_of(node)
        resources = device_plugin_resources(node)
        devices = None if by_node is None else by_node.get(name)
        info = as_mapping(dig(node, "status", "nodeInfo"))
        facts.append(NodeFacts(
            name, labels, gpu_evidence(labels, resources, devices), resources,
            None if by_node is None else by_node.get(name, 0),
            str(info.get("kubeletVersion") or ""), str(info.get("containerRuntimeVersion") or "")))
    return tuple(sorted(facts, key=lambda f: f.name))


def named(names: Sequence[str], limit: int = MAX_NAMED) -> str:
    """`a, b, c` or `a, b, c and 4 more`: node lists in one-line messages."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def grade_nodes(info: CheckInfo, judged: Sequence[tuple[NodeFacts, Judgement]],
                what: str, summary: str) -> CheckResult:
    """One result from per-node judgements, graded as the module docstring says.

    `what` names the subject in messages ("runtime", "kubelet"); `summary` is the pass message.
    """
    details: list[str] = []
    graded: list[tuple[CheckOutcome, NodeFacts, Judgement]] = []
    for facts, judgement in judged:
        kind = "GPU node" if facts.is_gpu else "non-GPU node"
        if judgement.outcome is not CheckOutcome.PASS:
            details.append(f"{facts.name} ({kind}): {judgement.outcome.value}: "
                           f"{judgement.message}")
        outcome = judgement.outcome
        if not facts.is_gpu:
            outcome = CheckOutcome.WARN if outcome is CheckOutcome.FAIL else CheckOutcome.PASS
        graded.append((outcome, facts, judgement))
    worst = max((g[0] for g in graded), key=lambda o: o.rank, default=CheckOutcome.PASS)
    if worst is CheckOutcome.PASS:
        return result(info, CheckOutcome.PASS, summary, details=details)
    hit = [g for g in graded if g[0] is worst]
    gpu_hit = [g for g in hit if g[1].is_gpu]
    first = (gpu_hit or hit)[0]
    kind = "GPU node" if gpu_hit else "non-GPU node"
    names = [g[1].name for g in (gpu_hit or hit)]
    verb = {CheckOutcome.FAIL: "fails", CheckOutcome.WARN: "needs attention",
            CheckOutcome.UNAVAILABLE: "cannot be judged"}[worst]
    count = f"{len(names)} {kind}{'s' if len(names) != 1 else ''}"
    message = f"{what} {verb} on {count} ({named(names)}): {first[2].message}"
    if not gpu_hit and worst is CheckOutcome.WARN:
        message += " (non-GPU nodes: a failure is reported as a warning)"
    return result(info, worst, message, first[2].remediation, details=details)


def gpu_nodes(facts: Iterable[NodeFacts]) -> list[NodeFacts]:
    return [f for f in facts if f.is_gpu]


def count_by(values: Iterable[str]) -> str:
    """`containerd://2.1.4 (3), cri-o://1.33.2 (1)`, most common first."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{value or '(empty)'} ({n})" for value, n in ordered)


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A plain `nodeSelector` map against a node's labels."""
    return all(labels.get(str(k)) == str(v) for k, v in selector.items())
