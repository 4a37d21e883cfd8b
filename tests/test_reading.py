"""One reading of inputs: audit and convert agree on every input, broken or not.

Each case is a small tree; both commands must report the same files scanned, documents
parsed, errors (file and line) and skipped documents, and the same verdict: an error (exit 3
in both) or not. convert's input errors go to stderr, never to stdout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.cli import app
from gpudra.convert.converter import convert_paths
from gpudra.convert.planner import ConvertOptions
from gpudra.dra.versions import DEFAULT

JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  template:
    spec:
      containers:
      - name: c
        image: IMAGE
        resources: {limits: {nvidia.com/gpu: 1}}
"""
GITLAB_CI = """.setup: &setup
  script: [echo setup]
train:
  image: nvidia/cuda:12.4.0-base
  script:
    - !reference [.setup, script]
    - nvidia-smi
"""

# name -> (files, errors as (file, line), skipped as (file, line))
CASES: dict[str, tuple[dict[str, bytes | str], list[tuple[str, int | None]],
                       list[tuple[str, int]]]] = {
    "gitlab-ci-reference-tag": ({"ci.yaml": GITLAB_CI}, [], [("ci.yaml", 1)]),
    "custom-tag-outside-an-object": ({"tool.yaml": "gpu: !vault secret/gpu\n"}, [],
                                     [("tool.yaml", 1)]),
    "config-without-kind": ({"values.yaml": "gpu: {enabled: true}\n"}, [],
                            [("values.yaml", 1)]),
    "unknown-tag-in-an-object": ({"job.yaml": JOB.replace("IMAGE", "!img nvidia/cuda")},
                                 [("job.yaml", 9)], []),
    "alias-from-another-document": (
        {"two.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
                     "data: &d {x: nvidia}\n---\n" + JOB.replace("image: IMAGE", "env: *d")},
        [("two.yaml", 14)], []),
    "syntax-error": ({"bad.yaml": JOB.replace("IMAGE", "[cuda")}, [("bad.yaml", 10)], []),
    # needles only the audit's list has: convert used to skip these without a word
    "not-utf8-with-an-audit-needle": ({"latin1.yaml": b"kind: ConfigMap # nvidia caf\xe9\n"},
                                      [("latin1.yaml", None)], []),
    "broken-document-with-an-audit-needle": ({"gpu.yaml": "kind: ConfigMap # gpu\ndata: [\n"},
                                             [("gpu.yaml", 3)], []),
    "broken-json": ({"pods.json": '{"kind": "Pod", "nvidia.com/gpu": [1,\n}\n'},
                    [("pods.json", 2)], []),
    "valid-json-manifest": ({"pod.json": json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})},
        [], []),
    "no-needle-is-never-parsed": ({"broken.yaml": "kind: ConfigMap\ndata: [\n"}, [], []),
    "object-and-skipped-and-broken": (
        {"a.yaml": JOB.replace("IMAGE", "cuda"), "ci.yaml": GITLAB_CI,
         "b.yaml": JOB.replace("IMAGE", "[cuda")},
        [("b.yaml", 10)], [("ci.yaml", 1)]),
}


def _tree(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in files.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return tmp_path


def _where(items, root: Path) -> list[tuple[str, int | None]]:
    return sorted((os.path.relpath(i.file, root), i.line) for i in items)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_audit_and_convert_read_inputs_alike(tmp_path: Path, case: str) -> None:
    files, errors, skipped = CASES[case]
    root = _tree(tmp_path, files)
    audited = run_audit(AuditRequest([str(root)]))
    converted = convert_paths([str(root)], ConvertOptions(DEFAULT))
    assert _where(audited.errors, root) == _where(converted.errors, root) == sorted(errors)
    assert _where(audited.skipped, root) == _where(converted.skipped, root) == sorted(skipped)
    assert (audited.files_scanned, audited.documents_parsed) == \
        (converted.files_scanned, converted.documents_parsed) == \
        (len(files), audited.documents_parsed)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_audit_and_convert_exit_alike_with_errors_on_stderr(tmp_path: Path, case: str) -> None:
    files, errors, _ = CASES[case]
    root = _tree(tmp_path, files)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    audit = CliRunner().invoke(app, ["audit", str(root), "--fail-on", "never"])
    convert = CliRunner().invoke(app, ["convert", str(root), "--check"])
    assert (audit.exit_code == 3) == (convert.exit_code == 3) == bool(errors), \
        (audit.output, convert.output)
    for file, _line in errors:
        assert file in convert.stderr and file not in convert.stdout
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_missing_path_is_an_error_on_stderr_only() -> None:
    result = CliRunner().invoke(app, ["convert", "/nonexistent-gpudra-path"])
    assert result.exit_code == 3
    assert "/nonexistent-gpudra-path" in result.stderr
    assert "/nonexistent-gpudra-path" not in result.stdout
    assert "0 files scanned" in result.stdout


def test_skipped_documents_are_counted_and_listed_with_verbose(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"ci.yaml": GITLAB_CI, "job.yaml": JOB.replace("IMAGE", "cuda")})
    quiet = CliRunner().invoke(app, ["audit", str(root)])
    assert "1 skipped (not Kubernetes objects)" in quiet.stdout
    assert "ci.yaml:1" not in quiet.stdout
    verbose = CliRunner().invoke(app, ["audit", str(root), "-v"])
    assert f"{root}/ci.yaml:1: not a Kubernetes object" in verbose.stdout
    convert = CliRunner().invoke(app, ["convert", str(root), "--check", "-v"])
    assert convert.exit_code == 1
    assert f"skipped  {root}/ci.yaml:1: not a Kubernetes object" in convert.stdout
    assert "2 files scanned, 2 documents parsed, 1 skipped" in convert.stdout
    data = json.loads(CliRunner().invoke(app, ["audit", str(root), "-o", "json"]).stdout)
    assert data["summary"]["skipped"] == 1
    assert [s["file"] for s in data["skipped"]] == [f"{root}/ci.yaml"]


def test_an_unreadable_file_is_an_error_and_not_scanned_in_both(tmp_path: Path,
                                                               monkeypatch) -> None:
    """Permission denied (simulated: the suite may run as root): one error, nothing scanned,
    in both commands (convert counted the file as scanned)."""
    import gpudra.sources.file_bytes as files

    root = _tree(tmp_path, {"job.yaml": JOB.replace("IMAGE", "cuda"), "locked.yaml": JOB})
    real = files.read_regular

    def read(path: str, limit: int | None = None) -> bytes:
        if path.endswith("locked.yaml"):
            raise PermissionError(13, "Permission denied", path)
        return real(path, limit)

    monkeypatch.setattr(files, "read_regular", read)
    audited = run_audit(AuditRequest([str(root)]))
    converted = convert_paths([str(root)], ConvertOptions(DEFAULT))
    for report in (audited, converted):
        assert [(Path(e.file).name, e.message) for e in report.errors] == \
            [("locked.yaml", "Permission denied")]
        assert report.files_scanned == 1
