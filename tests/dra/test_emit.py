"""Emitted DRA objects, validated strictly against each target release's own schemas.

Every object is checked with StrictValidator (no unknown fields) for the release it was built
for, and the validator is shown to reject the two shapes the blog posts get wrong, so a passing
test means something.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudra.dra import emit
from gpudra.dra.emit import NameRegistry, dns_label, dns_subdomain
from gpudra.dra.validate import StrictValidator, UnavailableError, semantic_errors
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.errors import UsageError

pytest.importorskip("kubernetes_validate")

TARGETS = TargetVersion.all()
IDS = [str(t) for t in TARGETS]
WRAPPED = [t for t in TARGETS if not t.flat_requests]
BRIDGED = [t for t in TARGETS if t.minor >= 34]
Validators = dict[TargetVersion, StrictValidator]
H100 = ('device.attributes["gpu.nvidia.com"].productName.replace(" ", "-") '
        '== "NVIDIA-H100-80GB-HBM3"')
MEMORY = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
MIG_1G = 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"'

LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@pytest.fixture(scope="module")
def validators() -> dict[TargetVersion, StrictValidator]:
    """One validator per release for the whole module: schemas are loaded once each."""
    return {target: StrictValidator(target) for target in TARGETS}


def _requests(target: TargetVersion) -> dict[str, list[dict[str, Any]]]:
    """The request mixes each target is exercised with."""
    return {
        "one": [emit.device_request("gpu", emit.GPU_CLASS, 1, [], target=target)],
        "four": [emit.device_request("gpus", emit.GPU_CLASS, 4, [], target=target)],
        "one-selected": [emit.device_request("gpu", emit.GPU_CLASS, 1, [H100], target=target)],
        "four-selected": [emit.device_request("gpus", emit.GPU_CLASS, 4, [H100, MEMORY], target=target)],
        "mig": [emit.device_request("mig", emit.MIG_CLASS, 1, [MIG_1G], target=target)],
        "two-containers": [emit.device_request("trainer", emit.GPU_CLASS, 4, [H100], target=target),
                           emit.device_request("evaluator", emit.GPU_CLASS, 1, [H100], target=target)],
    }


def _one_gpu(target: TargetVersion) -> dict[str, Any]:
    return emit.device_request("gpu", emit.GPU_CLASS, 1, [], target=target)


def _pod(template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "ml"},
        "spec": {
            "resourceClaims": [emit.pod_claim_entry("gpu", template=template)],
            "containers": [{
                "name": "main",
                "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                "resources": {"limits": {"memory": "1Gi"},
                              "claims": [emit.container_claim("gpu", "trainer")]},
            }],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                             "effect": "NoSchedule"}],
        },
    }


# --- every target: emitted objects are strictly valid ---------------------------------------------

@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_templates_and_claims_validate(target: TargetVersion,
                                       validators: Validators) -> None:
    validator = validators[target]
    for label, requests in _requests(target).items():
        for obj in (emit.claim_template(f"{label}-tmpl", "ml", requests, target),
                    emit.claim(f"{label}-claim", "ml", requests, target)):
            assert obj["apiVersion"] == target.resource_api_version
            assert validator.errors(obj) == [], (label, obj["kind"])


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_pod_referencing_template_validates(target: TargetVersion,
                                            validators: Validators) -> None:
    assert validators[target].errors(_pod("train-gpu")) == []


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_shared_claim_with_opaque_config_validates(
        target: TargetVersion, validators: Validators) -> None:
    parameters = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                  "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}
    obj = emit.claim("shared-gpu", "ml", [_one_gpu(target)], target,
                     config=[emit.opaque_config(["gpu"], parameters)])
    assert validators[target].errors(obj) == []


@pytest.mark.parametrize("target", BRIDGED, ids=str)
def test_bridge_device_class_validates(target: TargetVersion,
                                       validators: Validators) -> None:
    obj = emit.device_class_bridge(target)
    assert obj["metadata"] == {"name": "gpu.nvidia.com"}
    assert obj["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert obj["spec"]["selectors"] == [{"cel": {"expression": emit.GPU_CLASS_SELECTOR}}]
    assert validators[target].errors(obj) == []


@pytest.mark.parametrize("minor", [32, 33])
def test_bridge_refused_before_1_34(minor: int) -> None:
    with pytest.raises(UsageError, match="1.34 or newer"):
        emit.device_class_bridge(TargetVersion(minor))


def test_cluster_scoped_metadata_has_no_namespace() -> None:
    obj = emit.claim("c", None, [emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT)], DEFAULT)
    assert obj["metadata"] == {"name": "c"}


# --- shapes ---------------------------------------------------------------------------------------

def test_v1beta1_request_is_flat() -> None:
    request = emit.device_request("gpus", emit.GPU_CLASS, 4, [H100], target=TargetVersion(32))
    assert request == {"name": "gpus", "deviceClassName": "gpu.nvidia.com", "count": 4,
                       "selectors": [{"cel": {"expression": H100}}]}
    assert list(request) == ["name", "deviceClassName", "count", "selectors"]


@pytest.mark.parametrize("target", WRAPPED, ids=str)
def test_v1beta2_and_v1_requests_use_exactly(target: TargetVersion) -> None:
    request = emit.device_request("gpus", emit.GPU_CLASS, 4, [H100], target=target)
    assert list(request) == ["name", "exactly"]
    assert list(request["exactly"]) == ["deviceClassName", "count", "selectors"]


def test_count_one_and_no_selectors_are_left_out() -> None:
    assert emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT) == {
        "name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
    with pytest.raises(ValueError, match="at least 1"):
        emit.device_request("gpu", emit.GPU_CLASS, 0, target=DEFAULT)


def test_template_has_inner_spec_and_key_order() -> None:
    obj = emit.claim_template("t", "ml", [emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT)],
                              DEFAULT)
    assert list(obj) == ["apiVersion", "kind", "metadata", "spec"]
    assert list(obj["spec"]) == ["spec"]
    assert obj["spec"]["spec"]["devices"]["requests"][0]["name"] == "gpu"


def test_mixing_shapes_is_refused() -> None:
    flat = emit.device_request("gpu", emit.GPU_CLASS, target=TargetVersion(32))
    wrapped = emit.device_request("gpu", emit.GPU_CLASS, target=TargetVersion(34))
    with pytest.raises(ValueError, match="flat"):
        emit.claim("c", "ml", [flat], TargetVersion(34))
    with pytest.raises(ValueError, match="exactly"):
        emit.claim_template("c", "ml", [wrapped], TargetVersion(32))


def test_quota_keys() -> None:
    assert emit.quota_keys("gpu.nvidia.com", 8) == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "8",
        "count/resourceclaims.resource.k8s.io": "8",
    }
    assert emit.quota_keys("mig.nvidia.com", 14, claims=20)[emit.QUOTA_CLAIM_COUNT] == "20"


def test_pod_side_entries() -> None:
    assert emit.pod_claim_entry("gpu", template="t") == {
        "name": "gpu", "resourceClaimTemplateName": "t"}
    assert emit.pod_claim_entry("gpu", claim="c") == {"name": "gpu", "resourceClaimName": "c"}
    for bad in ({}, {"template": "t", "claim": "c"}):
        with pytest.raises(ValueError, match="exactly one"):
            emit.pod_claim_entry("gpu", **bad)
    assert emit.container_claim("gpu") == {"name": "gpu"}
    assert emit.container_claim("gpu", "trainer") == {"name": "gpu", "request": "trainer"}


# --- the validator can fail ---------------------------------------------------------------------

@pytest.mark.parametrize("target", WRAPPED, ids=str)
def test_rejects_flat_request_in_wrapped_api(target: TargetVersion,
                                             validators: Validators) -> None:
    obj = emit.claim("c", "ml", [_one_gpu(target)], target)
    obj["spec"]["devices"]["requests"] = [{"name": "gpu", "deviceClassName": "gpu.nvidia.com",
                                           "count": 1}]
    errors = validators[target].errors(obj)
    assert any(e.startswith("spec.devices.requests[0]: Additional properties are not allowed")
               and "'count'" in e and "'deviceClassName'" in e for e in errors), errors
    assert any("exactly one of exactly or firstAvailable" in e for e in errors), errors


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_rejects_template_without_inner_spec(target: TargetVersion,
                                             validators: Validators) -> None:
    obj = emit.claim_template("t", "ml", [_one_gpu(target)], target)
    obj["spec"] = obj["spec"]["spec"]  # spec.devices directly under spec, the common mistake
    errors = validators[target].errors(obj)
    assert "spec: Additional properties are not allowed ('devices' was unexpected)" in errors
    assert "spec.spec: a claim spec (devices.requests) is required" in errors
    # The schemas mark the inner spec required up to 1.36 only; 1.37's dropped `required`.
    assert ("spec: 'spec' is a required property" in errors) is (target.minor <= 36)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_rejects_template_with_empty_inner_spec(
        target: TargetVersion, validators: Validators) -> None:
    obj = emit.claim_template("t", "ml", [_one_gpu(target)], target)
    for inner in ({}, None, {"devices": {"requests": []}}):
        obj["spec"] = {"spec": inner}
        assert validators[target].errors(obj), inner
    shared = emit.claim("c", "ml", [_one_gpu(target)], target)
    del shared["spec"]  # 1.37's schemas no longer require `spec`; our check still does
    errors = validators[target].errors(shared)
    assert "spec: a claim spec (devices.requests) is required" in errors
    assert ("(root): 'spec' is a required property" in errors) is (target.minor <= 36)


def test_rejects_wrapped_request_in_v1beta1(
        validators: Validators) -> None:
    target = TargetVersion(32)
    obj = emit.claim("c", "ml", [_one_gpu(target)], target)
    obj["spec"]["devices"]["requests"] = [{"name": "gpu", "exactly": {"deviceClassName": "x"}}]
    errors = validators[target].errors(obj)
    assert any("'exactly' was unexpected" in e for e in errors), errors


def test_request_needs_exactly_or_first_available(
        validators: Validators) -> None:
    """The schema only requires `name`; the one-of rule is ours (apiserver validation)."""
    target = TargetVersion(37)
    obj = emit.claim("c", "ml", [emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT)], target)
    obj["spec"]["devices"]["requests"] = [{"name": "gpu"}]
    assert validators[target].errors(obj) == [
        "spec.devices.requests[0]: exactly one of exactly or firstAvailable is required"]
    both = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"},
            "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}]}
    obj["spec"]["devices"]["requests"] = [both]
    assert validators[target].errors(obj) == [
        "spec.devices.requests[0]: exactly one of exactly or firstAvailable is required"]


def test_v1_does_not_exist_in_1_33(validators: Validators) -> None:
    obj = emit.claim("c", "ml", [emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT)], TargetVersion(37))
    assert validators[TargetVersion(33)].errors(obj) == [
        "(root): ResourceClaim resource.k8s.io/v1 does not exist in Kubernetes 1.33"]


def test_core_resource_claim_struct_is_not_an_object(
        validators: Validators) -> None:
    """`resourceclaim-v1.json` is the container-claim struct; it must not validate documents."""
    errors = validators[TargetVersion(37)].errors({"apiVersion": "v1", "kind": "ResourceClaim"})
    assert errors == ["(root): ResourceClaim v1 does not exist in Kubernetes 1.37"]


def test_pod_semantics() -> None:
    pod = _pod("t")
    pod["spec"]["resourceClaims"][0]["resourceClaimName"] = "c"
    pod["spec"]["containers"][0]["resources"]["claims"][0]["name"] = "other"
    assert semantic_errors(pod) == [
        ("spec.resourceClaims[0]: exactly one of resourceClaimName or "
         "resourceClaimTemplateName is required"),
        "spec.containers[0].resources.claims[0].name: 'other' is not in spec.resourceClaims",
    ]
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": _pod("t")}}
    assert semantic_errors(job) == []


def test_duplicate_and_invalid_request_names() -> None:
    obj = emit.claim("c", "ml", [emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT),
                                 emit.device_request("gpu", emit.GPU_CLASS, target=DEFAULT),
                                 emit.device_request("Bad_Name", emit.GPU_CLASS, target=DEFAULT)],
                     DEFAULT)
    assert semantic_errors(obj) == [
        "spec.devices.requests[1].name: duplicate request name 'gpu'",
        "spec.devices.requests[2].name: 'Bad_Name' is not a DNS label",
    ]


@pytest.mark.parametrize("missing", ["kubernetes_validate", "jsonschema"])
def test_missing_schemas_are_a_clear_error(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """A plain `pip install .` has neither package: an UnavailableError, never ImportError."""
    import builtins

    real_import = builtins.__import__

    def no_kv(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == missing:
            raise ImportError(f"No module named {missing!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_kv)
    with pytest.raises(UnavailableError, match=r"kubernetes-validate>=1\.34"):
        StrictValidator(TargetVersion(34)).errors(_pod("t"))


# --- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("trainer", "trainer"),
    ("My_Container", "my-container"),
    ("--a__b--", "a-b"),
    ("a--b", "a--b"),            # already valid: unchanged
    ("gpu.nvidia.com", "gpu-nvidia-com"),
    ("Ünïcode 名前", "n-code"),
])
def test_dns_label_examples(text: str, expected: str) -> None:
    assert dns_label(text) == expected


def test_dns_label_never_empty_and_truncates() -> None:
    assert LABEL_RE.match(dns_label("___"))
    assert dns_label("___") != dns_label("!!!")
    long = dns_label("a" * 100)
    assert len(long) == 63 and long.startswith("a" * 54 + "-")


def test_dns_subdomain_examples() -> None:
    assert dns_subdomain("Train.BERT..gpu_") == "train.bert.gpu"
    assert dns_subdomain("gpu.nvidia.com") == "gpu.nvidia.com"
    assert dns_subdomain("a." + "b" * 300).startswith("a.bbb")
    assert len(dns_subdomain("a." + "b" * 300)) == 253


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), st.integers(min_value=10, max_value=63))
def test_dns_label_properties(text: str, max_len: int) -> None:
    name = dns_label(text, max_len)
    assert LABEL_RE.match(name) and 1 <= len(name) <= max_len
    assert dns_label(text, max_len) == name
    assert dns_label(name, max_len) == name  # valid names pass through


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_dns_subdomain_properties(text: str) -> None:
    name = dns_subdomain(text)
    assert SUBDOMAIN_RE.match(name) and 1 <= len(name) <= 253
    assert dns_subdomain(name) == name


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z0-9]{64,80}", fullmatch=True), st.text(max_size=20),
       st.text(max_size=20))
def test_names_differing_after_the_cut_stay_distinct(prefix: str, tail_a: str, tail_b: str) -> None:
    """Even tails that sanitise alike ('_' vs ':') stay apart: the hash is of the original."""
    if tail_a == tail_b:
        return
    assert dns_label(prefix + tail_a) != dns_label(prefix + tail_b)
    long_prefix = prefix * 4
    assert dns_subdomain(long_prefix + tail_a) != dns_subdomain(long_prefix + tail_b)


def test_name_registry_is_per_namespace_and_deterministic() -> None:
    def run() -> list[str]:
        registry = NameRegistry()
        registry.reserve("train-gpu-2", "ml")
        return [registry.unique("train-gpu", "ml"), registry.unique("Train_GPU", "ml"),
                registry.unique("train-gpu", "ml"), registry.unique("train-gpu", "other"),
                registry.unique("train-gpu", None)]

    assert run() == run() == ["train-gpu", "train-gpu-3", "train-gpu-4", "train-gpu", "train-gpu"]


def test_name_registry_suffix_respects_max_len() -> None:
    registry = NameRegistry(dns_label, 63)
    first = registry.unique("a" * 80)
    second = registry.unique("a" * 80)
    assert first != second and len(second) <= 63 and second.endswith("-2")
    assert LABEL_RE.match(second)
