"""The GitHub Action (action.yml, issue 20) works as a runner would run it: its `run:` steps
execute in order in bash, with `${{ inputs.* }}` and `${{ steps.*.outputs.* }}` filled in as
GitHub does, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files, and the first failing step failing the
job. `uses:` steps (setup-python, the SARIF upload) are GitHub's own and are not run; the
install step is checked to install the action's checkout and is not run either: the test's
environment is that install (an editable one of this checkout)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.manifests import gpu_job

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(?P<expr>[^}]+?)\s*\}\}")
JOB = gpu_job("train", namespace="ml", gpus=2, container="main", image="cuda",
              restart_never=True)

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the Action runs bash")


def _inputs(**given: str) -> dict[str, str]:
    values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(values)
    assert not unknown, f"action.yml has no input {unknown}"
    return {**values, **given}


def _run_action(workdir: Path, inputs: dict[str, str]) -> tuple[list[tuple[str, int]], dict]:
    """Each run step's (name, exit code) up to the first failure, and the steps' outputs."""
    outputs: dict[str, dict[str, str]] = {}

    def fill(text: str) -> str:
        def value(match: re.Match) -> str:
            parts = match["expr"].split(".")
            if parts[0] == "inputs":
                return inputs[parts[1]]
            if parts[0] == "steps" and parts[2] == "outputs":
                return outputs.get(parts[1], {}).get(parts[3], "")
            raise AssertionError(f"the test does not evaluate {match['expr']!r}")
        return EXPRESSION.sub(value, text)

    bin_dir = str(Path(sys.executable).parent)  # gpudra's console script lives beside python
    ran: list[tuple[str, int]] = []
    for index, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step:
            continue
        name = step.get("name", f"step {index}")
        if "pip install" in step["run"]:
            assert '"$GITHUB_ACTION_PATH"' in step["run"]  # the action's own checkout
            assert (ROOT / "pyproject.toml").is_file()
            continue
        assert step["shell"] == "bash"
        output_file = workdir / f".output-{index}"
        output_file.write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               "GITHUB_OUTPUT": str(output_file), "GITHUB_ACTION_PATH": str(ROOT),
               "GITHUB_STEP_SUMMARY": str(workdir / ".summary.md"), "NO_COLOR": "1",
               **{k: fill(str(v)) for k, v in (step.get("env") or {}).items()}}
        done = subprocess.run(["bash", "-e", "-c", fill(step["run"])], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in
                                       output_file.read_text().splitlines() if "=" in line)
        ran.append((name, done.returncode))
        if done.returncode != 0:
            break
    return ran, outputs


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "train.yaml").write_text(JOB)
    return tmp_path


def test_findings_fail_the_job_after_sarif_and_summary(repo: Path) -> None:
    ran, outputs = _run_action(repo, _inputs(paths="k8s"))
    assert outputs["audit"]["exit-code"] == "1"
    # preflight warns on the device-plugin request, and fail-on warning fails the job there
    assert ran == [("gpudra audit", 0), ("gpudra preflight --manifests", 1)]
    sarif = json.loads((repo / outputs["audit"]["sarif"]).read_text())
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["GPU101"]
    assert "GPU101" in (repo / ".summary.md").read_text()
    upload = next(s for s in ACTION["runs"]["steps"]
                  if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert upload["with"]["sarif_file"] == outputs["audit"]["sarif"]


def test_a_baseline_holding_every_finding_passes(repo: Path) -> None:
    subprocess.run([sys.executable, "-m", "gpudra", "audit", "k8s", "-q",
                    "--write-baseline", "gpudra-baseline.json"], cwd=repo, check=True,
                   capture_output=True)
    ran, outputs = _run_action(repo, _inputs(paths="k8s", baseline="gpudra-baseline.json"))
    assert ran == [("gpudra audit", 0), ("gpudra preflight --manifests", 0),
                   ("Fail on the audit's result", 0)]
    assert outputs["audit"]["exit-code"] == "0"


def test_fail_on_error_passes_warnings_and_target_version_reaches_both(repo: Path) -> None:
    (repo / "more").mkdir()
    (repo / "more" / "claim.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: gpu, namespace: ml}\n"
        "spec: {spec: {devices: {requests: [{name: gpu, exactly: "
        "{deviceClassName: gpu.nvidia.com}}]}}}\n")
    ran, _ = _run_action(repo, _inputs(paths="k8s more", **{"fail-on": "error"}))
    assert [code for _, code in ran] == [0, 0, 0]
    # resource.k8s.io/v1 is not served by 1.33: both the audit and preflight fail on it
    ran, outputs = _run_action(repo, _inputs(paths="k8s more", **{"fail-on": "error",
                                                                  "target-version": "1.33"}))
    assert outputs["audit"]["exit-code"] == "1"
    assert ran[-1] == ("gpudra preflight --manifests", 1)
