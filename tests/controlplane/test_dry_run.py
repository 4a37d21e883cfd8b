"""Every converted output, server-side dry-run against the real kube-apiserver (1.37.2).

The API server decodes strictly (unknown and duplicate fields are errors), defaults and runs
the full validation and admission chain, so an object it accepts here is one a 1.37 cluster
accepts. The convert goldens' after/ trees are what gpudra writes for each case (for its
target version: v1beta1 and v1beta2 are served too); the corpus is converted here for 1.37.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.manifests import Rejection, Source, dry_run, load_tree

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

GOLDEN = Path(__file__).resolve().parents[1] / "convert" / "golden"
# Beside the checkout, as tests/test_corpus_convert.py finds it; GPUDRA_CORPUS points elsewhere.
CORPUS = Path(os.environ.get("GPUDRA_CORPUS")
              or Path(__file__).resolve().parents[3] / "shared" / "corpus")
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "after").is_dir())


@pytest.mark.parametrize("case", CASES)
def test_golden_output_is_accepted(control_plane: ControlPlane, case: str) -> None:
    sources, unreadable = load_tree(GOLDEN / case / "after", control_plane)
    assert [str(r) for r in unreadable] == []
    if case == "blocked-helm-chart":
        assert sources == [], "a chart's templates are not manifests"
        return
    assert sources, f"{case}: no object found in after/"
    # A blocked case leaves an input the server rejects as it was: only new rejections count.
    assert [str(r) for r in new_rejections(control_plane, GOLDEN / case / "before",
                                           GOLDEN / case / "after")] == []


def new_rejections(plane: ControlPlane, before: Path, after: Path) -> list[Rejection]:
    """What the server rejects in `after` that it did not reject, just so, in `before`."""
    def rejected(root: Path) -> list[Rejection]:
        sources, unreadable = load_tree(root, plane)
        return unreadable + dry_run(plane, sources)
    baseline = set(rejected(before))
    return [r for r in rejected(after) if r not in baseline]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_output_is_accepted(control_plane: ControlPlane, tmp_path: Path) -> None:
    """The corpus converted for 1.37: nothing the server accepted before conversion is rejected
    after it, and every DRA object convert created is accepted."""
    original, converted = tmp_path / "original", tmp_path / "converted"
    shutil.copytree(CORPUS, original)
    shutil.copytree(CORPUS, converted)
    code = run_convert(ConvertRequest(paths=(str(converted),)), JSON,
                       stdout=io.StringIO(), stderr=io.StringIO())
    assert int(code) in (0, 4)  # 4: some workloads are blocked (tests/test_corpus_convert.py)
    sources, _ = load_tree(converted, control_plane)
    created = [s for s in sources if s.obj["kind"] in ("ResourceClaimTemplate", "ResourceClaim")]
    assert len(created) > 20, "the corpus converts dozens of workloads"
    assert [str(r) for r in new_rejections(control_plane, original, converted)] == []


def test_strict_decoding_is_on(control_plane: ControlPlane) -> None:
    """The control for the tests above: the v1beta1 request shape under resource.k8s.io/v1 (a
    flat deviceClassName) is an unknown field, and the dry-run says so."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "flat", "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}}
    [rejection] = dry_run(control_plane, [Source("inline", template)])
    assert 'unknown field "spec.spec.devices.requests[0].deviceClassName"' in rejection.message


def test_admin_access_needs_the_namespace_label(control_plane: ControlPlane) -> None:
    """What convert --admin-access tells its user (docs/convert.md), checked at the server: the
    same admin-access template is refused in a namespace without the label, accepted with it."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "monitor", "namespace": "unlabelled-monitoring"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                "allocationMode": "All",
                                                "adminAccess": True}}]}}}}
    control_plane.ensure_namespace("unlabelled-monitoring")
    [rejection] = dry_run(control_plane, [Source("inline", template)],
                          label_admin_namespaces=False)
    assert "resource.kubernetes.io/admin-access: true" in rejection.message
    assert dry_run(control_plane, [Source("inline", template)]) == []
