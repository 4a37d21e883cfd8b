"""`kubectl gpudra --context X audit`: the cluster options kubectl users type before the
subcommand are moved after it (issue 36, item 4: it failed with `No such option`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudra.cli.kubectl_args import global_options_after_command
from tests.fakeapi import FakeCluster
from tests.fakeapi.kubeconfig import CONTEXT

# (as typed, as the command parses it)
CASES = [
    (["--context", "x", "audit"], ["audit", "--context", "x"]),
    (["--context=x", "audit", "-o", "json"], ["audit", "--context=x", "-o", "json"]),
    (["--kubeconfig", "k", "--context", "x", "-n", "ml", "verify", "--decommission"],
     ["verify", "--kubeconfig", "k", "--context", "x", "-n", "ml", "--decommission"]),
    (["-A", "--request-timeout", "5s", "audit"], ["audit", "-A", "--request-timeout", "5s"]),
    (["--context", "a", "--context", "b", "audit"],
     ["audit", "--context", "a", "--context", "b"]),
    # unchanged: nothing before the command, no command after, or not a cluster option
    (["audit", "--context", "x"], ["audit", "--context", "x"]),
    (["--context", "x"], ["--context", "x"]),
    (["--context"], ["--context"]),
    (["--version"], ["--version"]),
    (["--help", "audit"], ["--help", "audit"]),
    (["--output", "json", "audit"], ["--output", "json", "audit"]),
    ([], []),
]


@pytest.mark.parametrize(("typed", "parsed"), CASES)
def test_cluster_options_before_the_command_go_after_it(typed: list[str],
                                                        parsed: list[str]) -> None:
    assert global_options_after_command(typed) == parsed


def test_kubectl_gpudra_with_the_context_first_audits_that_cluster(tmp_path: Path) -> None:
    """The console script's own path (main), as kubectl runs the plugin."""
    state = {"version": "1.34.2", "objects": [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "t", "namespace": "ml"},
         "spec": {"replicas": 1, "template": {"spec": {"containers": [{
             "name": "main", "image": "cuda",
             "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}}]}
    with FakeCluster(state, kubeconfig=tmp_path / "kubeconfig") as cluster:
        env = {**os.environ, "NO_COLOR": "1", "KUBECONFIG": "", "HOME": str(tmp_path)}
        runs = [subprocess.run([sys.executable, "-m", "gpudra", *args], capture_output=True,
                               text=True, env=env, timeout=120)
                for args in (["--kubeconfig", str(cluster.kubeconfig), "--context", CONTEXT,
                              "audit", "-o", "json"],
                             ["audit", "-o", "json", "--kubeconfig", str(cluster.kubeconfig),
                              "--context", CONTEXT])]
    first, second = runs
    assert first.returncode == second.returncode == 1, first.stderr  # 1: findings
    assert json.loads(first.stdout)["cluster"]["context"] == CONTEXT
    assert {**json.loads(first.stdout), "cluster": None} == \
        {**json.loads(second.stdout), "cluster": None}
