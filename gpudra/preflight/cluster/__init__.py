"""The cluster tier of `gpudra preflight`: pure judgements over one `ClusterSnapshot`.

The cluster client (gpudra/cluster/) reads the cluster into a snapshot; nothing here does I/O.
The order of the checks is the order of a migration: the API, the nodes, the DRA driver, the
device plugin it replaces, the GPU Operator, and what breaks around them (quotas, autoscalers,
queueing, monitoring).
"""

from __future__ import annotations

from collections.abc import Callable

from gpudra.preflight.check_records import CheckInfo, CheckOutcome, CheckResult, result
from gpudra.preflight.cluster.api_version import CLUSTER001, check_api_version
from gpudra.preflight.cluster.autoscalers import (
    CLUSTER012,
    CLUSTER013,
    check_cluster_autoscaler,
    check_karpenter,
)
from gpudra.preflight.cluster.device_plugin import (
    CLUSTER007,
    CLUSTER008,
    check_device_plugin,
    check_double_counting,
)
from gpudra.preflight.cluster.driver import (
    CLUSTER004,
    CLUSTER005,
    CLUSTER006,
    check_device_classes,
    check_driver_pods,
    check_resource_slices,
)
from gpudra.preflight.cluster.extended_resource import CLUSTER009, check_extended_resource
from gpudra.preflight.cluster.kueue import CLUSTER014, check_kueue
from gpudra.preflight.cluster.monitoring import CLUSTER015, check_prometheus_rules
from gpudra.preflight.cluster.node_versions import (
    CLUSTER002,
    CLUSTER003,
    check_container_runtimes,
    check_kubelet_skew,
)
from gpudra.preflight.cluster.operator import CLUSTER010, check_operator
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.quotas import CLUSTER011, check_quotas
from gpudra.preflight.cluster.sharing import CLUSTER016, check_sharing_gates
from gpudra.preflight.cluster.snapshot import RESOURCES, ClusterSnapshot, ResourceRef

ClusterCheck = Callable[[ClusterSnapshot, ClusterOptions], CheckResult]

_CHECKS: tuple[tuple[CheckInfo, ClusterCheck], ...] = (
    (CLUSTER001, check_api_version),
    (CLUSTER002, check_kubelet_skew),
    (CLUSTER003, check_container_runtimes),
    (CLUSTER004, check_device_classes),
    (CLUSTER005, check_resource_slices),
    (CLUSTER006, check_driver_pods),
    (CLUSTER007, check_device_plugin),
    (CLUSTER008, check_double_counting),
    (CLUSTER009, check_extended_resource),
    (CLUSTER010, check_operator),
    (CLUSTER011, check_quotas),
    (CLUSTER012, check_cluster_autoscaler),
    (CLUSTER013, check_karpenter),
    (CLUSTER014, check_kueue),
    (CLUSTER015, check_prometheus_rules),
    (CLUSTER016, check_sharing_gates),
)

CLUSTER_CHECKS: tuple[CheckInfo, ...] = tuple(info for info, _ in _CHECKS)


def run_cluster_checks(snapshot: ClusterSnapshot,
                       options: ClusterOptions = NO_OPTIONS) -> tuple[CheckResult, ...]:
    """Every cluster check, in catalogue order. A check that breaks on unexpected data says
    `unavailable` instead of stopping the others."""
    results = []
    for info, judge in _CHECKS:
        try:
            results.append(judge(snapshot, options))
        except Exception as exc:  # noqa: BLE001 - one check's bug must not hide the others
            results.append(result(
                info, CheckOutcome.UNAVAILABLE,
                f"gpudra could not judge this: internal error {type(exc).__name__}: "
                f"{' '.join(str(exc).split())}",
                "please report this as a gpudra bug, with the check id"))
    return tuple(results)


__all__ = ["CLUSTER_CHECKS", "RESOURCES", "ClusterOptions", "ClusterSnapshot", "ResourceRef",
           "run_cluster_checks"]
