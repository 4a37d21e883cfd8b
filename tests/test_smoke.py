from gpudra.audit.engine import AuditRequest, run_audit


def test_pod_with_gpu_is_found(tmp_path):
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - name: c\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n")
    report = run_audit(AuditRequest([str(tmp_path)]))
    assert [(f.rule, f.line, f.quantity, f.container) for f in report.findings] == [
        ("GPU101", 9, 2, "c")]


def test_deploy_rbac_is_what_gpudra_rbac_prints() -> None:
    from pathlib import Path

    from gpudra.rbac import manifests, render

    root = Path(__file__).resolve().parents[1]
    expected = render(manifests(report_configmap="gpudra-report"))
    assert (root / "deploy" / "rbac.yaml").read_text() == expected, \
        "regenerate with: gpudra rbac --report-configmap gpudra-report > deploy/rbac.yaml"


def test_deploy_manifests_validate_strictly() -> None:
    from pathlib import Path

    import pytest
    import yaml

    pytest.importorskip("kubernetes_validate")
    from gpudra.dra.validate import StrictValidator
    from gpudra.dra.versions import TargetVersion

    root = Path(__file__).resolve().parents[1] / "deploy"
    validator = StrictValidator(TargetVersion.parse("1.34"))
    docs = [d for f in sorted(root.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    assert {d["kind"] for d in docs} >= {"CronJob", "ClusterRole", "ClusterRoleBinding",
                                         "ServiceAccount"}
    for doc in docs:
        assert validator.errors(doc) == [], doc["kind"]


def test_pre_commit_hooks_run_real_commands(tmp_path) -> None:
    """Each hook's entry, as pre-commit runs it (the entry plus the changed files)."""
    import shlex
    from pathlib import Path

    import yaml
    from typer.testing import CliRunner

    from gpudra.cli import app

    root = Path(__file__).resolve().parents[1]
    hooks = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"gpudra-audit", "gpudra-convert-check"}
    manifest = tmp_path / "job.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                        "  - name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n")
    for hook in hooks:
        argv = shlex.split(hook["entry"])
        assert argv[0] == "gpudra" and hook["language"] == "python"
        result = CliRunner().invoke(app, [*argv[1:], str(manifest)])
        assert result.exit_code == 1, (hook["id"], result.output)  # found work to do
