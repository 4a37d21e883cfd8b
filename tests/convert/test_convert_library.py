"""convert's core is a library: `convert(request) -> ConvertResult` prints nothing (the CLI
writes what the result holds), and cutover reads the result, not a stream."""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

from gpudra.cli.convert import ConvertShow, run_convert, write_convert
from gpudra.convert.run import ConvertRequest, convert
from gpudra.report import SummaryFormat
from gpudra.results.model import ExitCode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# request options, how the CLI shows the run -> the exit code; the tree is a fresh copy of
# examples/ each time
MODES = {
    "in place": ({}, ConvertShow(), ExitCode.BLOCKED),
    "diff": ({"diff": True}, ConvertShow(), ExitCode.FINDINGS),
    "check": ({"check": True}, ConvertShow(), ExitCode.FINDINGS),
    "json": ({}, ConvertShow(output=SummaryFormat.JSON), ExitCode.BLOCKED),
    "output dir": ({"output_dir": "out"}, ConvertShow(), ExitCode.BLOCKED),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_library_prints_nothing_and_the_cli_shows_its_result(
        mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options, show, code = MODES[mode]
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
    write_convert(result, show, stdout=out, stderr=err)
    shown = out.getvalue() + err.getvalue()
    # what the user reads comes from the result: a diff of every change, or the summary
    if mode == "diff":
        assert result.report.changes
        assert all(change.label in shown for change in result.report.changes)
    else:
        assert "blocked" in shown  # the examples hold blocked workloads: the summary says so


def test_the_request_holds_what_is_converted_not_how_it_is_shown() -> None:
    """The summary's format, -q and -v are the CLI's (ConvertShow): cutover's and a library
    caller's requests carry none of them."""
    asked = {f.name for f in fields(ConvertRequest)}
    shown = {f.name for f in fields(ConvertShow)}
    assert shown == {"output", "quiet", "verbose"} and not asked & shown


@pytest.mark.parametrize(("quiet", "said"), [
    (False, "gpudra: finished an interrupted convert: 2 more files written\n"),
    (True, ""),
])
def test_an_interrupted_run_finished_is_heard_and_quiet_says_nothing(
        quiet: bool, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The core tells how many files it finished through a hook; -q is the CLI's to apply."""
    from gpudra.convert import journal

    monkeypatch.setenv("GPUDRA_CACHE_DIR", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "job.yaml").write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n")
    roots = (os.path.realpath(tree),)
    journal.begin(roots, [journal.Entry(str(tree / f"{name}.yaml"), None,
                                        f"kind: ConfigMap # {name}\n".encode())
                          for name in ("a", "b")])
    heard: list[int] = []
    convert(ConvertRequest(paths=(str(tree),)), on_finished=heard.append)
    assert heard == [2] and (tree / "b.yaml").read_text() == "kind: ConfigMap # b\n"
    journal.begin(roots, [journal.Entry(str(tree / f"{name}.yaml"), None, b"kind: Secret\n")
                          for name in ("c", "d")])
    out, err = io.StringIO(), io.StringIO()
    run_convert(ConvertRequest(paths=(str(tree),)), ConvertShow(quiet=quiet), stdout=out,
                stderr=err)
    assert err.getvalue() == said  # the note alone: the summary goes to stdout
    assert (tree / "d.yaml").is_file()


def test_nothing_exported_is_a_result_too(capsys: pytest.CaptureFixture[str]) -> None:
    """A --from-cluster run that found nothing: the CLI says so from the result."""
    from gpudra.convert.run import ConvertResult

    request = ConvertRequest(paths=())
    out, err = io.StringIO(), io.StringIO()
    write_convert(ConvertResult(request, None, None, ExitCode.OK), stdout=out, stderr=err)
    assert (out.getvalue(), err.getvalue()) == (
        "", "gpudra: the cluster has no GPU workloads or GPU quotas to export\n")
