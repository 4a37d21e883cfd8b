"""`gpudra audit` end to end: every -o format, the exit-code contract, stdin, stdout vs stderr.

Typer's CliRunner (0.29) keeps stdout and stderr apart (`result.stdout` / `result.stderr`), so
most tests run in-process; a few go through `python -m gpudra` to check the real streams.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from gpudra.cli import app
from gpudra.cli.formats import names
from gpudra.report.formats import Kind
from gpudra.report.targets import OutputTarget

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers:
  - name: main
    image: cuda
    resources:
      limits:
        nvidia.com/gpu: 1
"""
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n"
# nvidia.com/gpu: 0 raises only GPU107, an info finding.
ZERO_GPU = GPU_POD.replace("name: trainer", "name: cpu-only").replace("gpu: 1", "gpu: 0")
# Mentions a GPU (so it is parsed) and breaks at line 7.
BROKEN = ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
          "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}\n  bad: [\n")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/tree with one GPU pod and one clean file; cwd is tmp, so paths print relative."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "pod.yaml").write_text(GPU_POD)
    (root / "clean.yaml").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    return root


def audit(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["audit", *args], input=input)


# -- every format ----------------------------------------------------------------------------


def _parse(fmt: str, text: str) -> object:
    """Each machine format must parse as what it claims to be."""
    if fmt in ("json", "sarif"):
        return json.loads(text)
    if fmt == "yaml":
        return yaml.safe_load(text)
    if fmt == "junit":
        return ET.fromstring(text.encode("utf-8"))
    return text


@pytest.mark.parametrize("fmt", names(Kind.AUDIT))
def test_each_format_reports_the_gpu_pod(tree: Path, fmt: str) -> None:
    result = audit("tree", "-o", fmt)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    assert "GPU101" in result.stdout and "tree/pod.yaml" in result.stdout
    assert "clean.yaml" not in result.stdout
    _parse(fmt, result.stdout)


def test_sarif_points_at_the_line(tree: Path) -> None:
    log = json.loads(audit("tree", "-o", "sarif").stdout)
    (result,) = log["runs"][0]["results"]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "tree/pod.yaml"
    assert physical["region"]["startLine"] == 10


def test_github_format_is_one_annotation(tree: Path) -> None:
    lines = audit("tree", "-o", "github").stdout.splitlines()
    assert lines[0].startswith("::warning file=tree/pod.yaml,line=10,title=GPU101 ")
    assert len(lines) == 2 and lines[1].startswith("gpudra: 2 files scanned")


# -- exit codes ------------------------------------------------------------------------------


def test_clean_tree_exits_0(tree: Path) -> None:
    (tree / "pod.yaml").unlink()
    result = audit("tree", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["findings"] == []


def test_fail_on_never_exits_0(tree: Path) -> None:
    result = audit("tree", "--fail-on", "never")
    assert result.exit_code == 0
    assert "GPU101" in result.stdout


@pytest.mark.parametrize(("fail_on", "code"), [("info", 1), ("warning", 0), ("error", 0)])
def test_info_finding_against_fail_on(tmp_path: Path, fail_on: str, code: int) -> None:
    (tmp_path / "zero.yaml").write_text(ZERO_GPU)
    result = audit(str(tmp_path), "--fail-on", fail_on, "-o", "json")
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["GPU107"]
    assert result.exit_code == code


@pytest.mark.parametrize(("fail_on", "code", "failures", "skipped"),
                         [(None, 0, "0", "1"), ("info", 1, "1", "0"), ("never", 0, "0", "1")])
def test_junit_failures_follow_fail_on(tmp_path: Path, fail_on: str | None, code: int,
                                       failures: str, skipped: str) -> None:
    (tmp_path / "zero.yaml").write_text(ZERO_GPU)  # one info finding (GPU107)
    args = ("--fail-on", fail_on) if fail_on else ()
    result = audit(str(tmp_path), "-o", "junit", *args)
    assert result.exit_code == code, result.stderr
    suite = ET.fromstring(result.stdout.encode())
    assert (suite.get("failures"), suite.get("skipped")) == (failures, skipped)


def test_error_finding_fails_at_error(tmp_path: Path) -> None:
    mismatch = GPU_POD.replace("limits:\n        nvidia.com/gpu: 1",
                               "requests: {nvidia.com/gpu: 1}\n      limits: {nvidia.com/gpu: 2}")
    (tmp_path / "pod.yaml").write_text(mismatch)
    result = audit(str(tmp_path), "--fail-on", "error", "-o", "json")
    assert "GPU104" in {f["rule"] for f in json.loads(result.stdout)["findings"]}
    assert result.exit_code == 1


@pytest.mark.parametrize("args", [("-o", "nope"), ("--fail-on", "sometimes")],
                         ids=["output", "fail-on"])
def test_bad_option_value_exits_2(tree: Path, args: tuple[str, ...]) -> None:
    result = audit("tree", *args)
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr and "nope" not in result.stdout


@pytest.mark.parametrize(("text", "expect"), [
    ("rules:\n  bogus: disable\n", "unknown rule 'bogus'"),
    ("rules: [\n", "not valid YAML"),
    ("colour: red\n", "unknown key colour"),
])
def test_bad_config_file_exits_2(tree: Path, text: str, expect: str) -> None:
    config = tree.parent / "bad-config.yaml"
    config.write_text(text)
    result = audit("tree", "--config", str(config))
    assert result.exit_code == 2
    assert result.stderr.startswith("gpudra: error: ") and expect in result.stderr
    assert result.stdout == ""


def test_missing_config_file_exits_2(tree: Path) -> None:
    result = audit("tree", "--config", "no-such.yaml")
    assert result.exit_code == 2 and "no-such.yaml" in result.stderr


def test_missing_path_exits_3(tree: Path) -> None:
    result = audit("tree", "missing", "-o", "json")
    assert result.exit_code == 3
    assert "gpudra: missing: no such file or directory" in result.stderr
    # The rest of the inputs are still audited.
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["GPU101"]


def test_unparseable_yaml_is_reported_with_line_and_the_rest_is_audited(tree: Path) -> None:
    (tree / "broken.yaml").write_text(BROKEN)
    result = audit("tree", "-o", "json")
    assert result.exit_code == 3
    assert "gpudra: tree/broken.yaml:8: " in result.stderr
    data = json.loads(result.stdout)
    assert [(f["rule"], f["file"]) for f in data["findings"]] == [("GPU101", "tree/pod.yaml")]
    assert [(e["file"], e["line"]) for e in data["errors"]] == [("tree/broken.yaml", 8)]


def test_unparseable_yaml_wins_over_fail_on_never(tree: Path) -> None:
    (tree / "broken.yaml").write_text(BROKEN)
    assert audit("tree", "--fail-on", "never").exit_code == 3


def test_empty_directory_exits_3(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = audit(str(empty))
    assert result.exit_code == 3
    assert "no manifests found" in result.stderr


# -- stdin -----------------------------------------------------------------------------------


def test_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = audit("-", "-o", "json", input=GPU_POD)
    assert result.exit_code == 1, result.stderr
    (finding,) = json.loads(result.stdout)["findings"]
    assert (finding["rule"], finding["file"], finding["line"]) == ("GPU101", "-", 10)


def test_clean_stdin_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert audit("-", input=CLEAN).exit_code == 0


# -- the real process ------------------------------------------------------------------------


def _run(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudra", "audit", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, encoding="utf-8", timeout=120)


def test_process_streams_findings_to_stdout_and_errors_to_stderr(tree: Path) -> None:
    (tree / "broken.yaml").write_text(BROKEN)
    proc = _run(tree.parent, "tree", "-o", "github")
    assert proc.returncode == 3
    assert "::warning file=tree/pod.yaml,line=10," in proc.stdout
    assert "::error file=tree/broken.yaml,line=8," in proc.stdout
    assert "gpudra: tree/broken.yaml:8: " in proc.stderr
    assert "::" not in proc.stderr


def test_process_stdin_and_usage_error(tmp_path: Path) -> None:
    proc = _run(tmp_path, "-", "-o", "sarif", stdin=GPU_POD)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["runs"][0]["results"][0]["ruleId"] == "GPU101"
    bad = _run(tmp_path, "-", "-o", "nope", stdin=GPU_POD)
    assert bad.returncode == 2 and bad.stdout == "" and "Invalid value" in bad.stderr


def test_version_prints_the_package_version_and_what_it_was_checked_against():
    import subprocess
    import sys

    from gpudra import __version__
    from gpudra.dra.versions import DRA_DRIVER_CHECKED, MAX_MINOR, MIN_MINOR

    done = subprocess.run([sys.executable, "-m", "gpudra", "--version"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0
    first, *rest = done.stdout.splitlines()
    assert first == f"gpudra {__version__}"
    assert f"Kubernetes 1.{MIN_MINOR} to 1.{MAX_MINOR}" in done.stdout
    facts = (Path(__file__).resolve().parents[1] / "docs" / "facts.md").read_text()
    for release in DRA_DRIVER_CHECKED:
        assert release in done.stdout
        # the numbers live in versions.py; facts.md says where each was read
        assert release.split()[0] in facts and release.split()[-1].strip("()") in facts


def test_no_gpu_workloads_means_nothing_left_to_migrate(tmp_path):
    from gpudra.audit.engine import AuditRequest, run_audit
    from gpudra.report.summary import summarize

    (tmp_path / "web.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: w}\n"
                                       "spec: {containers: [{name: c, image: nginx}]}\n")
    summary = summarize(run_audit(AuditRequest([str(tmp_path)])))
    assert (summary.gpu_workloads, summary.percent_migrated) == (0, 100.0)


def test_a_chart_that_requests_device_plugin_gpus_is_not_migrated(tmp_path):
    """Issue 13.13: a chart's values or templates asking for nvidia.com/gpu count as one GPU
    workload still on the device plugin, so a tree is never "100% migrated" while they do."""
    from gpudra.audit.engine import AuditRequest, run_audit
    from gpudra.report.summary import summarize

    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
        "      resourceClaims: [{name: gpu, resourceClaimTemplateName: g}]\n"
        "      containers: [{name: c, image: cuda, resources: {claims: [{name: gpu}]}}]\n")
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: llm\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("gpus:\n  nvidia.com/gpu: 2\n")
    (chart / "templates" / "d.yaml").write_text(
        "limits:\n  nvidia.com/gpu: {{ .Values.gpus }}\n  nvidia.com/mig-1g.10gb: 0\n")
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "Chart.yaml").write_text("apiVersion: v2\nname: z\nversion: 1.0.0\n")
    (tmp_path / "zero" / "values.yaml").write_text("gpu: {nvidia.com/gpu: 0}\n")
    summary = summarize(run_audit(AuditRequest([str(tmp_path)])))
    assert (summary.gpu_workloads, summary.on_device_plugin, summary.on_dra) == (2, 1, 1)
    assert summary.percent_migrated == 50.0


def test_nim_services_on_the_operators_dra_path_are_migrated(tmp_path):
    """Issue 13.6: a NIMService (or a NIMPipeline service) with draResources is on DRA."""
    from gpudra.audit.engine import AuditRequest, run_audit
    from gpudra.report.summary import summarize

    (tmp_path / "nim.yaml").write_text(
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {name: a}\n"
        "spec: {draResources: [{resourceClaimTemplateName: gpu}]}\n---\n"
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMPipeline\nmetadata: {name: b}\n"
        "spec: {services: [{name: llm, spec: {draResources: [{claimCreationSpec: "
        "{devices: [{name: gpu}]}}]}}]}\n---\n"
        "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {name: c}\n"
        "spec: {resources: {limits: {nvidia.com/gpu: 1}}}\n")
    summary = summarize(run_audit(AuditRequest([str(tmp_path)])))
    assert (summary.gpu_workloads, summary.on_dra, summary.on_device_plugin) == (3, 2, 1)


# -- user text in the table, and crashes -----------------------------------------------------


def test_helm_chart_by_absolute_path_renders_the_table(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (chart / "templates" / "job.yaml").write_text(
        "kind: Job\nspec:\n  limits:\n    nvidia.com/gpu: {{ .Values.gpus }}\n")
    result = audit(str(tmp_path))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 1, result.stderr
    assert f"{chart}/templates/job.yaml" in result.stdout
    assert f"  [{chart}]" in result.stdout  # the template, as documented (docs/quickstart.md)


def _raise(*args: object, **kwargs: object) -> None:
    raise RuntimeError("boom\nsecond line")


# Each command, and the core function it calls, patched to fail unexpectedly.
CRASHES = [
    (("audit", "."), "gpudra.audit.engine.run_audit"),
    (("convert", "."), "gpudra.convert.run.convert"),
    (("rules",), "gpudra.rules.docs.render_table"),
    (("explain", "GPU101"), "gpudra.preflight.docs.explain_id"),
]


@pytest.mark.parametrize(("args", "target"), CRASHES, ids=[a[0] for a, _ in CRASHES])
def test_unexpected_exception_exits_3_with_one_line(
        tree: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], target: str) -> None:
    monkeypatch.delenv("GPUDRA_DEBUG", raising=False)
    monkeypatch.setattr(target, _raise)
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 3
    assert result.stderr == ("gpudra: error: internal error: RuntimeError: boom second line "
                             "(please report it)\n")
    assert "Traceback" not in result.output


def test_unexpected_exception_shows_the_traceback_with_gpudra_debug(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDRA_DEBUG", "1")
    monkeypatch.setattr("gpudra.audit.engine.run_audit", _raise)
    result = audit("tree")
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.endswith("gpudra: error: internal error: RuntimeError: boom second line "
                                  "(please report it)\n")


def test_process_crash_is_one_line_on_stderr(tmp_path: Path) -> None:
    code = ("import sys, gpudra.audit.engine\n"
            "def boom(*a, **k): raise KeyError('x')\n"
            "gpudra.audit.engine.run_audit = boom\n"
            "from gpudra.cli import main\n"
            "sys.argv = ['gpudra', 'audit', '.']\n"
            "main()\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUDRA_DEBUG"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 3
    assert proc.stderr == "gpudra: error: internal error: KeyError: 'x' (please report it)\n"


# -- explain ---------------------------------------------------------------------------------

SGR_COLOR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|38;)")


@pytest.mark.parametrize(("env", "rendered", "colored"), [
    ({}, False, False),  # not a terminal: the Markdown source, for pipes and files
    ({"FORCE_COLOR": "1"}, True, True),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False),
])
def test_explain_renders_markdown_only_for_a_terminal(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], rendered: bool,
        colored: bool) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["explain", "GPU101"])
    assert result.exit_code == 0
    assert result.stdout.startswith("# GPU101 device-plugin-gpu\n") is not rendered
    assert ("**Fix:**" in result.stdout) is not rendered
    assert "GPU101 device-plugin-gpu" in result.stdout and "Fix:" in result.stdout
    assert bool(SGR_COLOR.search(result.stdout)) is colored


def test_explain_on_a_real_terminal_is_rendered(tmp_path: Path) -> None:
    import pty

    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    proc = subprocess.Popen([sys.executable, "-m", "gpudra", "explain", "GPU101"],
                            stdout=secondary, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    assert proc.wait(timeout=120) == 0
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "GPU101 device-plugin-gpu" in out
    assert "# GPU101" not in out and "**Fix:**" not in out


# -- program name ----------------------------------------------------------------------------


@pytest.mark.parametrize("argv0", ["/usr/local/bin/kubectl-gpudra", "kubectl-gpudra"])
def test_usage_names_the_kubectl_plugin(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], argv0: str) -> None:
    from gpudra.cli import main

    prog = "kubectl gpudra"

    monkeypatch.setattr(sys, "argv", [argv0, "audit", "--help"])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"Usage: {prog} audit [OPTIONS]")
    monkeypatch.setattr(sys, "argv", [argv0, "audit", "--fail-on", "sometimes", "."])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Usage: {prog} audit [OPTIONS]")
    assert f"Try '{prog} audit -h' for help." in err


@pytest.mark.parametrize(("argv0", "prog"), [
    ("/root/.local/bin/kubectl-gpudra", "kubectl gpudra"),
    ("C:\\bin\\kubectl-gpudra.exe", "kubectl gpudra"),
    ("/usr/local/bin/gpudra", None),            # click's own detection: "gpudra"
    ("/src/gpudra/__main__.py", None),           # ... and "python -m gpudra"
])
def test_program_name_from_argv0(argv0: str, prog: str | None) -> None:
    from gpudra.cli import program_name

    assert program_name(argv0) == prog


def test_process_usage_as_the_kubectl_plugin(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("kubectl-gpudra")
    if not script.exists():
        pytest.skip("the kubectl-gpudra console script is not installed beside this Python")
    proc = subprocess.run([str(script), "audit", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: kubectl gpudra audit [OPTIONS]")


def test_progress_prints_file_names_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from gpudra.cli.terminal import FileProgress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stderr = Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.delenv("NO_COLOR", raising=False)
    with FileProgress(quiet=False) as tick:
        for _ in range(50):  # the spinner shows every 50th file name
            tick("/srv/[/k8s]/[bold]x.yaml")
    assert "/srv/[/k8s]/[bold]x.yaml" in stderr.getvalue()


GIVEN = [
    # (what the command's `output` parameter holds, the targets, or None: refused)
    ([OutputTarget("table")], (OutputTarget("table"),)),
    ((OutputTarget("json"), OutputTarget("sarif", "a.sarif")),
     (OutputTarget("json"), OutputTarget("sarif", "a.sarif"))),
    ([], ()),
    (["json"], None),  # the raw words: the callback did not run
    ([OutputTarget("json"), "sarif=a.sarif"], None),
]


@pytest.mark.parametrize(("output", "targets"), GIVEN, ids=[str(i) for i in range(len(GIVEN))])
def test_given_takes_only_what_the_targets_callback_returned(output: list[str],
                                                            targets: object) -> None:
    from gpudra.cli.output import given

    if targets is None:
        with pytest.raises(TypeError, match="did not go through the option's callback"):
            given(output)
    else:
        assert given(output) == targets
