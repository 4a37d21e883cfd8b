"""Data-driven rule tests: tests/rules/cases/<RULE>.yaml.

Each case is a manifest (written to `file`, default manifest.yaml; `files` writes several; `target`
is the audit's --target-version, default the newest; `config` is a .gpudra.yaml beside it and
`today` the date its waivers are judged on), or
`cluster`: live objects (multi-document YAML) audited through the cluster source, and the
findings of that rule it must produce, compared on the fields the case names. Every rule in the
catalogue must have a case file with at least one case that fires and one that does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudra.audit.engine import AuditRequest, audit, run_audit
from gpudra.config import Config, load_config
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.rules import catalogue
from gpudra.sources.live import ClusterSource
from tests.memory_cluster import MemoryCluster

CASES_DIR = Path(__file__).parent / "cases"


def _load_cases():
    for path in sorted(CASES_DIR.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        for case in spec["cases"]:
            yield pytest.param(spec["rule"], case, id=f"{spec['rule']}-{case['name']}")


@pytest.mark.parametrize(("rule_id", "case"), list(_load_cases()))
def test_rule_case(rule_id: str, case: dict, tmp_path: Path) -> None:
    if "cluster" in case:
        objects = [o for o in yaml.safe_load_all(case["cluster"]) if o]
        report = audit(ClusterSource(MemoryCluster(objects)), Config(), DEFAULT)
    else:
        files = case.get("files") or {case.get("file", "manifest.yaml"): case["manifest"]}
        for name, text in files.items():
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        target = TargetVersion.parse(str(case["target"])) if "target" in case else DEFAULT
        config = Config()
        if "config" in case:
            (tmp_path / ".gpudra.yaml").write_text(case["config"])
            config = load_config(tmp_path / ".gpudra.yaml", catalogue())
        report = run_audit(AuditRequest([str(tmp_path)], config, target=target,
                                        today=case.get("today")))
    assert not report.errors, report.errors
    got = [f for f in report.findings if f.rule == rule_id]
    expected = case["expect"]
    assert len(got) == len(expected), [f"{f.line}: {f.message}" for f in got]
    for finding, want in zip(sorted(got, key=lambda f: (f.file, f.line)), expected):
        for key, value in want.items():
            actual = getattr(finding, key)
            if key == "file":
                actual = str(Path(actual).relative_to(tmp_path))
            if key == "message":
                assert value in actual, (value, actual)
            else:
                assert actual == value, (key, actual, value, finding.message)


def test_every_rule_has_positive_and_negative_cases() -> None:
    covered: dict[str, list[dict]] = {}
    for path in CASES_DIR.glob("*.yaml"):
        spec = yaml.safe_load(path.read_text())
        assert path.stem == spec["rule"], path
        covered[spec["rule"]] = spec["cases"]
    for rule_id in catalogue():
        cases = covered.get(rule_id)
        assert cases, f"{rule_id} has no tests/rules/cases/{rule_id}.yaml"
        assert any(c["expect"] for c in cases), f"{rule_id}: no case where it fires"
        assert any(not c["expect"] for c in cases), f"{rule_id}: no case where it stays quiet"
