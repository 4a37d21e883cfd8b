"""Every converted output, server-side dry-run against the real kube-apiserver (1.37.2).

The API server decodes strictly (unknown and duplicate fields are errors), defaults and runs
the full validation and admission chain, so an object it accepts here is one a 1.37 cluster
accepts. The convert goldens' after/ trees are what gpudra writes for each case (for its
target version: v1beta1 and v1beta2 are served too); the corpus is converted here for 1.37.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpudra.convert.run import ConvertRequest, run_convert
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.manifests import dry_run, load_tree

GOLDEN = Path(__file__).resolve().parents[1] / "convert" / "golden"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "after").is_dir())


@pytest.mark.parametrize("case", CASES)
def test_golden_output_is_accepted(control_plane: ControlPlane, case: str) -> None:
    sources = list(load_tree(GOLDEN / case / "after", control_plane))
    if case == "blocked-helm-chart":
        assert sources == [], "a chart's templates are not manifests"
        return
    assert sources, f"{case}: no object found in after/"
    rejected = dry_run(control_plane, sources)
    # A blocked case leaves an input the server rejects as it was: only new rejections count.
    before = set(dry_run(control_plane, list(load_tree(GOLDEN / case / "before", control_plane))))
    assert [str(r) for r in rejected if r not in before] == []


def test_strict_decoding_is_on(control_plane: ControlPlane) -> None:
    """The control for the tests above: the v1beta1 request shape under resource.k8s.io/v1 (a
    flat deviceClassName) is an unknown field, and the dry-run says so."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "flat", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}}
    from tests.controlplane.manifests import Source
    [rejection] = dry_run(control_plane, [Source("inline", template)])
    assert 'unknown field "spec.spec.devices.requests[0].deviceClassName"' in rejection.message
