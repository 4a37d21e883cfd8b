"""The typed check decodes with the cyclic collector paused (issue 32: across 100,000 pods
its tracked lists and dicts set off collections that walk every long-lived object, a tenth
of verify's time), and leaves the collector as it found it, even when a decoding fails."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from gpudra.sources import shapes
from gpudra.k8s.workloads import WorkloadTable

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 1, "template": {"spec": POD["spec"]}}}
BAD_POD = {**POD, "spec": {"nodeName": 5}}


@pytest.mark.parametrize("obj", [POD, DEPLOYMENT, BAD_POD])
@pytest.mark.parametrize("enabled", [True, False])
def test_decoding_pauses_the_collector_and_restores_it(
        obj: dict[str, Any], enabled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    original = shapes.msgspec.convert

    def recording(value: Any, declared: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(value, declared, *args, **kwargs)

    monkeypatch.setattr(shapes.msgspec, "convert", recording)
    (gc.enable if enabled else gc.disable)()
    try:
        shapes.object_problem(obj, WorkloadTable())
        shapes.decoded_pod(obj, WorkloadTable())
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
    assert seen and not any(seen)
