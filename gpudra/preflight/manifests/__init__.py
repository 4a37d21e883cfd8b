"""The manifests tier of `gpudra preflight --manifests PATH`: a tree against a target release.

`read_manifests` (gpudra.preflight.manifests.read) reads a tree with the audit; it is not
imported here, so the catalogue can be loaded without the audit's rules and CEL engine.
"""

from __future__ import annotations

from gpudra.preflight.manifests.checks import (
    MANIFEST_CHECKS,
    ManifestInput,
    ManifestOptions,
    run_manifest_checks,
)

__all__ = ["MANIFEST_CHECKS", "ManifestInput", "ManifestOptions", "run_manifest_checks"]
