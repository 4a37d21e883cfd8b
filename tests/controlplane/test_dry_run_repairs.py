"""Issue 34 item 5, at the real kube-apiserver (1.37.2): over the whole grid of request shapes
(tests/convert/repair_grid.py), every object convert repairs, or leaves without a word as
already right, is accepted by a server-side dry-run. What convert cannot make right it reports
`manual` and leaves as it was (tests/convert/test_repair_grid.py)."""

from __future__ import annotations

from pathlib import Path

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.manifests import Source, dry_run, load_tree
from tests.convert.repair_grid import convert_grid


def test_repaired_and_unreported_objects_are_accepted(control_plane: ControlPlane,
                                                       tmp_path: Path) -> None:
    result = convert_grid(tmp_path / "grid")
    sources, unreadable = load_tree(tmp_path / "grid", control_plane)
    assert [str(r) for r in unreadable] == []
    judged = [s for s in sources if result.strategies.get(s.where) not in ("manual", "blocked")]
    repaired = [s for s in judged if result.strategies.get(s.where) == "repair"]
    assert len(repaired) > 100, "the grid repairs hundreds of objects"
    assert [str(r) for r in dry_run(control_plane, judged)] == []


def test_the_blog_shape_is_rejected_before_repair(control_plane: ControlPlane) -> None:
    """The control for the test above: `allocationMode: Count` (the blog shape) in a v1
    request is refused by the server as it is written."""
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "blog", "namespace": "grid"},
                "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                "allocationMode": "Count", "count": 2}}]}}}}
    [rejection] = dry_run(control_plane, [Source("inline", template)])
    assert "allocationMode" in rejection.message
