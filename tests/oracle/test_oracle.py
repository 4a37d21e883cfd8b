"""The oracle itself: pinned releases, the API server's wording, and what happens without Go."""

from __future__ import annotations

import pytest

from tests.oracle import client, fixtures
from tests.oracle.client import GoMissing, Oracle, OracleError

RELEASE_MODULES = ("k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver",
                   "k8s.io/component-base", "k8s.io/dynamic-resource-allocation")


@pytest.mark.parametrize("fixture, version", [("oracle", "v0.37.2"), ("oracle_132", "v0.32.13")])
def test_every_release_module_is_pinned_to_one_release(fixture: str, version: str,
                                                       request: pytest.FixtureRequest) -> None:
    running: Oracle = request.getfixturevalue(fixture)
    modules = running.version["modules"]
    assert {name: modules[name] for name in RELEASE_MODULES} == dict.fromkeys(RELEASE_MODULES,
                                                                              version)
    assert running.kubernetes == "v1." + version.removeprefix("v0.")


def test_strict_decoding_words_errors_as_the_api_server(oracle: Oracle) -> None:
    flat = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu"}]}}}
    decoded = oracle.decode(flat)
    assert decoded.registered and decoded.fatal is None
    assert decoded.strict == ('unknown field "spec.devices.requests[0].deviceClassName"',)
    assert decoded.message == ('ResourceClaim in version "v1" cannot be handled as a '
                               'ResourceClaim: strict decoding error: unknown field '
                               '"spec.devices.requests[0].deviceClassName"')
    twice = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "name": "b"}}'
    assert oracle.decode(twice).strict == ('duplicate field "metadata.name"',)
    wrong = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
             "spec": {"parallelism": "two"}}
    assert "cannot unmarshal string" in (oracle.decode(wrong).fatal or "")
    crd = oracle.decode({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})
    assert not crd.registered and crd.errors == ()


def test_the_1_32_types_are_1_32s(oracle: Oracle, oracle_132: Oracle) -> None:
    template = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": [
                    {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "g"}]}]}}}}
    assert oracle.decode(template).strict == ()
    assert oracle_132.decode(template).strict == (
        'unknown field "spec.spec.devices.requests[0].firstAvailable"',)
    assert not oracle_132.decode({**template, "apiVersion": "resource.k8s.io/v1"}).registered


def test_a_bad_request_is_an_error_not_an_answer(oracle: Oracle) -> None:
    with pytest.raises(OracleError, match="unknown op"):
        oracle.request(op="nosuch")
    with pytest.raises(OracleError, match='unknown field "colour"'):
        oracle.request(op="cel", expression="true", devices=[{"driver": "d", "colour": "x"}])
    assert oracle.request(op="version")["release"] == "1.37"  # still answering


@pytest.mark.parametrize("env, required", [
    ({}, False), ({"CI": "true"}, True), ({"CI": "false"}, False), ({"CI": "0"}, False),
    ({"GPUDRA_REQUIRE_GO": "1"}, True), ({"GPUDRA_REQUIRE_GO": "0"}, False)])
def test_ci_requires_go(env: dict[str, str], required: bool,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GPUDRA_REQUIRE_GO", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert client.go_required() is required


@pytest.mark.parametrize("ci, outcome", [(False, pytest.skip.Exception),
                                         (True, pytest.fail.Exception)])
def test_without_go_skips_on_a_developer_machine_and_fails_in_ci(
        ci: bool, outcome: type[BaseException], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client.shutil, "which", lambda name: None)
    monkeypatch.delenv("GPUDRA_REQUIRE_GO", raising=False)
    monkeypatch.setenv("CI", "true") if ci else monkeypatch.delenv("CI", raising=False)
    with pytest.raises(GoMissing):
        client.build("1.37")
    with pytest.raises(outcome, match="Go is not on PATH"):
        fixtures._start("1.37")


def test_builds_are_cached_by_source_hash(oracle: Oracle) -> None:
    assert client.build("1.37") == oracle.binary  # the same sources: no rebuild
    assert oracle.binary.parent == client.cache_dir()
