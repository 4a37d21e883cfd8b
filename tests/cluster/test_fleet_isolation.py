"""`audit --all-contexts` reads contexts in threads at once: what one context's credential
plugin says (its failure, its stderr) belongs to that context and to no other."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.cluster.conftest import SMALL_PODS, TOKEN, state
from tests.fakeapi import FakeCluster

EXEC_API = "client.authentication.k8s.io/v1"
ENV = {"KUBECONFIG": "", "HOME": "/nonexistent", "NO_COLOR": "1"}


def _plugin(path: Path, script: str) -> dict:
    path.write_text(script)
    return {"exec": {"apiVersion": EXEC_API, "command": sys.executable, "args": [str(path)],
                     "interactiveMode": "Never"}}


def test_a_failing_plugin_is_its_own_contexts_failure_only(tmp_path: Path) -> None:
    credential = json.dumps({"apiVersion": EXEC_API, "kind": "ExecCredential",
                             "status": {"token": TOKEN}})
    # "slow" is still loading its credentials when "broken"'s plugin fails and says so.
    slow = _plugin(tmp_path / "slow.py",
                   f"import time\ntime.sleep(2)\nprint({credential!r})\n")
    broken = _plugin(tmp_path / "broken.py",
                     "import sys, time\ntime.sleep(0.3)\n"
                     "sys.stderr.write('broken-sso-session-expired\\n')\nsys.exit(1)\n")
    with FakeCluster(state(*SMALL_PODS), tls=False) as fake:
        users = {"slow": slow, "broken": broken}
        config = tmp_path / "kubeconfig"
        config.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "slow",
            "clusters": [{"name": "c", "cluster": {"server": fake.url}}],
            "users": [{"name": n, "user": u} for n, u in users.items()],
            "contexts": [{"name": n, "context": {"cluster": "c", "user": n}} for n in users]}))
        result = CliRunner().invoke(app, ["audit", "--kubeconfig", str(config),
                                          "--all-contexts", "-o", "json"], env=ENV)
    clusters = {c["name"]: c for c in json.loads(result.stdout)["clusters"]}
    assert clusters["slow"]["error"] is None, clusters["slow"]["error"]
    assert "broken-sso-session-expired" in clusters["broken"]["error"]
    assert 'context "broken"' in clusters["broken"]["error"]
    said = [line for line in result.stderr.splitlines() if "broken-sso" in line]
    assert said and all("broken" in line.split("broken-sso")[0] for line in said), result.stderr
