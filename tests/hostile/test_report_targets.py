"""Issue 31, family 2: `-o FORMAT=PATH` and `--write-baseline` write only regular files (a
committed link, a FIFO or a device is refused, never written through), and what a run writes is
never read back as its input."""

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
    """tmp/t (a tree with one GPU Job) and tmp/outside; cwd is tmp."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "t" / "job.yaml").write_text(JOB.format(name="job"))
    return tmp_path


@pytest.mark.parametrize("option", [["-o", "sarif=gpudra.sarif"],
                                    ["--write-baseline", "gpudra.sarif"]])
def test_a_committed_link_is_not_written_through(work: Path, option: list[str]) -> None:
    victim = work / "outside" / "victim"
    victim.write_text("mine\n")
    os.symlink(victim, work / "gpudra.sarif")
    result = invoke("audit", "t", *option, "-o", "json=report.json")
    assert result.exit_code == 3, said(result)
    assert victim.read_text() == "mine\n"
    assert (work / "gpudra.sarif").is_symlink()
    assert "gpudra.sarif" in said(result) and "symbolic link" in said(result)
    if option[0] == "-o":
        assert json.loads((work / "report.json").read_text())["findings"]  # the others written


def test_a_dangling_link_creates_nothing_outside(work: Path) -> None:
    os.symlink(work / "outside" / "new.json", work / "report.json")
    result = invoke("audit", "t", "-o", "json=report.json")
    assert result.exit_code == 3, said(result)
    assert list((work / "outside").iterdir()) == []


@pytest.mark.parametrize("target", ["fifo", "/dev/null", "directory"])
def test_a_fifo_a_device_or_a_directory_is_refused_without_a_hang(work: Path,
                                                                  target: str) -> None:
    if target == "fifo":
        os.mkfifo(work / "fifo")
    elif target == "directory":
        (work / "directory").mkdir()
    result = subprocess.run([sys.executable, "-m", "gpudra", "audit", "t", "-q", "-o",
                             f"json={target}"], cwd=work, capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "not written" in result.stderr, result.stderr


def test_a_report_inside_the_tree_is_not_read_on_the_next_run(work: Path) -> None:
    args = ("audit", "t", "-o", "sarif=t/x.sarif.json", "-o", "json=t/r.json",
            "--write-baseline", "t/base.json")
    counts = []
    for _ in range(3):
        result = invoke(*args)
        assert result.exit_code == 0, said(result)
        report = json.loads((work / "t" / "r.json").read_text())
        counts.append(len(report["findings"]))
        assert {f["file"] for f in report["findings"]} == {"t/job.yaml"}
    assert counts[0] == counts[1] == counts[2]


def test_a_replaced_report_keeps_its_mode(work: Path) -> None:
    report = work / "r.json"
    report.write_text("old\n")
    os.chmod(report, 0o600)
    assert invoke("audit", "t", "-o", "json=r.json").exit_code == 1
    assert json.loads(report.read_text())["findings"]
    assert report.stat().st_mode & 0o777 == 0o600
