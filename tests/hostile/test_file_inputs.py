"""Issue 31, family 9 (file side): the files gpudra reads besides manifests (reports to merge,
baselines, .gpudra.yaml) and convert's malformed values give one line naming the file and
the place, never an internal error; a refused merge leaves an existing output file as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpudra.errors import UnreadableInputError
from gpudra.report.targets import OutputTarget, write_targets
from tests.support.data import replaced
from tests.support.manifests import gpu_job
from tests.support.run import invoke as run
from tests.support.run import said

GPU_POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  containers:\n"
           "  - {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n")


def one_line_error(result: Any, code: int, *names: str) -> str:
    """The run's stderr, after checking it is one line naming `names`, with exit `code`."""
    text = said(result)
    assert "internal error" not in text and "Traceback" not in text, text
    assert result.exit_code == code, text
    assert result.stderr.count("\n") == 1, result.stderr
    for name in names:
        assert name in result.stderr, result.stderr
    return result.stderr


@pytest.fixture
def report(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "pod.yaml").write_text(GPU_POD)
    result = run("audit", str(tmp_path / "pod.yaml"), "-q", "-o", f"json={tmp_path / 'r.json'}")
    assert result.exit_code == 1, said(result)
    return json.loads((tmp_path / "r.json").read_text())


def _with(report: dict[str, Any], *path: Any, value: Any) -> dict[str, Any]:
    return replaced(report, path, value)


HUGE = int("9" * 4000)
HOSTILE_REPORTS = {
    "deep.json": ("[" * 100_000, "not JSON"),
    "deeper-than-reports.json": ('{"schema_version": 1, "rules": ' + "[" * 200 + "]" * 200 + "}",
                                 "nested deeper than 64 levels"),
    "huge-count.json": (lambda r: _with(r, "summary", "gpu_workloads", value=HUGE), "not JSON"),
    "past-int64.json": (lambda r: _with(r, "summary", "on_dra", value=2**64),
                        "at $.summary.on_dra: the number"),
    "namespace-count.json": (lambda r: _with(r, "summary", "namespaces", 0, "gpu_workloads",
                                             value=2**70), "$.summary.namespaces[0]"),
    "surrogate.json": (lambda r: _with(r, "workloads", 0, "name", value="a\ud800b"),
                       "not JSON: no low surrogate"),
    "latin1.json": (b'{"schema_version": 1, "x": "caf\xe9"}', "not JSON"),
    "version-list.json": (lambda r: _with(r, "schema_version", value=list(range(1000))),
                          "has schema_version [0, 1, 2"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_REPORTS))
def test_a_hostile_report_is_one_line_and_the_output_file_is_kept(
        tmp_path: Path, report: dict[str, Any], name: str) -> None:
    content, problem = HOSTILE_REPORTS[name]
    if callable(content):
        content = json.dumps(content(report))  # a lone surrogate as JSON escapes it
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out.json"
    out.write_text("the previous fleet report\n")
    result = run("report", "merge", str(tmp_path / "r.json"), str(path), "-o", f"json={out}")
    assert problem in one_line_error(result, 3, f"{path}: ")
    assert out.read_text() == "the previous fleet report\n"


def test_a_report_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.json")
    result = run("report", "merge", str(tmp_path / "fifo.json"))
    assert "not a regular file" in one_line_error(result, 3, "fifo.json: cannot read")


def test_no_file_is_written_before_every_format_is_rendered(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.html"
    first.write_text("kept\n")

    def render(fmt: str, to_stdout: bool) -> str:
        if fmt == "html":
            raise UnreadableInputError("cannot render")
        return "new\n"

    with pytest.raises(UnreadableInputError):
        write_targets([OutputTarget("json", str(first)), OutputTarget("html", str(second))],
                      render, stdout=None)  # type: ignore[arg-type]
    assert first.read_text() == "kept\n" and not second.exists()


def test_text_that_cannot_be_encoded_truncates_no_file(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    out.write_text("kept\n")
    with pytest.raises(UnicodeEncodeError):
        write_targets([OutputTarget("json", str(out))], lambda fmt, tty: "a\ud800b",
                      stdout=None)  # type: ignore[arg-type]
    assert out.read_text() == "kept\n"


HOSTILE_BASELINES = {
    "list-field": ('{"version": 1, "findings": [{"rule": "GPU101", "kind": ["Job"]}]}',
                   "Expected `str | null`, got `array` - at `$.findings[0].kind`"),
    "dict-rule": ('{"version": 1, "findings": [{"rule": {"a": 1}}]}',
                  "Expected `str`, got `object` - at `$.findings[0].rule`"),
    "deep": ('{"version": 1, "findings": [' + "[" * 50_000, "not JSON"),
    "deep-entry": ('{"version": 1, "findings": [{"rule": "GPU101", "x": ' + "[" * 100
                   + "]" * 100 + "}]}", "nested deeper than 64 levels"),
    "huge-count": ('{"version": 1, "findings": [{"rule": "GPU101", "count": ' + "9" * 4000
                   + "}]}", "not JSON"),
    "big-count": ('{"version": 1, "findings": [{"rule": "GPU101", "count": 4294967296}]}',
                  "at `$.findings[0].count`: a count is a whole number from 1"),
    "findings-number": ('{"version": 1, "findings": 5}', "got `int` - at `$.findings`"),
    "surrogate": ('{"version": 1, "findings": [{"rule": "a\\ud800"}]}', "not JSON"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BASELINES))
def test_a_hostile_baseline_is_one_line_naming_the_field(tmp_path: Path, name: str) -> None:
    (tmp_path / "job.yaml").write_text(gpu_job().format(name="train"))
    text, problem = HOSTILE_BASELINES[name]
    (tmp_path / "baseline.json").write_text(text)
    result = run("audit", str(tmp_path / "job.yaml"), "--baseline",
                 str(tmp_path / "baseline.json"))
    assert problem in one_line_error(result, 2, "baseline.json: not a gpudra baseline")


def test_a_baseline_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    import os

    (tmp_path / "job.yaml").write_text(gpu_job().format(name="train"))
    os.mkfifo(tmp_path / "baseline.json")
    result = run("audit", str(tmp_path / "job.yaml"), "--baseline",
                 str(tmp_path / "baseline.json"))
    assert "not a regular file" in one_line_error(result, 3, "baseline.json: cannot read")


def _laughs(levels: int = 9) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "exclude:\n  " + "\n  ".join(lines) + "\n"


HOSTILE_CONFIGS = {
    "latin1": (b"rules:\n  GPU101: disable  # caf\xe9\n", ".gpudra.yaml:2: not UTF-8 (byte 0xe9)"),
    "deep-lists": (b"rules: " + b"[" * 5000, "not valid YAML (nested too deeply)"),
    "deep-maps": (b"rules: " + b"{a: " * 3000, "not valid YAML (nested too deeply)"),
    "self-alias": (b"exclude: &a [*a]\n", "an alias refers to a node that contains it"),
    "laughs": (_laughs().encode(), "excessive aliasing"),
    "bad-date": (b"waivers:\n- {rules: [GPU101], reason: x, kind: Job, expires: 2026-13-45}\n",
                 "not valid YAML (month must be in 1..12)"),
    "huge-int": (b"strict: " + b"9" * 5000 + b"\n", "not valid YAML (Exceeds the limit"),
    "workloads-number": (b"workloads: 5\n", "'workloads' must be a list"),
    "rules-list-setting": (b"rules: {GPU101: [1]}\n",
                           "GPU101: expected 'disable', a severity (error|warning|info) or "
                           "{severity: ..., enabled: ...}"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CONFIGS))
def test_a_hostile_config_is_one_line_naming_the_file(tmp_path: Path, name: str) -> None:
    (tmp_path / "job.yaml").write_text(gpu_job().format(name="train"))
    content, problem = HOSTILE_CONFIGS[name]
    (tmp_path / ".gpudra.yaml").write_bytes(content)
    result = run("audit", str(tmp_path / "job.yaml"))
    assert problem in one_line_error(result, 2, ".gpudra.yaml")


def test_a_config_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    import os

    (tmp_path / "job.yaml").write_text(gpu_job().format(name="train"))
    os.mkfifo(tmp_path / "config.yaml")
    result = run("audit", str(tmp_path / "job.yaml"), "--config", str(tmp_path / "config.yaml"))
    assert "not a regular file" in one_line_error(result, 2, "config.yaml: cannot read")


AFFINITY = ("      affinity:\n        nodeAffinity:\n"
            "          requiredDuringSchedulingIgnoredDuringExecution:\n"
            "            nodeSelectorTerms:\n            - matchExpressions:\n"
            "              - key: nvidia.com/gpu.product\n                operator: In\n"
            "                values: {values}\n")


@pytest.mark.parametrize("values, shape", [("5", "the scalar 5"), ("{a: 1}", "a mapping")])
def test_a_malformed_affinity_is_an_error_for_its_file_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: str, shape: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    broken = gpu_job("broken").replace("    spec:\n", "    spec:\n" +
                                       AFFINITY.format(values=values), 1)
    (tmp_path / "t" / "broken.yaml").write_text(broken)
    (tmp_path / "t" / "good.yaml").write_text(gpu_job("good"))
    result = run("convert", "t")
    assert "internal error" not in said(result), said(result)
    assert result.exit_code == 3, said(result)
    assert ("t/broken.yaml:1: Job spec.template.spec.affinity.nodeAffinity."
            "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
            f"matchExpressions[0].values is {shape}, not a list") in result.stderr
    assert (tmp_path / "t" / "broken.yaml").read_text() == broken
    assert "resourceClaimTemplateName" in (tmp_path / "t" / "good.yaml").read_text()


def test_a_count_no_node_holds_is_blocked_at_once(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """4294967296 GPUs were planned as 134 million claims (a hang past 1.4 GB)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "huge.yaml").write_text(gpu_job("huge", gpus=4294967296))
    (tmp_path / "t" / "most.yaml").write_text(gpu_job("most", gpus=128))
    result = run("convert", "t", "--diff")
    assert "internal error" not in said(result), said(result)
    assert "4,294,967,296, more devices than a node holds (at most 128)" in said(result)
    assert "a/t/most.yaml" in result.stdout  # the largest count converted still is


def test_every_refused_report_is_named_in_one_line(tmp_path: Path, report: dict[str, Any]) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "latin1.json").write_bytes(b'{"x": "caf\xe9"}')
    result = run("report", "merge", str(tmp_path / "deep.json"), str(tmp_path / "r.json"),
                 str(tmp_path / "latin1.json"))
    one_line_error(result, 3, "deep.json: not JSON", "latin1.json: not JSON")
