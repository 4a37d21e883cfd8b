"""`gpudra preflight`: is the cluster, and each node's runtime, ready for DRA?

The catalogue of every check lives here, once, so `gpudra checks` can list them and the tests
can require docs and cases for each. `docs.checks_markdown()` renders docs/checks.md from it.

The tiers' check modules load when `catalogue()` is first called, not when this package is
imported: code that needs one module of it (the audit's cluster rules use the device-plugin
matcher of gpudra.preflight.cluster.device_plugin) must not pay for every node and manifest
check.
"""

from __future__ import annotations

from gpudra.preflight.check_records import (
    Catalogue,
    CheckInfo,
    CheckOutcome,
    CheckResult,
    Tier,
    apply_skips,
    count_outcomes,
    worst,
)


def catalogue() -> Catalogue:
    """Every preflight check by id."""
    from gpudra.preflight.cluster import CLUSTER_CHECKS
    from gpudra.preflight.manifests import MANIFEST_CHECKS
    from gpudra.preflight.node import NODE_CHECKS

    return Catalogue((*CLUSTER_CHECKS, *NODE_CHECKS, *MANIFEST_CHECKS))


__all__ = ["Catalogue", "CheckInfo", "CheckResult", "CheckOutcome", "Tier", "apply_skips",
           "catalogue", "count_outcomes", "worst"]
