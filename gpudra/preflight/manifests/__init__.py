"""The manifests tier of `gpudra preflight --manifests PATH`: a tree against a target release."""

from __future__ import annotations

from gpudra.preflight.manifests.checks import (
    MANIFEST_CHECKS,
    ManifestInput,
    ManifestOptions,
    run_manifest_checks,
)
from gpudra.preflight.manifests.read import read_manifests

__all__ = ["MANIFEST_CHECKS", "ManifestInput", "ManifestOptions", "read_manifests",
           "run_manifest_checks"]
