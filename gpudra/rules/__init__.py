"""The rule catalogue: every checker is registered here, once."""

from __future__ import annotations

from gpudra.results.model import RuleInfo
from gpudra.rules.base import AuditContext, Checker, all_rules
from gpudra.rules.gpu_nodes import ClusterState
from gpudra.rules.device_requests import DeviceRequests
from gpudra.rules.dra_objects import DraObjects
from gpudra.rules.environment import EnvironmentVars
from gpudra.rules.kustomize_overlays import KustomizeOverlays
from gpudra.rules.monitoring import Monitoring
from gpudra.rules.overlays import ClaimsBesideDevicePlugin
from gpudra.rules.placement import Placement
from gpudra.rules.quotas import Quotas
from gpudra.rules.sharing import Sharing
from gpudra.rules.suppressions import Suppressions
from gpudra.rules.templates import Templates

# KustomizeOverlays first: its findings and workloads come before the other checkers' finish,
# as they did when the file source ran it after the scan.
CHECKERS: tuple[type[Checker], ...] = (
    KustomizeOverlays,
    DeviceRequests,
    Sharing,
    ClaimsBesideDevicePlugin,
    Quotas,
    Placement,
    EnvironmentVars,
    Monitoring,
    Templates,
    DraObjects,
    ClusterState,
    Suppressions,
)


def catalogue() -> dict[str, RuleInfo]:
    """Every rule, by id, in id order."""
    return all_rules(CHECKERS)


__all__ = ["CHECKERS", "AuditContext", "Checker", "catalogue"]
