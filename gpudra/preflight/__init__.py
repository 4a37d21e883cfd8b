"""`gpudra preflight`: is the cluster, and each node's runtime, ready for DRA?

The catalogue of every check lives here, once, so `gpudra checks` can list them and the tests
can require docs and cases for each. The cluster tier adds its tuple of `CheckInfo` next to
`NODE_CHECKS`.
"""

from __future__ import annotations

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
    return Catalogue(NODE_CHECKS)


__all__ = ["Catalogue", "CheckInfo", "CheckResult", "Outcome", "Tier", "apply_skips",
           "catalogue", "count_outcomes", "worst"]
