"""Data-driven cluster-tier tests: tests/preflight/cluster_cases/<CHECK>.yaml.

Each case starts from a named snapshot in `_bases.yaml` (`base`, default `healthy`) and
changes it with `snapshot`:

- `server_version`: replaced (null: /version could not be read);
- `api_groups`: merged per group (a null value removes the group; `api_groups: null` as a
  whole means discovery could not be read);
- `objects`: replaced per resource key (a null value removes the key: not read / not served);
- `unavailable`: reasons per resource key, added.

`options` are ClusterOptions fields (`target_version: "1.36"`). `expect` has the `outcome`,
and fragments that must appear in `message`, `remediation` and `details` (each detail fragment
in some detail line); `no_message` fragments must not appear in the message.

Every cluster check must have a case for every outcome it declares.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.versions import TargetVersion
from gpudra.preflight.cluster import CLUSTER_CHECKS, ClusterOptions, run_cluster_checks
from gpudra.preflight.cluster.snapshot import DISCOVERY, VERSION, ClusterSnapshot
from gpudra.preflight.model import Outcome

CASES_DIR = Path(__file__).parent / "cluster_cases"
BASES = yaml.safe_load((CASES_DIR / "_bases.yaml").read_text())


def _case_files() -> list[Path]:
    return sorted(p for p in CASES_DIR.glob("CLUSTER*.yaml"))


def _load_cases():
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        for case in spec["cases"]:
            yield pytest.param(spec["check"], case, id=f"{spec['check']}-{case['name']}")


def build_snapshot(case: dict[str, Any]) -> ClusterSnapshot:
    data = copy.deepcopy(BASES[case.get("base", "healthy")])
    change = case.get("snapshot") or {}
    if "server_version" in change:
        data["server_version"] = change["server_version"]
    if "api_groups" in change:
        if change["api_groups"] is None:
            data["api_groups"] = None
        else:
            groups = data.get("api_groups") or {}
            for group, versions in change["api_groups"].items():
                if versions is None:
                    groups.pop(group, None)
                else:
                    groups[group] = versions
            data["api_groups"] = groups
    objects = data.get("objects") or {}
    for key, items in (change.get("objects") or {}).items():
        if items is None:
            objects.pop(key, None)
        else:
            objects[key] = items
    unavailable = {**(data.get("unavailable") or {}), **(change.get("unavailable") or {})}
    groups = data.get("api_groups")
    return ClusterSnapshot(
        server_version=data.get("server_version"),
        api_groups=None if groups is None else {g: tuple(v) for g, v in groups.items()},
        objects={k: tuple(v) for k, v in objects.items()},
        unavailable=unavailable,
        scopes=change.get("scopes") or {})


def build_options(case: dict[str, Any]) -> ClusterOptions:
    raw = case.get("options") or {}
    target = raw.get("target_version")
    return ClusterOptions(TargetVersion.parse(str(target)) if target else None)


@pytest.mark.parametrize(("check_id", "case"), list(_load_cases()))
def test_cluster_case(check_id: str, case: dict, ) -> None:
    results = run_cluster_checks(build_snapshot(case), build_options(case))
    assert [r.id for r in results] == [c.id for c in CLUSTER_CHECKS]
    got = next(r for r in results if r.id == check_id)
    want = case["expect"]
    shown = f"{got.outcome.value}: {got.message}\n  fix: {got.remediation}\n  " + \
        "\n  ".join(got.details)
    assert "gpudra could not judge this" not in got.message, shown
    assert got.outcome.value == want["outcome"], shown
    for fragment in _as_list(want.get("message")):
        assert fragment in got.message, (fragment, shown)
    for fragment in _as_list(want.get("no_message")):
        assert fragment not in got.message, (fragment, shown)
    for fragment in _as_list(want.get("remediation")):
        assert got.remediation and fragment in got.remediation, (fragment, shown)
    for fragment in _as_list(want.get("details")):
        assert any(fragment in d for d in got.details), (fragment, shown)
    if got.outcome is Outcome.PASS:
        assert got.remediation is None
    else:
        assert got.remediation, "every non-passing result says what to do"


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def test_every_cluster_check_has_a_case_per_outcome() -> None:
    covered: dict[str, set[str]] = {}
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        assert path.stem == spec["check"], path
        covered[spec["check"]] = {c["expect"]["outcome"] for c in spec["cases"]}
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
    assert {r.outcome for r in results} == {Outcome.UNAVAILABLE}, \
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
    assert got.outcome is Outcome.UNAVAILABLE, (got.outcome, got.message)
    if key not in (VERSION, DISCOVERY):
        assert "403" in got.message, got.message


def test_karpenter_unknown_when_nothing_tells() -> None:
    """CLUSTER013 needs either its Deployment or the NodePool API; with neither it is unknown."""
    case = {"snapshot": {"api_groups": None, "objects": {"deployments": None},
                         "unavailable": {"deployments": "403: forbidden"}}}
    got = next(r for r in run_cluster_checks(build_snapshot(case)) if r.id == "CLUSTER013")
    assert got.outcome is Outcome.UNAVAILABLE and "403" in got.message
