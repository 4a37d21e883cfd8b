"""The real-world corpus (../shared/corpus, 120 public manifests): breadth without a crash.

Skipped cleanly where the corpus is absent: the project must not need it to run.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from corpus_oracle import expected_lines

from gpudra.audit.engine import AuditRequest, run_audit

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")


@pytest.fixture(scope="module")
def report():
    return run_audit(AuditRequest([str(CORPUS)]))


def manifest_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def test_whole_corpus_is_read(report):
    assert report.files_scanned == len(manifest_files())
    assert not report.errors, report.errors


def test_every_device_request_is_found_on_its_line(report):
    lines = defaultdict(set)
    for f in report.findings:
        lines[f.file].add(f.line)
    missing = {}
    for path in manifest_files():
        expected, _ = expected_lines(path)
        lost = expected - lines[str(path)]
        if lost:
            missing[str(path.relative_to(CORPUS))] = sorted(lost)
    assert not missing


def test_templated_files_are_reported_as_templates(report):
    templated = {str(p) for p in manifest_files() if expected_lines(p)[1]}
    assert templated, "the corpus has Helm/Go templates"
    by_file = defaultdict(set)
    for f in report.findings:
        by_file[f.file].add(f.rule)
    for path in templated:
        if expected_lines(Path(path))[0]:
            assert "GPU701" in by_file[path], path
            assert "GPU101" not in by_file[path], path


def test_upstream_dra_files_raise_no_errors(report):
    """The corpus's DRA manifests come from the driver and Kubernetes projects: valid for their
    apiVersion. Only warnings (a claim defined outside the corpus) may appear on them, and
    GPU611 where a file's version is one the default target (1.37) no longer serves."""
    dra_files = {str(p) for p in manifest_files() if b"resource.k8s.io" in p.read_bytes()}
    assert len(dra_files) >= 5
    errors = [(f.file, f.line, f.rule) for f in report.findings
              if f.file in dra_files and f.rule.startswith("GPU6") and f.rule != "GPU611"
              and f.severity.value == "error"]
    assert errors == []
