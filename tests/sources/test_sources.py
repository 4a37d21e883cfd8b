"""The file source: reading the oddities kubectl accepts, and never losing an input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.results.model import ExitCode, FailOn
from gpudra.sources.documents import Chunk, ParseError, parse_chunk, split_documents

POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
       "    resources:\n      limits:\n        nvidia.com/gpu: 1\n")


def audit(*paths: Path | str, stdin: bytes | None = None):
    return run_audit(AuditRequest([str(p) for p in paths]),
                     stdin=(lambda: stdin) if stdin is not None else None)


def gpu_lines(report) -> list[tuple[str, int]]:
    return [(Path(f.file).name, f.line) for f in report.findings if f.rule == "GPU101"]


@pytest.mark.parametrize("transform", [
    pytest.param(lambda t: t.encode(), id="plain"),
    pytest.param(lambda t: b"\xef\xbb\xbf" + t.encode(), id="bom"),
    pytest.param(lambda t: t.replace("\n", "\r\n").encode(), id="crlf"),
    pytest.param(lambda t: t.replace("Pod\n", "Pod\t\n").encode(), id="trailing-tab"),
    pytest.param(lambda t: ("%YAML 1.1\n# header\n---\n" + t).encode(), id="directive"),
    pytest.param(lambda t: ("---\n# empty doc\n---\n" + t + "...\n").encode(), id="markers"),
])
def test_oddities_kubectl_accepts_keep_line_numbers(tmp_path, transform):
    raw = transform(POD)
    (tmp_path / "pod.yaml").write_bytes(raw)
    report = audit(tmp_path)
    assert not report.errors
    expected = raw.decode("utf-8-sig").replace("\r\n", "\n").splitlines().index(
        "        nvidia.com/gpu: 1") + 1
    assert gpu_lines(report) == [("pod.yaml", expected)]


def test_multi_document_lines_are_file_lines(tmp_path):
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" + POD + "---\n" + POD
    (tmp_path / "m.yaml").write_text(text)
    assert gpu_lines(audit(tmp_path)) == [("m.yaml", 13), ("m.yaml", 23)]


def test_json_manifest_and_list(tmp_path):
    (tmp_path / "pods.json").write_text(
        '{"apiVersion": "v1", "kind": "List", "items": [\n'
        ' {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},\n'
        '  "spec": {"containers": [{"name": "c",\n'
        '   "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}]}\n')
    report = audit(tmp_path)
    assert [(f.name, f.line, f.quantity) for f in report.findings] == [("a", 4, 2)]


def test_json_with_tabs_falls_back_to_json(tmp_path):
    (tmp_path / "pod.json").write_text(
        '{\n\t"apiVersion": "v1",\n\t"kind": "Pod",\n\t"metadata": {"name": "t"},\n'
        '\t"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}\n}\n')
    report = audit(tmp_path)
    assert not report.errors
    assert [(f.rule, f.name) for f in report.findings] == [("GPU101", "t")]


def test_unparseable_file_is_an_error_and_the_rest_is_audited(tmp_path):
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [nvidia\n")
    (tmp_path / "good.yaml").write_text(POD)
    report = audit(tmp_path)
    assert [(Path(e.file).name, e.line) for e in report.errors] == [("bad.yaml", 5)]
    assert gpu_lines(report) == [("good.yaml", 9)]
    assert report.exit_code(FailOn.NEVER) is ExitCode.INPUT_ERROR


def test_missing_path_and_non_utf8_are_errors(tmp_path):
    (tmp_path / "latin1.yaml").write_bytes(b"kind: Pod # nvidia \xe9\n")
    report = audit(tmp_path / "nope", tmp_path)
    messages = sorted(e.message for e in report.errors)
    assert messages == ["no such file or directory", "not UTF-8 text (byte 19)"]


def test_skipped_dirs_and_excludes(tmp_path):
    for sub in (".git", "node_modules", "vendor", "keep", "drop"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "pod.yaml").write_text(POD)
    report = run_audit(AuditRequest([str(tmp_path)], excludes=("drop",)))
    assert [Path(f.file).parent.name for f in report.findings] == ["keep"]


def test_helm_chart_templates_and_values_are_text(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates" / "sub").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("gpu:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    (chart / "templates" / "sub" / "job.yaml").write_text(
        "kind: Job\nspec:\n  limits:\n    nvidia.com/gpu: {{ .Values.gpus }}\n")
    report = audit(tmp_path)
    assert not report.errors
    got = sorted((Path(f.file).name, f.line, f.rule, f.quantity) for f in report.findings)
    assert got == [("job.yaml", 4, "GPU701", None), ("values.yaml", 4, "GPU701", 2)]


def test_stdin_with_helm_source_comments():
    rendered = ("---\n# Source: llm/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\n"
                "metadata: {name: c}\n---\n# Source: llm/templates/pod.yaml\n" + POD)
    report = audit("-", stdin=rendered.encode())
    (finding,) = report.findings
    assert (finding.file, finding.line, finding.template) == ("-", 16, "llm/templates/pod.yaml")


def test_argo_parameters_are_not_go_templates(tmp_path):
    (tmp_path / "wf.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec:\n"
        "  templates:\n  - name: t\n    container:\n      args: ['{{inputs.parameters.x}}']\n"
        "      resources: {limits: {nvidia.com/gpu: 1}}\n")
    assert [f.rule for f in audit(tmp_path).findings] == ["GPU101"]


def test_split_documents_keeps_every_byte():
    text = "%YAML 1.1\n---\na: 1\n--- # c\nb: 2\n...\n---\nc: 3"
    chunks = split_documents(text)
    assert "".join(c.text for c in chunks) == text
    assert [c.first_line for c in chunks] == [1, 4, 6, 7]


def test_parse_error_reports_file_line():
    with pytest.raises(ParseError) as info:
        parse_chunk(Chunk("a: 1\nb: [\n", 10))
    assert info.value.line == 12


def test_empty_directory_scans_nothing(tmp_path):
    report = audit(tmp_path)
    assert report.files_scanned == 0
    assert report.exit_code(FailOn.NEVER) is ExitCode.INPUT_ERROR


def test_empty_stdin_is_an_input_error():
    report = audit("-", stdin=b"  \n")
    assert [(e.file, e.message.split(" (")[0]) for e in report.errors] == [("-", "stdin is empty")]
    assert report.exit_code(FailOn.NEVER) is ExitCode.INPUT_ERROR


def test_fifo_named_yaml_is_skipped(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "pod.yaml").write_text(POD)
    report = audit(tmp_path)
    assert report.files_scanned == 1 and gpu_lines(report) == [("pod.yaml", 9)]


# -- JSON: parsed as JSON, lines found without YAML --------------------------------------------

GPU_LIST = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "annotations": {
        "note": 'braces } { and "quotes" [ ] in a string', "ünï": "cödé"}},
     "spec": {"containers": [{"name": "c", "image": "cuda",
                              "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": i + 1}}}]}}
    for i in range(3)]}


def _gpu_key_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if '"nvidia.com/gpu"' in line]


@pytest.mark.parametrize("indent", [None, 1, 4, "\t"],
                         ids=["one-line", "indent1", "indent4", "tabs"])
def test_json_is_parsed_as_json_with_the_lines_of_the_keys(tmp_path, monkeypatch, indent):
    import gpudra.sources.reading as reading

    def no_yaml(chunk):
        raise AssertionError("valid JSON must not go through the YAML parser")

    monkeypatch.setattr(reading, "parse_chunk", no_yaml)
    text = json.dumps(GPU_LIST, indent=indent, ensure_ascii=False)
    (tmp_path / "pods.json").write_text(text + "\n", encoding="utf-8")
    report = audit(tmp_path)
    assert not report.errors
    expected = [1, 1, 1] if indent is None else _gpu_key_lines(text)
    assert [(f.name, f.line, f.quantity) for f in report.findings if f.rule == "GPU101"] == \
        [("p0", expected[0], 1), ("p1", expected[1], 2), ("p2", expected[2], 3)]


def test_json_that_is_only_yaml_falls_back_to_yaml(tmp_path):
    # Unquoted keys, a trailing comma and a comment: not JSON, but valid (flow) YAML, which
    # kubectl reads too.
    (tmp_path / "pod.json").write_text(
        "{apiVersion: v1, kind: Pod, metadata: {name: y},  # by hand\n"
        " spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]},\n}\n")
    report = audit(tmp_path)
    assert not report.errors
    assert [(f.rule, f.name, f.line) for f in report.findings] == [("GPU101", "y", 2)]


def test_invalid_json_reports_the_json_error_and_line(tmp_path):
    (tmp_path / "bad.json").write_text('{\n  "kind": "Pod",\n  "nvidia": [1,\n}\n')
    report = audit(tmp_path)
    assert [(e.message, e.line) for e in report.errors] == [("Expecting value", 4)]


@pytest.mark.parametrize("name", ["pods.json", "pods.yaml"])
def test_top_level_array_items_have_the_lines_of_their_keys(tmp_path, name):
    text = json.dumps(GPU_LIST["items"], indent=2)  # JSON is YAML too
    (tmp_path / name).write_text(text + "\n")
    report = audit(tmp_path)
    assert not report.errors
    assert [f.line for f in report.findings if f.rule == "GPU101"] == _gpu_key_lines(text)


# -- the pre-scan decides what can be an input error (docs/exit-codes.md) ----------------------

ROOT = Path(__file__).resolve().parents[2]


def test_broken_files_without_a_needle_are_not_parsed(tmp_path):
    from gpudra.sources.reading import NEEDLES

    (tmp_path / "broken.yaml").write_text("kind: ConfigMap\ndata: [\n")
    (tmp_path / "broken.json").write_text('{"kind": "ConfigMap",\n')
    (tmp_path / "latin1.yaml").write_bytes(b"kind: ConfigMap # caf\xe9\n")
    # A needle elsewhere in the file: only the document that holds one is parsed.
    (tmp_path / "multi.yaml").write_text("kind: ConfigMap\ndata: [\n---\n" + POD)
    report = audit(tmp_path)
    assert (report.errors, report.files_scanned) == ((), 4)
    assert gpu_lines(report) == [("multi.yaml", 12)]
    for needle in NEEDLES:  # the same breakage next to any needle is an input error
        (tmp_path / "broken.yaml").write_bytes(b"kind: ConfigMap # " + needle + b"\ndata: [\n")
        assert [Path(e.file).name for e in audit(tmp_path).errors] == ["broken.yaml"], needle


@pytest.mark.parametrize("page", ["docs/exit-codes.md", "docs/quickstart.md"])
def test_docs_name_exactly_the_pre_scan_needles(page):
    from gpudra.sources.reading import NEEDLES

    text = (ROOT / page).read_text()
    sentence = next(p for p in text.split("\n\n") if "`resourceClaim`" in p)
    named = re.findall(r"`([^`]+)`", sentence)
    assert [n for n in named if n.encode() in NEEDLES] == [n.decode() for n in NEEDLES]


def test_convert_needles_are_within_the_audit_needles() -> None:
    """Convert never reads a document that audit skips: each of its needles holds one of audit's."""
    from gpudra.sources.prescan import AUDIT_NEEDLES, CONVERT_BYTE_NEEDLES

    for needle in CONVERT_BYTE_NEEDLES:
        assert any(a in needle for a in AUDIT_NEEDLES), needle
