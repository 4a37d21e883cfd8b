"""`gpudra guard` without a cluster: what it writes for each strategy and action, where, and its
usage errors. The policy's behaviour is tested on real API servers
(tests/controlplane/test_guard.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.run import invoke

STAGES = [
    ((), "claims", ["Warn", "Audit"]),
    (("--action", "deny"), "claims", ["Deny", "Audit"]),
    (("--strategy", "bridge"), "bridge", ["Warn", "Audit"]),
    (("--strategy", "bridge", "--action", "deny"), "bridge", ["Deny", "Audit"]),
]


@pytest.mark.parametrize("args, strategy, actions", STAGES)
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_writes_the_policy_and_the_binding(args: tuple[str, ...], strategy: str,
                                           actions: list[str], fmt: str) -> None:
    result = invoke("guard", *args, "-o", fmt)
    assert result.exit_code == 0, result.stderr
    objects = (json.loads(result.stdout)["items"] if fmt == "json"
               else list(yaml.safe_load_all(result.stdout)))
    policy, binding = objects
    assert policy["kind"] == "ValidatingAdmissionPolicy"
    assert policy["metadata"]["annotations"]["gpudra.io/guard-strategy"] == strategy
    assert binding["spec"]["validationActions"] == actions
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["matchResources"]["namespaceSelector"] == {
        "matchLabels": {"gpudra.io/migrated": "true"}}


@pytest.mark.parametrize("strategy, refused, allowed", [
    ("claims", ["'nvidia.com/gpu'", "nvidia.com/mig-", ".shared"], []),
    ("bridge", ["nvidia.com/mig-", ".shared"], ["'nvidia.com/gpu'"]),
])
def test_the_keys_each_strategy_refuses(strategy: str, refused: list[str],
                                        allowed: list[str]) -> None:
    policy = yaml.safe_load_all(invoke("guard", "--strategy", strategy).stdout).__next__()
    asking = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}["asking"]
    assert [k for k in refused if k not in asking] == []
    assert [k for k in allowed if k in asking] == []


def test_output_dir(tmp_path: Path) -> None:
    result = invoke("guard", "--action", "deny", "--output-dir", str(tmp_path / "guard"))
    assert result.exit_code == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / "guard").iterdir())
    assert written == ["binding.yaml", "policy.yaml"]
    binding = yaml.safe_load((tmp_path / "guard" / "binding.yaml").read_text())
    assert binding["spec"]["validationActions"] == ["Deny", "Audit"]


@pytest.mark.parametrize("args, message", [
    (("--action", "block"), "--action must be warn or deny, not 'block'"),
    (("--strategy", "mig"), "--strategy must be claims (also spelled rewrite) or bridge, not 'mig'"),
    (("-o", "table"), "-o must be yaml or json, not 'table'"),
])
def test_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = invoke("guard", *args)
    assert (result.exit_code, result.stderr.strip()) == (2, f"gpudra: error: {message}")


def test_output_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = invoke("guard", "--output-dir", str(tmp_path / "f"))
    assert result.exit_code == 2 and "not a directory" in result.stderr
