from gpudra.audit import AuditRequest, run_audit


def test_pod_with_gpu_is_found(tmp_path):
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - name: c\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n")
    report = run_audit(AuditRequest([str(tmp_path)]))
    assert [(f.rule, f.line, f.quantity, f.container) for f in report.findings] == [
        ("GPU101", 9, 2, "c")]
