"""`gpudra preflight`: is the cluster, and each node's runtime, ready for DRA?

The catalogue of every check lives here, once, so `gpudra checks` can list them and the tests
can require docs and cases for each. `checks_markdown()` renders docs/checks.md from it.
"""

from __future__ import annotations

from gpudra.preflight.cluster import CLUSTER_CHECKS
from gpudra.preflight.docs import checks_markdown
from gpudra.preflight.manifests import MANIFEST_CHECKS
from gpudra.preflight.model import (
    Catalogue,
    CheckInfo,
    CheckResult,
    Outcome,
    Tier,
    apply_skips,
    count_outcomes,
    worst,
)
from gpudra.preflight.node import NODE_CHECKS


def catalogue() -> Catalogue:
    """Every preflight check by id."""
    return Catalogue((*CLUSTER_CHECKS, *NODE_CHECKS, *MANIFEST_CHECKS))


__all__ = ["Catalogue", "CheckInfo", "CheckResult", "Outcome", "Tier", "apply_skips",
           "catalogue", "checks_markdown", "count_outcomes", "worst"]
