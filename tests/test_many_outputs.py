"""`-o FORMAT[=PATH]` repeats (issue 20): one run reads the tree once, renders each format
once and writes each file once, with the same text a run of that format alone prints."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpudra.report.targets as targets_module
from gpudra.cli import app
from gpudra.sources.files import FileSource

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = str(ROOT / "examples")
SLICES = str(ROOT / "tests" / "fakeapi" / "testdata" / "examples-cluster.yaml")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Counter]:
    """Counts of tree scans and of writes per file during one in-process run."""
    counts: dict[str, Counter] = {"scans": Counter(), "writes": Counter()}
    items = FileSource.items

    def scan(self):
        counts["scans"]["tree"] += 1
        return items(self)

    real_replace = targets_module.replace

    def write(path, *args, **kwargs):
        counts["writes"][str(path)] += 1
        return real_replace(path, *args, **kwargs)

    monkeypatch.setattr(FileSource, "items", scan)
    monkeypatch.setattr(targets_module, "replace", write)
    return counts


def _untimed(data):
    """Plan's JSON without its measured `seconds`, which differ from run to run."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k != "seconds"}
    return [_untimed(v) for v in data] if isinstance(data, list) else data


def _alone(*args: str) -> str:
    return CliRunner().invoke(app, list(args)).stdout


def test_audit_writes_each_file_once_from_one_scan(tmp_path: Path, counted) -> None:
    files = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "sarif", "junit", "html")}
    result = CliRunner().invoke(app, ["audit", EXAMPLES, "-o", "table",
                                      *[a for fmt, path in files.items()
                                        for a in ("-o", f"{fmt}={path}")]])
    assert result.exit_code == 1, result.stderr
    assert counted["scans"]["tree"] == 1
    assert counted["writes"] == Counter({str(p): 1 for p in files.values()})
    assert "Summary" in result.stdout  # the table went to stdout
    scans_before = counted["scans"]["tree"]
    for fmt, path in files.items():
        assert path.read_text() == _alone("audit", EXAMPLES, "-o", fmt), fmt
    assert counted["scans"]["tree"] == scans_before + len(files)  # one per lone run
    json.loads(files["json"].read_text())


def test_only_files_leaves_stdout_empty(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["audit", EXAMPLES, "-o", f"json={tmp_path / 'r.json'}"])
    assert result.stdout == "" and (tmp_path / "r.json").is_file()


@pytest.mark.parametrize("args, message", [
    (("-o", "table", "-o", "json"), "only one -o may write to stdout"),
    (("-o", "json=same.json", "-o", "sarif=same.json"), "more than once"),
    (("-o", "json="), "name a file after '='"),
    (("-o", "pdf=r.pdf"), "unknown format 'pdf'"),
])
def test_bad_targets_are_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(app, ["audit", EXAMPLES, *args])
    assert result.exit_code == 2 and message in result.stderr


def test_preflight_and_plan_write_several_outputs(tmp_path: Path, counted) -> None:
    runner = CliRunner()
    junit, md = tmp_path / "preflight.xml", tmp_path / "preflight.md"
    result = runner.invoke(app, ["preflight", "--manifests", EXAMPLES, "-o", "json",
                                 "-o", f"junit={junit}", "-o", f"markdown={md}"])
    assert json.loads(result.stdout)["checks"]
    assert counted["scans"]["tree"] == 1
    assert junit.read_text() == _alone("preflight", "--manifests", EXAMPLES, "-o", "junit")
    assert md.read_text() == _alone("preflight", "--manifests", EXAMPLES, "-o", "markdown")
    plan_json = tmp_path / "plan.json"
    result = runner.invoke(app, ["plan", EXAMPLES, "--inventory", SLICES, "-o", "table",
                                 "-o", f"json={plan_json}"])
    assert "workloads" in json.loads(plan_json.read_text())  # plan's own JSON shape
    alone = json.loads(_alone("plan", EXAMPLES, "--inventory", SLICES, "-o", "json"))
    assert _untimed(json.loads(plan_json.read_text())) == _untimed(alone)
    assert counted["writes"] == Counter({str(junit): 1, str(md): 1, str(plan_json): 1})
