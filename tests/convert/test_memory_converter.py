"""Plan's in-memory conversion skips objects with no `nvidia.com/` key without planning them.
The skip must never change a result: over the golden trees, the examples and the shared corpus
(when present), every object converts as it does when everything is planned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpudra.convert import memory
from gpudra.convert.memory import in_memory_converter, may_ask_for_nvidia
from gpudra.convert.planner import ConvertOptions
from gpudra.dra.versions import DEFAULT
from gpudra.k8s.objects import SourceObject, expand_lists
from gpudra.sources.files import FileSource

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
TREES = [*sorted((ROOT / "tests" / "convert" / "golden").glob("*/before")), ROOT / "examples",
         *([CORPUS] if CORPUS.is_dir() else [])]


@pytest.mark.parametrize("data", [
    {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
    {"spec": {"template": {"spec": {"overhead": {"nvidia.com/mig-1g.5gb": "1"}}}}},
    {"a": [[{"nvidia.com/gpu.shared": 2}]]},
    {"metadata": {"labels": {"x": "nvidia.com/gpu"}}},  # a value: planning decides
    {"data": b"\x00", "spec": {}},  # not JSON: planning decides
    {("a", "b"): 1},
])
def test_an_object_that_may_ask_for_nvidia_is_planned(data: dict[str, Any]) -> None:
    assert may_ask_for_nvidia(data)


@pytest.mark.parametrize("data", [
    {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]},
                        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}}},
    {"spec": {"containers": [{"resources": {"limits": {"amd.com/gpu": 1, 7: "x"}}}]}},
    {"spec": {"note": "nvidia.com", "NVIDIA.com/gpu": 1, "x.nvidia.com/gpu": 1}},
])
def test_an_object_without_an_nvidia_key_is_left_as_it_is(data: dict[str, Any]) -> None:
    assert not may_ask_for_nvidia(data)
    assert in_memory_converter(ConvertOptions(DEFAULT))(data) is None


@pytest.mark.parametrize("tree", TREES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_skipping_changes_no_conversion(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    objects = _objects(tree)
    if not objects:
        pytest.skip("no objects: a chart's templates are not read as objects")
    skipping = _converted(objects)
    monkeypatch.setattr(memory, "may_ask_for_nvidia", lambda data: True)
    assert skipping == _converted(objects)


def test_the_examples_have_objects_skipped_and_objects_converted() -> None:
    """The comparison above covers both sides on the examples alone."""
    objects = _objects(ROOT / "examples")
    assert any(not may_ask_for_nvidia(data) for data in objects)
    assert any(converted is not None for converted in _converted(objects))


def _objects(tree: Path) -> list[Any]:
    return [data for data, _ in expand_lists(
        item.data for item in FileSource([str(tree)], lines=False).items()
        if isinstance(item, SourceObject) and not item.listing)]


def _converted(objects: list[Any]) -> list[Any]:
    convert = in_memory_converter(ConvertOptions(DEFAULT), existing=objects)
    return [convert(data) for data in objects]
