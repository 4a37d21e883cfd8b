"""convert's core is a library: `convert(request) -> ConvertResult` prints nothing (the CLI
writes what the result holds), and cutover reads the result, not a stream."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from gpudra.cli.convert import write_convert
from gpudra.convert.run import ConvertRequest, convert
from gpudra.results.model import ExitCode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# request options -> the exit code; the tree is a fresh copy of examples/ each time
MODES = {
    "in place": ({}, ExitCode.BLOCKED),
    "diff": ({"diff": True}, ExitCode.FINDINGS),
    "check": ({"check": True}, ExitCode.FINDINGS),
    "json": ({"output": "json"}, ExitCode.BLOCKED),
    "output dir": ({"output_dir": "out"}, ExitCode.BLOCKED),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_library_prints_nothing_and_the_cli_shows_its_result(
        mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options, code = MODES[mode]
    tree = tmp_path / "examples"
    shutil.copytree(EXAMPLES, tree)
    if "output_dir" in options:
        options = {**options, "output_dir": tmp_path / "out"}
    notes: list[str] = []
    result = convert(ConvertRequest(paths=(str(tree),), **options), note=notes.append)
    assert capsys.readouterr() == ("", "")  # nothing on either stream
    assert result.exit_code is code and notes == []
    assert result.report is not None and result.summary is not None
    out, err = io.StringIO(), io.StringIO()
    write_convert(result, stdout=out, stderr=err)
    shown = out.getvalue() + err.getvalue()
    # what the user reads comes from the result: a diff of every change, or the summary
    if mode == "diff":
        assert result.report.changes
        assert all(change.label in shown for change in result.report.changes)
    else:
        assert "blocked" in shown  # the examples hold blocked workloads: the summary says so


def test_nothing_exported_is_a_result_too(capsys: pytest.CaptureFixture[str]) -> None:
    """A --from-cluster run that found nothing: the CLI says so from the result."""
    from gpudra.convert.run import ConvertResult

    request = ConvertRequest(paths=())
    out, err = io.StringIO(), io.StringIO()
    write_convert(ConvertResult(request, None, None, ExitCode.OK), stdout=out, stderr=err)
    assert (out.getvalue(), err.getvalue()) == (
        "", "gpudra: the cluster has no GPU workloads or GPU quotas to export\n")
