"""What CLUSTER009 checks of the KEP-5004 bridge beyond the release's gate.

Facts (kubernetes/enhancements keps/sig-scheduling/5004-dra-extended-resource README @
64765b4; dra-driver-nvidia-gpu demo/specs/extended-resources; NVIDIA/gpu-operator v26.7.0):

- Several DeviceClasses with one `extendedResourceName`: the one created later is picked at
  scheduling time; of two created at the same time, the name sorted first.
- A node must not offer the same name from a device plugin (`status.capacity`) and from DRA
  (ResourceSlices) at once: the scheduler would admit pods against both (over-admission).
- Pods the bridge serves get a claim the scheduler creates, annotated
  `resource.kubernetes.io/extended-resource-claim: "true"`.
- The GPU Operator's DRA stack renders its DeviceClasses (`manifests/state-dra-driver/0400_*`,
  `0410_*`) without `extendedResourceName`, and labels what it creates
  `nvidia.com/gpu-operator.state: state-dra-driver` (internal/state/state_skel.go).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.dra.bridge_quota import BRIDGE_CLAIM_ANNOTATION
from gpudra.k8s.objects import dig
from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.cluster.nodes import NodeFacts, named

OPERATOR_STATE_LABEL = "nvidia.com/gpu-operator.state"
OPERATOR_DRA_STATE = "state-dra-driver"


@dataclass(frozen=True, slots=True)
class Problem:
    outcome: CheckOutcome
    message: str
    remediation: str


def winning_class(classes: Iterable[Mapping[str, Any]]) -> str:
    """The class the scheduler uses for a name several classes map: the newest, ties by the
    name sorted first. RFC 3339 timestamps of one zone sort as text."""
    newest = sorted(classes, key=lambda c: str(dig(c, "metadata", "name")))
    newest.sort(key=lambda c: str(dig(c, "metadata", "creationTimestamp") or ""), reverse=True)
    return str(dig(newest[0], "metadata", "name"))


def bridge_claims(claims: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """`namespace/name` of the claims the scheduler made for pods the bridge serves."""
    return sorted(f"{dig(c, 'metadata', 'namespace')}/{dig(c, 'metadata', 'name')}"
                  for c in claims or ()
                  if str((dig(c, "metadata", "annotations") or {}).get(BRIDGE_CLAIM_ANNOTATION))
                  == "true")


def operator_classes_without_mapping(classes: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted(str(dig(c, "metadata", "name")) for c in classes
                  if (dig(c, "metadata", "labels") or {}).get(OPERATOR_STATE_LABEL)
                  == OPERATOR_DRA_STATE and not dig(c, "spec", "extendedResourceName"))


def bridge_problems(classes: tuple[Mapping[str, Any], ...], mapped: list[tuple[str, str]],
                    claims: tuple[Mapping[str, Any], ...] | None,
                    nodes: tuple[NodeFacts, ...] | None) -> list[Problem]:
    """Over-admitting nodes (fail) and bridge pods no class will serve any more (warn)."""
    problems = []
    names = {name for _, name in mapped}
    doubled = [(facts.name, sorted(names & set(facts.device_plugin_resources)))
               for facts in nodes or () if facts.slice_devices]
    doubled = [(node, both) for node, both in doubled if both]
    if doubled:
        problems.append(Problem(
            CheckOutcome.FAIL,
            f"{len(doubled)} node(s) offer {', '.join(sorted({n for _, b in doubled for n in b}))}"
            f" from the device plugin and, through extendedResourceName, from DRA "
            f"({named([node for node, _ in doubled])}): the scheduler admits pods against "
            "both, so more pods than GPUs can land on them (over-admission)",
            "stop the device plugin on these nodes (GPU Operator: label them "
            "nvidia.com/gpu.deploy.device-plugin=false) before their DRA driver publishes "
            "devices, or drain them"))
    served = bridge_claims(claims)
    unmapped = operator_classes_without_mapping(classes)
    if served and unmapped and not names:
        problems.append(Problem(
            CheckOutcome.WARN,
            f"{len(served)} pod(s) get GPUs through the bridge ({named(served)}), but no "
            f"DeviceClass maps an extended resource: the GPU Operator's DRA stack installed "
            f"{', '.join(unmapped)} without extendedResourceName, so new pods asking "
            "nvidia.com/gpu are not served by DRA",
            "create a DeviceClass of your own with extendedResourceName: nvidia.com/gpu and the "
            "same selector (gpudra convert --strategy bridge writes one); the operator "
            "reconciles its own classes, so do not edit them"))
    return problems
