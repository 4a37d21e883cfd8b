"""The JSON report is a public contract: validate real output against docs/report-schema.json."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.cli.formats import render
from gpudra.report.formats import Kind

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text())


def test_examples_report_matches_schema():
    report = run_audit(AuditRequest([str(ROOT / "examples")]))
    data = json.loads(render(Kind.AUDIT, "json", report))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["findings"], "the example tree must produce findings"
    assert data["summary"]["gpu_workloads"] >= 5
    assert 0 < data["summary"]["percent_migrated"] < 100


def test_report_with_errors_matches_schema(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: Pod\nmetadata: {name: [nvidia\n")
    report = run_audit(AuditRequest([str(tmp_path), str(tmp_path / "missing")]))
    data = json.loads(render(Kind.AUDIT, "json", report))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert len(data["errors"]) == 2
