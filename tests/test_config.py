"""`.gpudra.yaml`: discovery, rule settings, custom workload paths, suppression annotations."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.config import find_config, load_config
from gpudra.errors import ConfigError
from gpudra.results.model import Severity
from gpudra.rules import catalogue

POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n{annotations}spec:\n"
       "  tolerations: [{{key: nvidia.com/gpu, operator: Exists}}]\n  containers:\n  - name: c\n"
       "    resources: {{limits: {{nvidia.com/gpu: 1}}}}\n")


def run(tmp_path: Path, config_text: str | None, manifest: str):
    if config_text is not None:
        (tmp_path / ".gpudra.yaml").write_text(config_text)
    sub = tmp_path / "deploy" / "team"
    sub.mkdir(parents=True, exist_ok=True)
    (sub / "m.yaml").write_text(manifest)
    config = load_config(find_config(sub), catalogue())
    return run_audit(AuditRequest([str(sub)], config))


def test_config_is_found_walking_up_and_applied(tmp_path):
    report = run(tmp_path, "rules:\n  GPU304: disable\n  GPU101: {severity: error}\n",
                 POD.format(annotations=""))
    assert [(f.rule, f.severity) for f in report.findings] == [("GPU101", Severity.ERROR)]
    assert report.disabled_rules == {"GPU304"}


def test_suppression_annotation_with_reason(tmp_path):
    ann = '  annotations:\n    gpudra.io/ignore: "GPU101: stays on the device plugin until Q3"\n'
    report = run(tmp_path, None, POD.format(annotations=ann))
    assert [f.rule for f in report.findings] == ["GPU304"]
    assert report.suppressed == 1


def test_suppression_without_reason_suppresses_nothing(tmp_path):
    ann = '  annotations:\n    gpudra.io/ignore: "GPU101"\n'
    report = run(tmp_path, None, POD.format(annotations=ann))
    assert sorted(f.rule for f in report.findings) == ["GPU101", "GPU304", "GPU901"]


def test_custom_crd_pod_spec_path(tmp_path):
    crd = ("apiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: t}\nspec:\n"
           "  worker:\n    image: x\n    resources: {limits: {nvidia.com/gpu: 3}}\n"
           "  selector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n")
    config = ("workloads:\n- apiVersion: example.com/v1\n  kind: Trainer\n"
              "  podSpecs: ['$.spec']\n  containers: [worker]\n")
    report = run(tmp_path, config, crd)
    (finding,) = report.findings
    assert (finding.rule, finding.line, finding.quantity) == ("GPU101", 7, 3)
    assert "outside" not in finding.message


@pytest.mark.parametrize(("text", "message"), [
    ("rules: {GPU999: disable}\n", "unknown rule 'GPU999'"),
    ("rules: {GPU101: loud}\n", "GPU101: expected"),
    ("rulez: {}\n", "unknown key rulez;"),
    ("rulez: {}\ncolour: red\n", "unknown keys colour, rulez;"),
    ("workloads: [{kind: X, podSpecs: ['$.spec'], x: 1}]\n", "unknown key x"),
    ("workloads: [{kind: X}]\n", "'podSpecs' must list"),
    ("workloads: [{kind: X, podSpecs: ['spec..[']}]\n", "invalid JSONPath"),
    ("rules: [\n", "not valid YAML"),
])
def test_invalid_config_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / ".gpudra.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, catalogue())
    assert message in str(info.value)
    assert str(path) in str(info.value)
