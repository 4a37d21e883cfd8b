"""Runtime-version and kubelet-skew judgements, as the cluster tier will call them."""

from __future__ import annotations

import pytest

from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.runtime import (
    containerd_traits,
    judge_kubelet_skew,
    judge_runtime_version,
    parse_version,
)

RUNTIME_CASES = [
    # containerRuntimeVersion, outcome, message fragment
    ("containerd://1.6.33", CheckOutcome.FAIL, "no CDI support (added in 1.7.0)"),
    ("containerd://1.7.0", CheckOutcome.FAIL, "ignores the CDI devices"),
    ("containerd://1.7.1", CheckOutcome.FAIL, "read from 1.7.2"),
    ("containerd://1.7.2", CheckOutcome.WARN, "leaves it off unless enable_cdi = true"),
    ("containerd://1.7.27", CheckOutcome.WARN, "containerd 1.7.27"),
    ("containerd://1.7.27-k3s1", CheckOutcome.WARN, "1.7.27-k3s1"),
    ("containerd://1.7.27-0ubuntu1", CheckOutcome.WARN, "1.7.27-0ubuntu1"),
    ("containerd://1.7.2-rc.1", CheckOutcome.FAIL, "1.7.2-rc.1"),  # a pre-release sorts below
    ("containerd://2.0.0-rc.6", CheckOutcome.WARN, "2.0.0-rc.6"),
    ("containerd://2.0.0", CheckOutcome.PASS, "on by default"),
    ("containerd://2.1.4", CheckOutcome.PASS, "containerd 2.1.4"),
    ("containerd://2.3.0", CheckOutcome.PASS, "enable_cdi is deprecated"),
    ("containerd://v2.2.1", CheckOutcome.PASS, "2.2.1"),
    ("cri-o://1.27.1", CheckOutcome.FAIL, "read from 1.28.0"),
    ("cri-o://1.28.0", CheckOutcome.PASS, "always on"),
    ("cri-o://1.36.3", CheckOutcome.PASS, "CRI-O 1.36.3"),
    ("docker://24.0.7", CheckOutcome.UNAVAILABLE, "cri-dockerd"),
    ("containerd://unknown", CheckOutcome.UNAVAILABLE, "cannot read a version"),
    ("remote://1.0", CheckOutcome.UNAVAILABLE, "unknown container runtime"),
    ("garbage", CheckOutcome.UNAVAILABLE, "unknown container runtime"),
    ("", CheckOutcome.UNAVAILABLE, "(empty)"),
]


@pytest.mark.parametrize(("raw", "outcome", "fragment"), RUNTIME_CASES)
def test_judge_runtime_version(raw: str, outcome: CheckOutcome, fragment: str) -> None:
    judged = judge_runtime_version(raw)
    assert judged.outcome is outcome, judged
    assert fragment in judged.message, judged
    assert (judged.remediation is None) == (outcome is CheckOutcome.PASS)


SKEW_CASES = [
    # kubelet, apiserver, outcome, fragment
    ("v1.34.2", "v1.34.2", CheckOutcome.PASS, "within the supported skew"),
    ("v1.33.5", "v1.36.0", CheckOutcome.PASS, "within"),  # three minors older is allowed
    ("v1.32.9", "v1.36.0", CheckOutcome.FAIL, "4 minor versions behind"),
    ("v1.35.0", "v1.34.9", CheckOutcome.FAIL, "newer than kube-apiserver"),
    ("v1.24.17", "v1.26.0", CheckOutcome.PASS, "within"),  # before 1.25: two minors allowed
    ("v1.24.17", "v1.27.0", CheckOutcome.FAIL, "at most 2 supported"),
    ("v1.34.2-gke.1200", "v1.34.3-gke.100", CheckOutcome.PASS, "within"),
    ("v1.34.2+k3s1", "v1.35.0+k3s1", CheckOutcome.PASS, "within"),
    ("v1.34.1", "not-a-version", CheckOutcome.UNAVAILABLE, "cannot read a Kubernetes version"),
    ("v2.0.0", "v1.34.0", CheckOutcome.UNAVAILABLE, "only 1.x"),
]


@pytest.mark.parametrize(("kubelet", "apiserver", "outcome", "fragment"), SKEW_CASES)
def test_judge_kubelet_skew(kubelet: str, apiserver: str, outcome: CheckOutcome,
                            fragment: str) -> None:
    judged = judge_kubelet_skew(kubelet, apiserver)
    assert judged.outcome is outcome, judged
    assert fragment in judged.message, judged


def test_skew_remediation_names_the_oldest_supported_kubelet() -> None:
    judged = judge_kubelet_skew("v1.30.4", "v1.36.1")
    assert judged.remediation == "upgrade the kubelet to 1.33 or newer"


@pytest.mark.parametrize(("text", "expected"), [
    ("1.7.27", (1, 7, 27, True)),
    ("v2.1.4", (2, 1, 4, True)),
    ("1.34", (1, 34, 0, True)),
    ("2.0.0-rc.1", (2, 0, 0, False)),
    ("2.0.0-beta.0", (2, 0, 0, False)),
    ("1.34.2-gke.1200", (1, 34, 2, True)),
    ("1.7.27+unknown", (1, 7, 27, True)),
])
def test_parse_version(text: str, expected: tuple) -> None:
    version = parse_version(text)
    assert version is not None
    assert (version.major, version.minor, version.patch, version.is_release) == expected


@pytest.mark.parametrize("text", ["", "abc", "1", "1.x.2", "1.2.3 trailing"])
def test_parse_version_rejects(text: str) -> None:
    assert parse_version(text) is None


def test_parse_version_anywhere_finds_the_first_version_word() -> None:
    line = "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e81"
    assert str(parse_version(line, anywhere=True)) == "2.1.4"


def test_containerd_traits_by_release() -> None:
    def traits(v: str):
        parsed = parse_version(v)
        assert parsed is not None
        return containerd_traits(parsed)

    assert not traits("1.6.39").has_cdi
    assert traits("1.7.1").has_cdi and not traits("1.7.1").reads_cdi_devices_field
    assert traits("1.7.2").reads_cdi_devices_field and not traits("1.7.2").cdi_on_by_default
    assert traits("2.0.0").cdi_on_by_default and traits("2.0.0").newest_config_version == 3
    assert traits("2.2.7").newest_config_version == 3 and not traits("2.2.7").enable_cdi_deprecated
    assert traits("2.3.0").newest_config_version == 4 and traits("2.3.0").enable_cdi_deprecated
