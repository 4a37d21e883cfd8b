"""Target-version parsing and the per-release DRA facts (docs/dra-reference.md 1.1, 5, 6)."""

from __future__ import annotations

import pytest

from gpudra.dra.versions import DEFAULT, FEATURES, TargetVersion
from gpudra.errors import UsageError


@pytest.mark.parametrize(("text", "minor"), [
    ("1.34", 34), ("v1.34", 34), ("1.34.2", 34), ("v1.32.0", 32), (" 1.37 ", 37),
    ("v1.35.1-gke.1200", 35), ("1.33.4+k3s1", 33),
])
def test_parse_accepts_common_spellings(text: str, minor: int) -> None:
    assert TargetVersion.parse(text) == TargetVersion(minor)


@pytest.mark.parametrize("text", ["1.31", "v1.30.4", "1.38", "2.0", "0.34"])
def test_parse_rejects_out_of_range_with_the_range(text: str) -> None:
    with pytest.raises(UsageError, match=r"1\.32 to 1\.37"):
        TargetVersion.parse(text)


@pytest.mark.parametrize("text", ["", "latest", "1", "1.x", "v1.34.2.1"])
def test_parse_rejects_garbage(text: str) -> None:
    with pytest.raises(UsageError, match="not a Kubernetes version"):
        TargetVersion.parse(text)


def test_default_is_newest_and_versions_order() -> None:
    assert DEFAULT == TargetVersion(37) == max(TargetVersion.all())
    assert [str(v) for v in TargetVersion.all()] == [f"1.{m}" for m in range(32, 38)]
    assert TargetVersion(32) < TargetVersion(36)


@pytest.mark.parametrize(("minor", "api", "flat", "served"), [
    (32, "resource.k8s.io/v1beta1", True, False),
    (33, "resource.k8s.io/v1beta2", False, False),
    (34, "resource.k8s.io/v1", False, True),
    (35, "resource.k8s.io/v1", False, True),
    (36, "resource.k8s.io/v1", False, True),
    (37, "resource.k8s.io/v1", False, True),
])
def test_api_version_and_shape(minor: int, api: str, flat: bool, served: bool) -> None:
    target = TargetVersion(minor)
    assert target.resource_api_version == api
    assert target.flat_requests is flat
    assert target.served_by_default is served


# (feature, minor) -> (available, stage, default_on)
@pytest.mark.parametrize(("feature", "minor", "expected"), [
    ("firstAvailable", 32, (False, None, False)),
    ("firstAvailable", 33, (True, "alpha", False)),
    ("firstAvailable", 34, (True, "beta", True)),
    ("firstAvailable", 36, (True, "GA", True)),
    ("extendedResourceName", 33, (False, None, False)),
    ("extendedResourceName", 34, (True, "alpha", False)),
    ("extendedResourceName", 35, (True, "alpha", False)),
    ("extendedResourceName", 36, (True, "beta", True)),
    ("extendedResourceName", 37, (True, "GA", True)),
    ("adminAccess", 32, (True, "alpha", False)),
    ("adminAccess", 34, (True, "beta", True)),
    ("adminAccess", 36, (True, "GA", True)),
])
def test_supports(feature: str, minor: int, expected: tuple[bool, str | None, bool]) -> None:
    support = TargetVersion(minor).supports(feature)
    assert (support.available, support.stage, support.default_on) == expected
    assert support.gate is not None and support.gate.startswith("DRA")
    assert support.note


def test_supports_notes_say_how_to_enable() -> None:
    note = TargetVersion(35).supports("extendedResourceName").note
    assert "DRAExtendedResource" in note and "alpha" in note


def test_every_feature_answers_for_every_target() -> None:
    for target in TargetVersion.all():
        for feature in FEATURES:
            assert target.supports(feature).feature == feature


def test_unknown_feature_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="known: firstAvailable"):
        DEFAULT.supports("sharing")


@pytest.mark.parametrize(("minor", "on"), [(32, False), (33, False), (35, False), (36, True),
                                           (37, True)])
def test_plan_takes_its_gates_from_the_target(minor: int, on: bool) -> None:
    """Consumable capacity, partitionable devices and device taints are on by default from
    1.36 (kubernetes v1.37.2 pkg/features/kube_features.go); plan models them as the target
    release has them, not as the newest one does."""
    from gpudra.plan.engine import PlanOptions

    options = PlanOptions.for_target(TargetVersion(minor), explain=False)
    assert (options.consumable_capacity, options.partitionable_devices,
            options.device_taints) == (on, on, on)
    assert not options.explain
    assert PlanOptions().consumable_capacity is DEFAULT.supports(
        "allowMultipleAllocations").default_on is True
