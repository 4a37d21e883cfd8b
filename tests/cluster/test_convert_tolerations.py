"""`convert --from-cluster` adds the nvidia.com/gpu toleration when the cluster's GPU nodes
carry the taint, and only then (issue 13 item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.fakeapi import FakeCluster

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _state(taints: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": "1.34.2", "token": "t", "objects": [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "namespace": "ml"},
         "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
             "metadata": {"labels": {"a": "b"}},
             "spec": {"containers": [{"name": "c", "image": "x",
                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"},
         "spec": {"taints": taints}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1"}}]}


def _tolerations(taints: list[dict[str, Any]], tmp_path: Path, *args: str) -> list:
    out = tmp_path / "out"
    with FakeCluster(_state(taints), tls=False) as fake:
        result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                          str(fake.kubeconfig), "--output-dir", str(out),
                                          *args], env={"HOME": "/nonexistent"})
    assert result.exit_code == 0, result.output
    deployment = next(yaml.safe_load_all((out / "ml/deployment-web.yaml").read_text()))
    return deployment["spec"]["template"]["spec"].get("tolerations", [])


GKE_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize("taints, args, expected", [
    ([GKE_TAINT], [], [TOLERATION]),
    ([], [], []),
    ([{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}], [], []),
    ([GKE_TAINT], ["--no-add-toleration"], []),
    ([], ["--add-toleration"], [TOLERATION]),
])
def test_toleration_follows_the_clusters_taints(taints, args, expected, tmp_path: Path) -> None:
    assert _tolerations(taints, tmp_path, *args) == expected
