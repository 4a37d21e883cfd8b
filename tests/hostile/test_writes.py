"""Items 1, 2, 4 and 5: convert never writes outside what the user named, never overwrites an
edit made while it ran, and reports the writes that did not happen."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from gpudra.cli import app
from gpudra.convert import run as run_module
from gpudra.convert import writer as writer_module
from tests.fakeapi import FakeCluster
from tests.support.manifests import gpu_job
from tests.support.run import invoke, said

JOB = gpu_job(namespace="ml")


def convert(*args: str) -> Result:
    return invoke("convert", *args)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/t (the tree) and tmp/outside (what a symlink in it may name); cwd is tmp."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "t" / "own.yaml").write_text(JOB.format(name="own"))
    return tmp_path


def test_a_file_symlink_out_of_the_tree_is_not_written_through(work: Path) -> None:
    outside = work / "outside" / "gpu.yaml"
    outside.write_text(JOB.format(name="far"))
    os.symlink("../outside/gpu.yaml", work / "t" / "link.yaml")
    result = convert("t")
    assert result.exit_code == 3, said(result)
    assert "outside the paths given" in said(result)
    assert outside.read_text() == JOB.format(name="far")
    assert "resourceClaimTemplateName" in (work / "t" / "own.yaml").read_text()


def test_a_symlink_inside_the_tree_is_written_through(work: Path) -> None:
    (work / "t" / "real").mkdir()
    (work / "t" / "real" / "job.yaml").write_text(JOB.format(name="near"))
    os.symlink("real/job.yaml", work / "t" / "link.yaml")
    result = convert("t")
    assert result.exit_code == 0, said(result)
    assert (work / "t" / "link.yaml").is_symlink()
    assert "resourceClaimTemplateName" in (work / "t" / "real" / "job.yaml").read_text()


@pytest.mark.parametrize("relative", [True, False])
def test_planned_writes_resolve_each_directory_once_and_still_refuse_links_out(
        work: Path, relative: bool) -> None:
    """PlannedWrites caches a directory's real path: a directory symlink out of the tree is
    refused, whichever file of it comes first, and a file symlink inside is written through."""
    base = Path("t") if relative else work / "t"
    (work / "outside" / "a.yaml").write_text("a: 1\n")
    (work / "outside" / "b.yaml").write_text("b: 1\n")
    os.symlink("../outside", work / "t" / "away")
    (work / "t" / "real.yaml").write_text("r: 1\n")
    os.symlink("real.yaml", work / "t" / "near.yaml")
    writes = writer_module.PlannedWrites((os.path.realpath(work / "t"),))
    for name in ("a.yaml", "b.yaml"):
        with pytest.raises(writer_module.WriteRefused, match="outside the paths"):
            writes.write(base / "away" / name, f"{name[0]}: 1\n".encode(), b"x: 2\n")
    assert (work / "outside" / "a.yaml").read_text() == "a: 1\n"
    assert writes.write(base / "near.yaml", b"r: 1\n", b"r: 2\n") is True
    assert (work / "t" / "near.yaml").is_symlink()
    assert (work / "t" / "real.yaml").read_text() == "r: 2\n"
    assert writes.write(base / "near.yaml", b"r: 1\n", b"r: 2\n") is False  # already so
    with pytest.raises(writer_module.WriteRefused, match="changed since"):
        writes.write(base / "real.yaml", b"r: 1\n", b"r: 3\n")
    with pytest.raises(writer_module.WriteRefused, match="created by something else"):
        writes.write(base / "real.yaml", None, b"r: 3\n")
    assert writes.write(base / "new.yaml", None, b"n: 1\n") is True
    assert (work / "t" / "new.yaml").read_text() == "n: 1\n"
    assert not [p for p in (work / "t").iterdir() if p.name.endswith(writer_module.TEMP_SUFFIX)]


def test_a_symlinked_kustomization_out_of_the_tree_stops_the_claims_file_run(
        work: Path) -> None:
    k = work / "outside" / "kustomization.yaml"
    k.write_text("resources:\n- own.yaml\n")
    os.symlink("../outside/kustomization.yaml", work / "t" / "kustomization.yaml")
    before = (work / "t" / "own.yaml").read_text()
    result = convert("t", "--claims-file", "gpu-claims.yaml")
    assert result.exit_code == 3, said(result)
    assert k.read_text() == "resources:\n- own.yaml\n"
    # the workload must not refer to templates its kustomization does not list
    assert (work / "t" / "own.yaml").read_text() == before


def test_a_claims_file_symlinked_out_of_the_tree_is_refused(work: Path) -> None:
    target = work / "outside" / "claims.yaml"
    target.write_text("# mine\n")
    os.symlink("../outside/claims.yaml", work / "t" / "gpu-claims.yaml")
    before = (work / "t" / "own.yaml").read_text()
    result = convert("t", "--claims-file", "gpu-claims.yaml")
    assert result.exit_code == 3, said(result)
    assert target.read_text() == "# mine\n"
    assert (work / "t" / "own.yaml").read_text() == before


def test_a_symlink_inside_output_dir_is_not_followed_out(work: Path) -> None:
    out = work / "out"
    out.mkdir()
    os.symlink("../outside/own.yaml", out / "own.yaml")  # where the copy of t/own.yaml goes
    result = convert("t", "--output-dir", "out")
    assert result.exit_code == 3, said(result)
    assert "outside --output-dir" in said(result)
    assert list((work / "outside").iterdir()) == []


HOSTILE = [{"namespace": "../../../escape", "name": "job"},
           {"namespace": "/tmp", "name": "job"},
           {"namespace": "ml", "name": "../../../escape"},
           {"namespace": "ml", "name": "a/b"}]


@pytest.mark.parametrize("meta", HOSTILE)
def test_from_cluster_names_are_validated_and_writes_stay_in_output_dir(
        tmp_path: Path, meta: dict) -> None:
    good = json.loads(json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                                  "metadata": {"name": "fine", "namespace": "ml"},
                                  "spec": {"template": {"spec": {"containers": [
                                      {"name": "c", "image": "x", "resources": {
                                          "limits": {"nvidia.com/gpu": 1}}}]}}}}))
    bad = json.loads(json.dumps(good))
    bad["metadata"] = dict(meta)
    state = {"objects": [good, bad], "auto_namespaces": False}
    out = tmp_path / "deep" / "er" / "out"
    with FakeCluster(state, tls=False) as cluster:
        result = CliRunner().invoke(app, ["convert", "--from-cluster", "--kubeconfig",
                                          str(cluster.kubeconfig), "--output-dir", str(out)],
                                    env={"HOME": "/nonexistent", "KUBECONFIG": ""})
    assert result.exit_code == 3, said(result)
    assert "not a valid Kubernetes name" in said(result)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()
                     and "kubeconfig" not in p.name)
    assert written == ["deep/er/out/ml/job-fine.yaml"], written


def test_a_file_edited_while_convert_runs_keeps_the_edit(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = work / "t" / "other.yaml"
    other.write_text(JOB.format(name="other"))
    real = run_module.convert_paths

    def plan_then_edit(*args, **kwargs):
        report = real(*args, **kwargs)
        other.write_text(JOB.format(name="other") + "# edited meanwhile\n")
        return report

    monkeypatch.setattr(run_module, "convert_paths", plan_then_edit)
    result = convert("t", "-o", "json")
    assert result.exit_code == 3, said(result)
    assert other.read_text().endswith("# edited meanwhile\n")
    assert "resourceClaimTemplateName" not in other.read_text()
    assert "changed since convert read it" in said(result)
    assert "resourceClaimTemplateName" in (work / "t" / "own.yaml").read_text()


def test_a_failed_write_is_not_reported_as_written(work: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "t" / "ro").mkdir()
    (work / "t" / "ro" / "job.yaml").write_text(JOB.format(name="ro"))
    real = writer_module.replace_file

    def read_only(path: Path, chunks: Iterable[bytes], info: object) -> None:
        if path.parent.name == "ro":  # as a read-only directory answers
            raise PermissionError(13, "Permission denied")
        real(path, chunks, info)

    monkeypatch.setattr(writer_module, "replace_file", read_only)
    as_json = convert("t", "-o", "json")
    assert as_json.exit_code == 3
    again = convert("t")  # own.yaml is converted now; ro/job.yaml still cannot be written
    assert "0 files changed (1 not written)" in again.stdout, again.stdout
    data = json.loads(as_json.stdout)
    by_file = {f["file"]: f["written"] for f in data["files"]}
    assert by_file == {"t/own.yaml": True, "t/ro/job.yaml": False}
    assert data["summary"]["files_changed"] == 1


def test_a_refused_write_is_not_counted_in_text_or_json(work: Path) -> None:
    (work / "outside" / "gpu.yaml").write_text(JOB.format(name="far"))
    os.symlink("../outside/gpu.yaml", work / "t" / "link.yaml")
    data = json.loads(convert("t", "-o", "json").stdout)
    assert {f["file"]: f["written"] for f in data["files"]} == {"t/link.yaml": False,
                                                                 "t/own.yaml": True}
    assert data["summary"]["files_changed"] == 1
    (work / "t" / "own.yaml").write_text(JOB.format(name="own"))
    text = convert("t").stdout
    assert "1 file changed (1 not written)" in text, text


def test_a_file_named_on_the_command_line_may_get_its_claims_file_beside_it(work: Path) -> None:
    result = convert("t/own.yaml", "--claims-file", "gpu-claims.yaml")
    assert result.exit_code == 0, said(result)
    assert "ResourceClaimTemplate" in (work / "t" / "gpu-claims.yaml").read_text()
