"""`--output-dir` inside the scanned tree is never scanned (issue 13 item 18): a second run
writes the same copy, and neither reads the copy as input nor copies the copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.support.manifests import gpu_job

JOB = gpu_job("train", namespace="ml", gpus=2, container="main", image="cuda",
              restart_never=True)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("out", ["out", "build/dra"])
def test_second_run_is_identical(out: str, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "job.yaml").write_text(JOB)
    monkeypatch.chdir(tmp_path)
    runs = []
    for _ in range(2):
        result = CliRunner().invoke(app, ["convert", ".", "--output-dir", out, "-o", "json"])
        assert result.exit_code == 0, result.output
        runs.append((json.loads(result.stdout), _snapshot(tmp_path)))
    (first, tree), (second, again) = runs
    assert again == tree
    assert sorted(tree) == ["apps/job.yaml", f"{out}/apps/job.yaml"]
    assert first["summary"]["files_scanned"] == second["summary"]["files_scanned"] == 1
    assert [w["created"] for w in second["workloads"]] == [["train-gpu"]]
