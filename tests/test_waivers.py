"""`.gpudra.yaml` waivers (issue 20): resource-scoped, with a reason, an owner and an expiry
judged on an injected date; inline annotations and `--strict`; convert leaves waived objects
unchanged and lists them as waived."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.cli import app
from gpudra.config import load_config
from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.errors import ConfigError
from gpudra.rules import catalogue

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text())

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: serving
  annotations: {annotations}
spec:
  template:
    spec:
      containers:
      - name: server
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
WAIVER = """\
waivers:
  - rules: [GPU101]
    kind: Deployment
    namespace: serving
    name: {name}
    reason: stays on the device plugin until the Q3 pool upgrade
    owner: ml-platform@example.com
    expires: 2027-03-31
"""
INLINE = '{"gpudra.io/ignore": "GPU101: the team says so"}'


def _tree(tmp_path: Path, config: str, annotations: str = "{}", name: str = "llm") -> Path:
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "llm.yaml").write_text(DEPLOYMENT.format(name="llm",
                                                                  annotations=annotations))
    (tmp_path / ".gpudra.yaml").write_text(config.replace("{name}", name))
    return tmp_path


def _audit(tree: Path, today: dt.date, *, strict: bool = False):
    config = load_config(tree / ".gpudra.yaml", catalogue())
    if strict:
        from dataclasses import replace
        config = replace(config, strict=True)
    return run_audit(AuditRequest([str(tree / "apps")], config, today=today))


def _rules(report) -> list[str]:
    return sorted(f.rule for f in report.findings)


def test_waiver_suppresses_until_its_expiry_day_then_reports_itself(tmp_path: Path) -> None:
    tree = _tree(tmp_path, WAIVER)
    before = _audit(tree, dt.date(2027, 3, 31))
    assert "GPU101" not in _rules(before)
    [waived] = [w for w in before.waived if w.finding.rule == "GPU101"]
    assert (waived.reason, waived.owner, waived.expires) == (
        "stays on the device plugin until the Q3 pool upgrade", "ml-platform@example.com",
        "2027-03-31")
    after = _audit(tree, dt.date(2027, 4, 1))
    assert not [w for w in after.waived if w.finding.rule == "GPU101"]
    assert "GPU101" in _rules(after)  # it stops suppressing...
    [expired] = [f for f in after.findings if f.rule == "GPU902"]  # ...and is reported
    assert "ml-platform@example.com" in expired.message and expired.line == 2
    assert expired.file == str(tree / ".gpudra.yaml")


def test_waiver_selects_only_its_object(tmp_path: Path) -> None:
    report = _audit(_tree(tmp_path, WAIVER, name="other"), dt.date(2027, 1, 1))
    assert "GPU101" in _rules(report) and not report.waived


@pytest.mark.parametrize("glob, waived", [("apps/*", True), ("apps/llm.y*ml", True),
                                          ("charts/*", False)])
def test_path_glob_is_relative_to_the_config(tmp_path: Path, glob: str, waived: bool) -> None:
    config = f"waivers:\n  - {{rules: all, path: '{glob}', reason: vendored}}\n"
    report = _audit(_tree(tmp_path, config), dt.date(2027, 1, 1))
    assert ("GPU101" not in _rules(report)) is waived
    assert bool(report.waived) is waived


def test_inline_annotation_works_and_strict_ignores_it(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "rules: {}\n", annotations=INLINE)
    assert "GPU101" not in _rules(_audit(tree, dt.date(2027, 1, 1)))
    assert "GPU101" in _rules(_audit(tree, dt.date(2027, 1, 1), strict=True))


def test_strict_still_applies_the_waiver_file(tmp_path: Path) -> None:
    tree = _tree(tmp_path, WAIVER, annotations=INLINE)
    report = _audit(tree, dt.date(2027, 1, 1), strict=True)
    assert "GPU101" not in _rules(report) and report.waived


def test_strict_on_the_command_line_and_waived_in_json(tmp_path: Path) -> None:
    tree = _tree(tmp_path, WAIVER, annotations=INLINE, name="nobody")
    runner = CliRunner()
    lax = runner.invoke(app, ["audit", str(tree / "apps"), "-o", "json"])
    strict = runner.invoke(app, ["audit", str(tree / "apps"), "-o", "json", "--strict"])
    assert "GPU101" not in {f["rule"] for f in json.loads(lax.stdout)["findings"]}
    assert "GPU101" in {f["rule"] for f in json.loads(strict.stdout)["findings"]}
    assert strict.exit_code == 1
    (tree / ".gpudra.yaml").write_text(WAIVER.replace("{name}", "llm").replace("2027-03-31",
                                                                          "2999-01-01"))
    data = json.loads(runner.invoke(app, ["audit", str(tree / "apps"), "-o", "json",
                                          "--strict"]).stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert [w["finding"]["rule"] for w in data["waived"]] == ["GPU101"]
    assert data["waived"][0]["owner"] == "ml-platform@example.com"


@pytest.mark.parametrize("entry, message", [
    ("{rules: [GPU101], kind: Pod}", "'reason' is required"),
    ("{rules: [GPU101], reason: because}", "select objects with kind, namespace, name or path"),
    ("{rules: [GPU999], kind: Pod, reason: x}", "unknown rule 'GPU999'"),
    ("{rules: [GPU101], kind: Pod, reason: x, expires: soon}", "'expires' must be a date"),
    ("{rules: [GPU101], kind: Pod, reason: x, team: a}", "unknown key team"),
    ("{kind: Pod, reason: x}", "'rules' must list rule ids"),
    ("Pod", "expected a mapping with rules, reason and a selector"),
])
def test_bad_waivers_are_config_errors(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / ".gpudra.yaml"
    path.write_text(f"waivers:\n  - {entry}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path, catalogue())
    assert "waivers[0]" in str(caught.value)


def _convert(tree: Path, today: dt.date) -> tuple[int, dict]:
    import io

    from gpudra.config import config_for
    from gpudra.run_context import RunContext

    out, err = io.StringIO(), io.StringIO()
    apps = str(tree / "apps")  # its waivers: the tree's .gpudra.yaml, as the CLI finds it
    context = RunContext(config=load_config(config_for((apps,)), catalogue()), today=today)
    code = run_convert(ConvertRequest(paths=(apps,), context=context), JSON,
                       stdout=out, stderr=err)
    return int(code), json.loads(out.getvalue())


def test_convert_leaves_a_waived_object_unchanged_and_lists_it(tmp_path: Path) -> None:
    tree = _tree(tmp_path, WAIVER)
    original = (tree / "apps" / "llm.yaml").read_text()
    code, report = _convert(tree, dt.date(2027, 3, 1))
    assert code == 0 and (tree / "apps" / "llm.yaml").read_text() == original
    [result] = report["workloads"]
    assert result["strategy"] == "waived" and "Q3 pool upgrade" in result["reason"]
    assert report["summary"]["waived"] == 1
    # Expired: convert rewrites it as it would any workload.
    code, report = _convert(tree, dt.date(2027, 4, 1))
    assert report["workloads"][0]["strategy"] == "rewrite"
    assert (tree / "apps" / "llm.yaml").read_text() != original


def test_convert_under_strict_config_ignores_the_annotation(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "strict: true\n", annotations=INLINE)
    _, report = _convert(tree, dt.date(2027, 1, 1))
    assert report["workloads"][0]["strategy"] == "rewrite"
