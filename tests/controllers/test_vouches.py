"""`.gpudra.yaml` `vouch:` (issue 34): read like waivers (a kind, an owner, a reason, an optional
expiry judged on an injected date), refused with one line when wrong; audit counts the GPU
workloads that sit in kinds nobody checked, and the ones vouched for, in every format."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.config import load_config
from gpudra.errors import ConfigError
from gpudra.cli.formats import render
from gpudra.report.formats import Kind, RenderOptions
from gpudra.rules import catalogue

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text())
TODAY = dt.date(2026, 12, 7)

WORKLOAD = """\
apiVersion: {api_version}
kind: {kind}
metadata:
  name: {name}
  namespace: ml
spec:
  template:
    spec:
      containers:
        - name: c
          image: x
          resources:
            limits:
              nvidia.com/gpu: 1
"""


@pytest.mark.parametrize("entry, message", [
    ("{owner: a, reason: b}", "'kind' must name one kind"),
    ("{kind: 'Train*', owner: a, reason: b}", "no globs"),
    ("{kind: Trainer, reason: b}", "'owner' is required"),
    ("{kind: Trainer, owner: a}", "'reason' is required"),
    ("{kind: Trainer, owner: a, reason: ' '}", "'reason' is required"),
    ("{kind: Trainer, owner: a, reason: b, expires: soon}", "'expires' must be a date"),
    ("{kind: Trainer, owner: a, reason: b, apiVersion: a/b/c}", "'apiVersion' must be"),
    ("{kind: Trainer, owner: a, reason: b, team: x}", "unknown key team"),
    ("Trainer", "expected a mapping"),
])
def test_bad_vouches_are_config_errors(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / ".gpudra.yaml"
    path.write_text(f"vouch:\n  - {entry}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path, catalogue())
    assert "vouch[0]" in str(caught.value) and "\n" not in str(caught.value)


def test_vouch_must_be_a_list(tmp_path: Path) -> None:
    path = tmp_path / ".gpudra.yaml"
    path.write_text("vouch: {kind: Trainer}\n")
    with pytest.raises(ConfigError, match="'vouch' must be a list"):
        load_config(path, catalogue())


# (kinds in the tree, vouch entries, unchecked, vouched)
AUDIT_CASES = [
    ([("apps/v1", "Deployment")], "", 0, 0),
    ([("example.com/v1", "Trainer"), ("apps/v1", "Deployment")], "", 1, 0),
    ([("example.com/v1", "Trainer"), ("kubeflow.org/v1alpha2", "MPIJob")], "", 2, 0),
    ([("example.com/v1", "Trainer"), ("example.com/v1", "Runner")],
     "  - {kind: Trainer, apiVersion: example.com, owner: ml, reason: copies it}\n", 1, 1),
    ([("example.com/v1", "Trainer")],
     "  - {kind: Trainer, owner: ml, reason: copies it, expires: 2026-12-06}\n", 1, 0),
    ([("example.com/v1", "Trainer")],
     "  - {kind: Trainer, owner: ml, reason: copies it, expires: 2026-12-07}\n", 0, 1),
]


@pytest.mark.parametrize("kinds, vouches, unchecked, vouched", AUDIT_CASES)
def test_audit_counts_workloads_in_unchecked_kinds(tmp_path: Path, kinds, vouches, unchecked,
                                                   vouched) -> None:
    for i, (api_version, kind) in enumerate(kinds):
        (tmp_path / f"w{i}.yaml").write_text(WORKLOAD.format(api_version=api_version, kind=kind,
                                                             name=f"w{i}"))
    config = tmp_path / ".gpudra.yaml"
    config.write_text(f"vouch:\n{vouches}" if vouches else "{}\n")
    report = run_audit(AuditRequest([str(tmp_path)], load_config(config, catalogue()),
                                    today=TODAY))
    data = json.loads(render(Kind.AUDIT, "json", report, RenderOptions()))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert (data["summary"]["unchecked_kinds"], data["summary"]["vouched_kinds"]) == \
        (unchecked, vouched)
    table = render(Kind.AUDIT, "table", report, RenderOptions())
    markdown = render(Kind.AUDIT, "markdown", report, RenderOptions())
    said = f"{unchecked} GPU workload" if unchecked else f"{vouched} in kinds .gpudra.yaml"
    for text in (table, markdown):
        assert (said in text) == bool(unchecked or vouched), text


def test_report_merge_sums_the_counts_and_reads_older_reports(tmp_path: Path) -> None:
    """`gpudra report merge` adds unchecked_kinds up; a report written before the field existed
    counts 0 (and still validates)."""
    from typer.testing import CliRunner

    from gpudra.cli import app

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "w.yaml").write_text(WORKLOAD.format(api_version="example.com/v1",
                                                           kind="Trainer", name="w"))
    (tmp_path / "t" / ".gpudra.yaml").write_text("{}\n")
    new, old, merged = (tmp_path / n for n in ("new.json", "old.json", "merged.json"))
    runner = CliRunner()
    runner.invoke(app, ["audit", str(tmp_path / "t"), "-q", "-o", f"json={new}"])
    data = json.loads(new.read_text())
    assert data["summary"]["unchecked_kinds"] == 1
    for key in ("unchecked_kinds", "vouched_kinds"):
        del data["summary"][key]
    old.write_text(json.dumps(data))
    runner.invoke(app, ["report", "merge", str(new), str(old), "-o", f"json={merged}"])
    total = json.loads(merged.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(total)
    assert (total["summary"]["unchecked_kinds"], total["summary"]["vouched_kinds"]) == (1, 0)
