"""Issue 31, family 3: convert --output-dir loses no copy and never writes over its inputs,
--claims-file cannot be a kustomization nor a FIFO or device, and overlapping paths are
planned once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.manifests import gpu_job
from tests.support.run import invoke, said

JOB = gpu_job(namespace="ml")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t" / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "t" / "job.yaml").write_text(JOB.format(name="near"))
    (tmp_path / "t" / "sub" / "deep.yaml").write_text(JOB.format(name="deep"))
    return tmp_path


def files_of(result) -> dict[str, bool]:
    return {f["file"]: f["written"] for f in json.loads(result.stdout)["files"]}


def test_a_linked_file_and_a_real_one_each_get_their_copy(work: Path) -> None:
    """t/sub/job.yaml links out of the tree: its copy is out/sub/job.yaml, as named, not
    out/job.yaml (the copy of t/job.yaml)."""
    (work / "t" / "sub" / "deep.yaml").unlink()
    (work / "elsewhere" / "job.yaml").write_text(JOB.format(name="far"))
    os.symlink("../../elsewhere/job.yaml", work / "t" / "sub" / "job.yaml")
    result = invoke("convert", "t", "--output-dir", "out", "-o", "json")
    assert result.exit_code == 0, said(result)
    assert files_of(result) == {"t/job.yaml": True, "t/sub/job.yaml": True}
    assert "name: near" in (work / "out" / "job.yaml").read_text()
    assert "name: far" in (work / "out" / "sub" / "job.yaml").read_text()


def test_an_output_dir_that_holds_an_input_is_refused(work: Path) -> None:
    (work / "t" / "own.yaml").write_text("mine: 1\n")
    result = invoke("convert", "t/sub", "--output-dir", "t")
    assert result.exit_code == 2, said(result)
    assert "holds the input" in said(result)
    assert (work / "t" / "own.yaml").read_text() == "mine: 1\n"
    assert (work / "t" / "job.yaml").read_text() == JOB.format(name="near")


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml"])
def test_a_claims_file_named_as_a_kustomization_is_refused(work: Path, name: str) -> None:
    (work / "t" / "kustomization.yaml").write_text("resources:\n- job.yaml\n")
    result = invoke("convert", "t", "--claims-file", name)
    assert result.exit_code == 2, said(result)
    assert "kustomization" in said(result)
    assert (work / "t" / "kustomization.yaml").read_text() == "resources:\n- job.yaml\n"


@pytest.mark.parametrize("paths", [("t", "t/sub"), ("t/sub", "t"), ("t", "t"),
                                   ("t", "t/job.yaml")])
def test_overlapping_paths_are_planned_once(work: Path, paths: tuple[str, ...]) -> None:
    alone = json.loads(invoke("convert", "t", "--diff", "-o", "json").stdout)
    both = json.loads(invoke("convert", *paths, "--diff", "-o", "json").stdout)
    assert both["summary"] == alone["summary"]
    result = invoke("convert", *paths, "--claims-file", "claims.yaml")
    assert result.exit_code == 0, said(result)
    claims = (work / "t" / "claims.yaml").read_text()
    assert claims.count("kind: ResourceClaimTemplate") == 1
    assert not (work / "t" / "sub" / "claims.yaml").exists() or \
        (work / "t" / "sub" / "claims.yaml").read_text().count("ResourceClaimTemplate") == 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_claims_file_that_is_a_fifo_or_a_device_is_refused_without_a_hang(
        work: Path, kind: str) -> None:
    claims = work / "t" / "claims.yaml"
    if kind == "fifo":
        os.mkfifo(claims)
    else:
        os.symlink("/dev/zero", claims)
    result = subprocess.run([sys.executable, "-m", "gpudra", "convert", "t", "--claims-file",
                             "claims.yaml", "-q"], cwd=work, capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 3, result.stderr
    assert "cannot read t/claims.yaml: not a regular file" in result.stderr
    assert "internal error" not in result.stderr
    assert (work / "t" / "job.yaml").read_text() == JOB.format(name="near")


def test_a_file_of_the_users_in_the_output_dir_is_never_replaced(work: Path) -> None:
    """out/job.yaml is the user's own file, where the copy of t/job.yaml would go: it is kept
    (an error says so, exit 3) and the other copies are written; a second run into the same
    directory replaces only what is already its copy."""
    (work / "out").mkdir()
    (work / "out" / "job.yaml").write_text("# mine\n")
    result = invoke("convert", "t", "--output-dir", "out", "-o", "json")
    assert result.exit_code == 3, said(result)
    assert "job.yaml in --output-dir holds a file gpudra did not write; kept" in said(result)
    assert (work / "out" / "job.yaml").read_text() == "# mine\n"
    assert "resourceClaimTemplateName" in (work / "out" / "sub" / "deep.yaml").read_text()
    (work / "out" / "job.yaml").unlink()
    assert invoke("convert", "t", "--output-dir", "out").exit_code == 0
    again = invoke("convert", "t", "--output-dir", "out")
    assert again.exit_code == 0, said(again)
