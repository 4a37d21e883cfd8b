"""The guard's two objects: a ValidatingAdmissionPolicy that names, per container, the
device-plugin resources a migrated namespace no longer serves, and the binding that applies it
to namespaces labelled as migrated, as a warning or a refusal.

admissionregistration.k8s.io/v1 (GA since 1.30): CEL evaluated in the API server, no webhook to
run. A binding cannot both warn and deny (API validation: "must not contain both Deny and
Warn"), so the stages are [Warn, Audit] then [Deny, Audit]; both bindings share one name, so
applying the second replaces the first.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from gpudra.guard import cel

MIGRATED_LABEL = "gpudra.io/migrated"
MIGRATED_VALUE = "true"
NAME = "gpudra-guard"                        # the policy's and the binding's name
GUARD_LABEL = "gpudra.io/guard"              # on both objects: what the gate looks for
STRATEGY_ANNOTATION = "gpudra.io/guard-strategy"
API_VERSION = "admissionregistration.k8s.io/v1"

# The built-in kinds that carry a pod spec, by API group: Pods, and every controller that makes
# them from a template (PodTemplate and ReplicationController included: both are served and
# both make pods). Operators' kinds (JobSet, LeaderWorkerSet, RayCluster, ...) are not matched:
# their pod templates sit at paths of their own, and what they create is one of these kinds,
# which the policy refuses when the operator creates it.
MATCHED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("pods", "podtemplates", "replicationcontrollers")),
    ("apps", ("deployments", "statefulsets", "daemonsets", "replicasets")),
    ("batch", ("jobs", "cronjobs")),
)


class Strategy(enum.Enum):
    """What serves GPUs in a migrated namespace: claims only, or the extended-resource bridge
    (KEP-5004) too, which keeps serving `nvidia.com/gpu` from a mapped DeviceClass."""

    CLAIMS = "claims"
    BRIDGE = "bridge"

    @classmethod
    def aliases(cls) -> dict[str, Strategy]:
        # "rewrite" is convert's and cutover's name for it (what they do to the manifests), so
        # the runbook's strategy word works here too.
        return {"rewrite": cls.CLAIMS}

    @classmethod
    def _missing_(cls, value: object) -> Strategy | None:
        return cls.aliases().get(value) if isinstance(value, str) else None


class Action(enum.Enum):
    WARN = "warn"
    DENY = "deny"

    @property
    def validation_actions(self) -> list[str]:
        # Audit in both stages: the refusals are in the audit log either way.
        return ["Warn", "Audit"] if self is Action.WARN else ["Deny", "Audit"]


@dataclass(frozen=True)
class GuardRequest:
    strategy: Strategy = Strategy.CLAIMS
    action: Action = Action.WARN


def _labels() -> dict[str, str]:
    return {GUARD_LABEL: "true", "app.kubernetes.io/managed-by": "gpudra"}


def policy(strategy: Strategy) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy. failurePolicy Fail: its expressions read every optional
    field through optional selection, so they cannot fail on an object the API server accepts;
    one that fails anyway (a cost budget exceeded) must not let a device-plugin pod through
    unseen. Under the Warn stage a failure is only a warning (the binding's actions apply)."""
    bridge = strategy is Strategy.BRIDGE
    served = ("nvidia.com/gpu is served through the bridge; MIG and shared device-plugin "
              "resources are not" if bridge else "GPUs are served through ResourceClaims only")
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": NAME, "labels": _labels(),
                     "annotations": {STRATEGY_ANNOTATION: strategy.value}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [
                {"apiGroups": [group], "apiVersions": ["v1"],
                 "operations": ["CREATE", "UPDATE"], "resources": list(resources)}
                for group, resources in MATCHED]},
            "variables": [
                {"name": "spec", "expression": cel.pod_spec("object")},
                {"name": "oldSpec", "expression": "request.operation == 'UPDATE' ? "
                                                  f"{cel.pod_spec('oldObject')} : {{}}"},
                {"name": "containers", "expression": cel.containers("variables.spec")},
                {"name": "oldContainers", "expression": cel.containers("variables.oldSpec")},
                {"name": "asking", "expression": cel.offending("variables.containers", bridge)},
                {"name": "askedBefore",
                 "expression": cel.offending("variables.oldContainers", bridge)},
            ],
            # A ratchet: nothing new may ask, and an object that already asked when the
            # namespace was labelled may still be updated (scaled, relabelled) as it is.
            "validations": [{
                "expression": "variables.asking.all(a, a in variables.askedBefore)",
                "reason": "Forbidden",
                "message": (f"this namespace is migrated to DRA ({MIGRATED_LABEL}="
                            f"{MIGRATED_VALUE}): {served}; run gpudra convert on this "
                            "workload"),
                "messageExpression": (
                    "'namespace ' + request.namespace + "
                    f"' is migrated to DRA ({MIGRATED_LABEL}={MIGRATED_VALUE}; {served}): ' + "
                    "variables.asking.filter(a, !(a in variables.askedBefore)).join('; ') + "
                    "': run gpudra convert on this workload to ask through ResourceClaims'"),
            }],
        },
    }


def binding(action: Action) -> dict[str, Any]:
    """The binding: namespaces labelled MIGRATED_LABEL=MIGRATED_VALUE, as `action` says."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": NAME, "labels": _labels()},
        "spec": {
            "policyName": NAME,
            "validationActions": action.validation_actions,
            "matchResources": {"namespaceSelector": {
                "matchLabels": {MIGRATED_LABEL: MIGRATED_VALUE}}},
        },
    }


def guard_objects(request: GuardRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    return policy(request.strategy), binding(request.action)
