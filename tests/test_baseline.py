"""Baselines (issue 20): `audit --write-baseline` records findings by what they are about, never
by line, so moved blocks and reformatted files keep matching; `--baseline` reports only new
findings and counts fixed entries; preflight's manifests tier reads the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.support.manifests import gpu_job
from tests.support.run import invoke

JOB = gpu_job(namespace="ml", gpus=2, container="main", image="cuda", restart_never=True)
# The same Job, reformatted: flow style, other key order, comments, moved down the file.
JOB_REFORMATTED = """\
# moved below another object and rewritten in flow style
apiVersion: v1
kind: ConfigMap
metadata: {{name: unrelated, namespace: ml}}
---
kind: Job
apiVersion: batch/v1
metadata: {{namespace: ml, name: {name}}}
spec:
  template:
    spec:
      containers: [{{image: cuda, name: main, resources: {{limits: {{nvidia.com/gpu: 2}}}}}}]
      restartPolicy: Never
"""


def _run(*args: str) -> tuple[int, dict, str]:
    result = invoke(*args, "-o", "json", plain=False)
    return result.exit_code, json.loads(result.stdout), result.stderr


def _rules(report: dict) -> list[tuple[str, str]]:
    return sorted((f["rule"], f["name"]) for f in report["findings"])


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "train.yaml").write_text(JOB.format(name="train"))
    return tmp_path / "k8s"


def test_write_baseline_records_identities_and_exits_0(tree: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    code, report, stderr = _run("audit", str(tree), "--write-baseline", str(baseline))
    assert code == 0 and report["findings"]  # the findings are shown, and recorded
    data = json.loads(baseline.read_text())
    assert data["version"] == 1
    assert {"rule": "GPU101", "kind": "Job", "namespace": "ml", "name": "train",
            "container": "main", "resource": "nvidia.com/gpu"} in data["findings"]
    assert "line" not in baseline.read_text() and "train.yaml" not in baseline.read_text()
    assert f"in {baseline}" in stderr


def test_baseline_survives_line_moves_and_reformatting(tree: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    _run("audit", str(tree), "--write-baseline", str(baseline))
    before = _run("audit", str(tree))[1]
    (tree / "train.yaml").unlink()
    (tree / "moved.yaml").write_text(JOB_REFORMATTED.format(name="train"))
    after = _run("audit", str(tree))[1]
    assert _rules(after) == _rules(before)  # the same findings, elsewhere...
    assert {f["line"] for f in after["findings"]} != {f["line"] for f in before["findings"]}
    code, report, _ = _run("audit", str(tree), "--baseline", str(baseline))
    assert (code, report["findings"]) == (0, [])  # ...are all known
    assert report["baseline"] == {"file": str(baseline), "known": len(before["findings"]),
                                  "fixed": 0}


def test_new_findings_are_reported_and_fixed_entries_counted(tree: Path,
                                                             tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    _, recorded, _ = _run("audit", str(tree), "--write-baseline", str(baseline))
    (tree / "train.yaml").write_text(JOB.format(name="tune"))  # train fixed, tune new
    code, report, _ = _run("audit", str(tree), "--baseline", str(baseline))
    assert code == 1
    assert {f["name"] for f in report["findings"]} == {"tune"}
    assert report["baseline"]["known"] == 0
    assert report["baseline"]["fixed"] == len(recorded["findings"])
    table = CliRunner().invoke(app, ["audit", str(tree), "--baseline", str(baseline)]).stdout
    fixed = len(recorded["findings"])
    assert f"{fixed} baseline {'entry' if fixed == 1 else 'entries'} fixed" in table


def test_a_second_identical_finding_is_new(tree: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    _run("audit", str(tree), "--write-baseline", str(baseline))
    overlay = tree / "overlay"
    overlay.mkdir()
    (overlay / "train.yaml").write_text(JOB.format(name="train"))  # same identity, twice
    _, report, _ = _run("audit", str(tree), "--baseline", str(baseline))
    # The baseline held one: one of the two is new (which one is the report's order).
    assert len([f for f in report["findings"] if f["rule"] == "GPU101"]) == 1


@pytest.mark.parametrize("text, message", [("not json", "not JSON"),
                                           ('{"version": 9, "findings": []}', "version 1")])
def test_a_bad_baseline_is_a_usage_error(tree: Path, tmp_path: Path, text: str,
                                         message: str) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(text)
    result = CliRunner().invoke(app, ["audit", str(tree), "--baseline", str(baseline)])
    assert result.exit_code == 2 and message in result.stderr


def test_preflight_manifests_tier_honours_the_baseline(tree: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    _run("audit", str(tree), "--write-baseline", str(baseline))
    args = ("preflight", "--manifests", str(tree), "--require-migrated")
    code, plain, _ = _run(*args)
    migrated = {c["id"]: c for c in plain["checks"]}["MANIFEST003"]
    assert code == 1 and migrated["outcome"] == "fail"
    code, known, _ = _run(*args, "--baseline", str(baseline))
    assert code == 0
    assert {c["id"]: c for c in known["checks"]}["MANIFEST003"]["outcome"] == "pass"
    assert known["summary"]["baseline"]["known"] >= 1
