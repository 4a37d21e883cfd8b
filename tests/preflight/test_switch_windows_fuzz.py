"""Hostile claims and pods for CLUSTER008's switch windows (gpudra.dra.allocations and the
GPU-holder pods preflight reads): whatever shape they have, the check judges, never breaks."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.dra.allocations import allocation_node, unpublished_allocations
from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.cluster.device_plugin import check_double_counting
from tests.preflight.cluster_case_data import build_snapshot

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10), st.text(max_size=8),
                    st.sampled_from(["gpu.nvidia.com", "gpu-1", "gpu-0", "metadata.name", "In",
                                     "Running", "Pending", "8"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["status", "allocation", "devices", "results", "driver",
                                     "pool", "device", "reservedFor", "name", "nodeSelector",
                                     "nodeSelectorTerms", "matchFields", "key", "operator",
                                     "values", "spec", "nodeName", "containers", "resources",
                                     "limits", "nvidia.com/gpu", "phase", "metadata",
                                     "namespace"]), inner, max_size=4)), max_leaves=20)


def _claim(status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ml"}, "status": status}


def _pod(spec: Any, status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": status}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claim_status=JSON, pod_spec=JSON, pod_status=JSON, allocatable=JSON)
def test_hostile_claims_and_pods_are_judged(claim_status: Any, pod_spec: Any, pod_status: Any,
                                            allocatable: Any) -> None:
    snapshot = build_snapshot({"snapshot": {"objects": {
        "nodes": [{"metadata": {"name": "gpu-1"}, "status": {"allocatable": allocatable}},
                  {"metadata": {"name": "gpu-2"}, "status": {"allocatable": {
                      "nvidia.com/gpu": "8"}}}],
        "resourceclaims": [_claim(claim_status)],
        "gpuholders": [_pod(pod_spec, pod_status)]}}})
    got = check_double_counting(snapshot)
    assert got.outcome in (CheckOutcome.PASS, CheckOutcome.FAIL), got.message
    unpublished_allocations([_claim(claim_status)], [{"spec": claim_status}])
    allocation_node(claim_status if isinstance(claim_status, dict) else {})
