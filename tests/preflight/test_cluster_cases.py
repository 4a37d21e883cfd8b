"""Data-driven cluster-tier tests: tests/preflight/cluster_cases/<CHECK>.yaml, judged on the
snapshots the cases describe (tests/preflight/cluster_case_data.py has the format).
test_cluster_cases_fakeapi.py runs the same cases through the fake API server.

Every cluster check must have a case for every outcome it declares.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.cluster import CLUSTER_CHECKS, run_cluster_checks
from gpudra.preflight.cluster.snapshot import DISCOVERY, VERSION, ClusterSnapshot
from tests.preflight.cluster_case_data import (
    Case,
    assert_expected,
    build_options,
    build_snapshot,
    load_cases,
)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in load_cases()])
def test_cluster_case(case: Case) -> None:
    results = run_cluster_checks(build_snapshot(case.spec), build_options(case.spec))
    assert [r.id for r in results] == [c.id for c in CLUSTER_CHECKS]
    assert_expected(next(r for r in results if r.id == case.check), case.spec["expect"])


def test_every_cluster_check_has_a_case_per_outcome() -> None:
    covered: dict[str, set[str]] = {}
    for case in load_cases():
        covered.setdefault(case.check, set()).add(case.outcome)
    for info in CLUSTER_CHECKS:
        declared = {o.value for o in info.outcomes}
        assert info.id in covered, f"{info.id} has no tests/preflight/cluster_cases/{info.id}.yaml"
        assert declared <= covered[info.id], (info.id, declared - covered[info.id])
        assert covered[info.id] <= declared, (info.id, "a case expects an undeclared outcome")


def test_the_healthy_base_passes_every_check() -> None:
    results = run_cluster_checks(build_snapshot({}))
    assert {r.id: r.outcome.value for r in results} == \
        {info.id: "pass" for info in CLUSTER_CHECKS}, [(r.id, r.message) for r in results]


def test_an_empty_snapshot_is_unavailable_everywhere() -> None:
    """Nothing read means nothing judged: no check may pass on missing input."""
    results = run_cluster_checks(ClusterSnapshot())
    assert {r.outcome for r in results} == {CheckOutcome.UNAVAILABLE}, \
        [(r.id, r.outcome.value, r.message) for r in results]


# What each check cannot do without: with any of these unreadable (403), the check must say
# `unavailable`. Keys are resource keys of gpudra.preflight.cluster.snapshot, plus VERSION and
# DISCOVERY. Optional inputs (pods for details, nodes for MIG hints) are not listed.
REQUIRED = {
    "CLUSTER001": (VERSION, DISCOVERY),
    "CLUSTER002": ("nodes", VERSION),
    "CLUSTER003": ("nodes",),
    "CLUSTER004": ("deviceclasses",),
    "CLUSTER005": ("nodes", "resourceslices"),
    "CLUSTER006": ("daemonsets",),
    "CLUSTER007": ("daemonsets", "nodes"),
    "CLUSTER008": ("nodes", "resourceslices"),
    "CLUSTER009": ("deviceclasses",),
    "CLUSTER010": ("clusterpolicies", "gpuclusters"),
    "CLUSTER011": ("resourcequotas",),
    "CLUSTER012": ("deployments",),
    "CLUSTER014": ("clusterqueues",),
    "CLUSTER015": ("prometheusrules",),
}
_CRD_GROUPS = {"clusterpolicies": ("nvidia.com", ["v1", "v1alpha1"]),
               "gpuclusters": ("nvidia.com", ["v1", "v1alpha1"]),
               "clusterqueues": ("kueue.x-k8s.io", ["v1beta1"]),
               "prometheusrules": ("monitoring.coreos.com", ["v1"])}


@pytest.mark.parametrize(("check_id", "key"), [(c, k) for c, keys in REQUIRED.items()
                                                for k in keys])
def test_an_unreadable_required_input_is_unavailable(check_id: str, key: str) -> None:
    case: dict[str, Any] = {"snapshot": {"objects": {}, "unavailable": {}}}
    reason = f"403: {key} is forbidden: User \"auditor\" cannot list resource \"{key}\""
    if key == VERSION:
        case["snapshot"]["server_version"] = None
    elif key == DISCOVERY:
        case["snapshot"]["api_groups"] = None
    else:
        case["snapshot"]["objects"][key] = None
        if key in _CRD_GROUPS:  # a CRD: served (so 403 is not "not installed")
            group, versions = _CRD_GROUPS[key]
            case["snapshot"]["api_groups"] = {group: versions}
            for sibling, (other, _) in _CRD_GROUPS.items():
                if other == group and sibling != key:
                    case["snapshot"]["objects"][sibling] = []
    case["snapshot"]["unavailable"][key] = reason
    results = run_cluster_checks(build_snapshot(case))
    got = next(r for r in results if r.id == check_id)
    assert got.outcome is CheckOutcome.UNAVAILABLE, (got.outcome, got.message)
    if key not in (VERSION, DISCOVERY):
        assert "403" in got.message, got.message


def test_karpenter_unknown_when_nothing_tells() -> None:
    """CLUSTER013 needs either its Deployment or the NodePool API; with neither it is unknown."""
    case = {"snapshot": {"api_groups": None, "objects": {"deployments": None},
                         "unavailable": {"deployments": "403: forbidden"}}}
    got = next(r for r in run_cluster_checks(build_snapshot(case)) if r.id == "CLUSTER013")
    assert got.outcome is CheckOutcome.UNAVAILABLE and "403" in got.message
