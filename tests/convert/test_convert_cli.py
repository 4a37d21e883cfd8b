"""`gpudra convert` modes end to end: --diff, --check, --output-dir, stdin, errors, file safety.

What the conversion itself writes is pinned by the golden cases (test_golden.py); here the
question is what each mode does with files, streams and exit codes.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from gpudra.cli import app
from gpudra.convert import writer
from gpudra.convert.tolerations import NOTE as TOLERATION_NOTE
from tests.support.manifests import gpu_job
from tests.support.run import invoke

GPU_JOB = gpu_job("train  # keep me", namespace="ml", gpus=2, container="main",
                  image="cuda", restart_never=True)
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n"
BROKEN = ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
          "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}\n  bad: [\n")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/tree with one GPU Job and one clean file in a subdirectory; cwd is tmp."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "job.yaml").write_text(GPU_JOB)
    (root / "sub" / "clean.yaml").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    return root


def convert(*args: str, input: str | None = None) -> Result:
    return invoke("convert", *args, input=input, plain=False)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- modes ------------------------------------------------------------------------------------


def test_in_place_rewrites_and_second_run_changes_nothing(tree: Path) -> None:
    result = convert(str(tree))
    assert result.exit_code == 0, result.output
    text = (tree / "job.yaml").read_text()
    assert "resourceClaimTemplateName: train-gpu" in text
    assert "nvidia.com/gpu: 2" not in text  # the request (the toleration names the taint)
    assert "name: train  # keep me" in text
    assert "1 file changed" in result.stdout
    converted = snapshot(tree)
    again = convert(str(tree))
    assert again.exit_code == 0
    assert snapshot(tree) == converted
    assert "0 files changed" in again.stdout


def test_diff_prints_a_unified_diff_and_writes_nothing(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--diff")
    assert result.exit_code == 1  # there are changes to make
    assert snapshot(tree) == before
    assert f"--- a/{tree}/job.yaml".replace("//", "/") in result.stdout
    assert "-            nvidia.com/gpu: 2\n" in result.stdout
    assert "+        resourceClaimTemplateName: train-gpu\n" in result.stdout
    assert "+kind: ResourceClaimTemplate\n" in result.stdout
    assert "would change" in result.stderr  # the summary stays off the diff stream


def test_check_exits_1_with_changes_and_0_once_converted(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--check")
    assert result.exit_code == 1
    assert snapshot(tree) == before
    assert "1 file would change" in result.stdout
    assert convert(str(tree)).exit_code == 0
    assert convert(str(tree), "--check").exit_code == 0


def test_output_dir_writes_a_full_copy_and_leaves_the_source(tree: Path, tmp_path: Path) -> None:
    before = snapshot(tree)
    out = tmp_path / "out"
    result = convert(str(tree), "--output-dir", str(out))
    assert result.exit_code == 0, result.output
    assert snapshot(tree) == before
    copy = snapshot(out)
    assert set(copy) == {"job.yaml", "sub/clean.yaml"}
    assert copy["sub/clean.yaml"] == before["sub/clean.yaml"]  # unchanged files too
    assert b"resourceClaimTemplateName: train-gpu" in copy["job.yaml"]
    # The copy is what an in-place run writes.
    convert(str(tree))
    assert snapshot(tree) == copy


def test_output_dir_includes_new_files(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = convert(str(tree), "--output-dir", str(out), "--claims-file", "claims.yaml")
    assert result.exit_code == 0, result.output
    assert set(snapshot(out)) == {"job.yaml", "claims.yaml", "sub/clean.yaml"}
    assert not (tree / "claims.yaml").exists()


def test_stdin_to_stdout_converted(tree: Path) -> None:
    result = convert("-", input=GPU_JOB)
    assert result.exit_code == 0, result.stderr
    assert "resourceClaimTemplateName: train-gpu" in result.stdout
    assert "kind: ResourceClaimTemplate" in result.stdout
    assert "rewrite" in result.stderr  # the summary goes to stderr
    assert "rewrite" not in result.stdout


def test_stdin_unchanged_input_is_echoed(tree: Path) -> None:
    result = convert("-", input=CLEAN)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == CLEAN


def test_stdin_output_is_a_fixed_point(tree: Path) -> None:
    once = convert("-", input=GPU_JOB).stdout
    assert convert("-", input=once).stdout == once


# --- usage errors: exit 2, nothing touched ------------------------------------------------------


def test_invalid_selector_exit_2_with_line_and_column(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--selector", 'device.attributes["gpu.nvidia.com"].productName ==')
    assert result.exit_code == 2
    assert "--selector #1: 1:" in result.stderr
    message = result.stderr.split("--selector #1: ", 1)[1]
    line, column = message.split(":")[:2]
    assert line == "1" and column.isdigit()
    assert snapshot(tree) == before


def test_selector_comparing_quantities_with_operators_is_rejected(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--selector",
                     'device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")')
    assert result.exit_code == 2
    assert "1:" in result.stderr
    assert snapshot(tree) == before


@pytest.mark.parametrize(("selector", "message"), [
    ('device.attributes["gpu.nvidia.com"].memory >= 16000', "memory is a capacity"),
    ('device.attributes["gpu.nvidia.com"].index == 0', "index"),
])
def test_valid_cel_that_audit_would_flag_is_rejected(tree: Path, selector: str,
                                                      message: str) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--selector", selector)
    assert result.exit_code == 2
    assert message in result.stderr and "--selector #1" in result.stderr
    assert snapshot(tree) == before


def test_stdin_cannot_be_mixed_with_files_or_json(tree: Path) -> None:
    mixed = convert("-", str(tree), input="")
    assert mixed.exit_code == 2 and "cannot be combined" in mixed.stderr
    as_json = convert("-", "-o", "json", input="")
    assert as_json.exit_code == 2 and "-o json" in as_json.stderr


def test_write_failure_is_reported_and_other_files_are_written(tree: Path, monkeypatch) -> None:
    import gpudra.convert.writer as writer_module

    real = writer_module.replace_file
    failed: list[str] = []

    def flaky(path, chunks, info):
        if not failed and path.suffix == ".yaml":  # a manifest, not the journal
            failed.append(str(path))
            raise PermissionError(13, "Permission denied")
        return real(path, chunks, info)

    monkeypatch.setattr(writer_module, "replace_file", flaky)
    result = convert(str(tree))
    assert result.exit_code == 3
    assert "cannot write: Permission denied" in result.output + result.stderr
    assert failed


def test_symlinked_manifest_is_converted_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                    "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    result = convert(str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink()
    assert "resourceClaims" in real.read_text()


@pytest.mark.parametrize("version", ["1.31", "2.0", "latest", "1.38"])
def test_bad_target_version_exit_2(tree: Path, version: str) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--target-version", version)
    assert result.exit_code == 2
    assert "gpudra: error:" in result.stderr
    assert snapshot(tree) == before


def test_bridge_needs_1_34(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--strategy", "bridge", "--target-version", "1.33")
    assert result.exit_code == 2
    assert "extendedResourceName" in result.stderr and "1.34" in result.stderr
    assert snapshot(tree) == before


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_bridge_refused_where_the_gate_is_off_by_default(tree: Path, version: str) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--strategy", "bridge", "--target-version", version)
    assert result.exit_code == 2
    assert "DRAExtendedResource" in result.stderr
    assert snapshot(tree) == before


def test_bad_min_memory_exit_2(tree: Path) -> None:
    result = convert(str(tree), "--min-memory", "lots")
    assert result.exit_code == 2
    assert "--min-memory" in result.stderr


# --- input errors -------------------------------------------------------------------------------


def test_unparseable_file_is_left_untouched_and_others_converted(tree: Path) -> None:
    (tree / "broken.yaml").write_text(BROKEN)
    result = convert(str(tree), "-o", "json")
    assert result.exit_code == 3
    assert (tree / "broken.yaml").read_text() == BROKEN
    assert "resourceClaimTemplateName" in (tree / "job.yaml").read_text()
    report = json.loads(result.stdout)
    [error] = report["errors"]
    assert error["file"].endswith("broken.yaml")
    assert "file left untouched" in error["message"] and error["line"]


def test_missing_path_exit_3(tree: Path) -> None:
    result = convert(str(tree / "nope.yaml"))
    assert result.exit_code == 3


# --- file safety -------------------------------------------------------------------------------


def test_file_mode_is_kept(tree: Path) -> None:
    path = tree / "job.yaml"
    path.chmod(0o640)
    assert convert(str(tree)).exit_code == 0
    assert "resourceClaims" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_unchanged_files_are_not_rewritten(tree: Path) -> None:
    clean = tree / "sub" / "clean.yaml"
    os.utime(clean, ns=(1_000_000_000, 1_000_000_000))
    assert convert(str(tree)).exit_code == 0
    assert clean.stat().st_mtime_ns == 1_000_000_000


def test_write_atomic_leaves_no_temp_file_when_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GPU_JOB)

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.write_atomic(path, b"new content\n")
    assert [p.name for p in tmp_path.iterdir()] == ["job.yaml"]
    assert path.read_text() == GPU_JOB


def test_ctrl_c_mid_write_says_so_exits_130_and_keeps_every_file(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(tree)

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    result = convert(str(tree))
    assert result.exit_code == 130
    assert result.stderr == "gpudra: interrupted\n"
    assert snapshot(tree) == before  # no half-written file, no temp file left behind


def test_write_atomic_skips_identical_content(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GPU_JOB)
    assert writer.write_atomic(path, GPU_JOB.encode()) is False
    assert writer.write_atomic(path, b"changed\n") is True
    assert path.read_bytes() == b"changed\n"


# --- -o json ------------------------------------------------------------------------------------


def test_json_summary_structure(tree: Path) -> None:
    (tree / "blocked.yaml").write_text(GPU_JOB.replace("name: train ", "name: odd ")
                                       .replace("nvidia.com/gpu: 2", 'nvidia.com/gpu: "${N}"'))
    result = convert(str(tree), "--diff", "-o", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert set(report) == {"workloads", "files", "errors", "skipped", "summary"}
    by_name = {w["name"]: w for w in report["workloads"]}
    train = by_name["train"]
    assert train == {"file": f"{tree}/job.yaml", "kind": "Job", "name": "train",
                     "namespace": "ml", "strategy": "rewrite", "reason": None,
                     "notes": [TOLERATION_NOTE], "created": ["train-gpu"]}
    odd = by_name["odd"]
    assert odd["strategy"] == "blocked" and "placeholder" in odd["reason"]
    assert odd["created"] == []
    [changed] = report["files"]
    assert changed["file"] == f"{tree}/job.yaml"
    assert changed["written"] is False and changed["created"] is False
    assert changed["diff"].startswith("--- a/")
    assert report["errors"] == []
    summary = report["summary"]
    assert summary["files_scanned"] == 3 and summary["files_changed"] == 1
    assert summary["rewrite"] == 1 and summary["blocked"] == 1
    assert summary["errors"] == 0


def test_output_dir_keeps_two_roots_apart(tmp_path: Path) -> None:
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec:\n  containers:\n"
           "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n")
    for team in ("a", "b"):
        (tmp_path / team / "k8s").mkdir(parents=True)
        (tmp_path / team / "k8s" / "pod.yaml").write_text(pod.replace("NAME", team))
    out = tmp_path / "out"
    result = convert(str(tmp_path / "a" / "k8s"), str(tmp_path / "b" / "k8s"),
                     "--output-dir", str(out))
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    assert written == ["a/k8s/pod.yaml", "b/k8s/pod.yaml"]
    assert "name: a-gpu" in (out / "a/k8s/pod.yaml").read_text()
    assert "name: b-gpu" in (out / "b/k8s/pod.yaml").read_text()


# --- quiet, --diff with --check, colour, diff paths, exit 4 -----------------------------------

BLOCKED_JOB = GPU_JOB.replace("name: train ", "name: odd ").replace("nvidia.com/gpu: 2",
                                                                      'nvidia.com/gpu: "${N}"')


def test_quiet_prints_nothing_but_errors(tree: Path) -> None:
    result = convert(str(tree), "-q")
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "")
    assert "resourceClaimTemplateName" in (tree / "job.yaml").read_text()
    (tree / "broken.yaml").write_text(BROKEN)
    broken = convert(str(tree), "--quiet")
    assert broken.exit_code == 3
    assert broken.stdout == ""
    assert broken.stderr.startswith(f"gpudra: {tree}/broken.yaml:8: ")
    assert len(broken.stderr.splitlines()) == 1


def test_quiet_diff_keeps_the_diff_and_drops_the_summary(tree: Path) -> None:
    result = convert(str(tree), "--diff", "-q")
    assert result.exit_code == 1
    assert "+        resourceClaimTemplateName: train-gpu\n" in result.stdout
    assert result.stderr == ""


def test_diff_and_check_together_print_the_diff_and_exit_1(tree: Path) -> None:
    before = snapshot(tree)
    result = convert(str(tree), "--diff", "--check")
    assert result.exit_code == 1, result.stderr
    assert snapshot(tree) == before
    assert "-            nvidia.com/gpu: 2\n" in result.stdout
    assert "would change" in result.stderr
    assert convert(str(tree)).exit_code == 0
    again = convert(str(tree), "--check", "--diff")
    assert (again.exit_code, again.stdout) == (0, "")


@pytest.mark.parametrize("mode", ["--diff", "--check"])
def test_output_dir_stays_exclusive(tree: Path, tmp_path: Path, mode: str) -> None:
    result = convert(str(tree), mode, "--output-dir", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "--output-dir" in result.stderr


def test_diff_paths_have_no_dot_slash(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    result = convert(".", "--diff")
    assert result.stdout.startswith("--- a/job.yaml\n+++ b/job.yaml\n")
    as_json = json.loads(convert(".", "--diff", "-o", "json").stdout)
    assert as_json["files"][0]["diff"].startswith("--- a/job.yaml\n+++ b/job.yaml\n")
    created = writer.unified_diff("./k8s/claims.yaml", b"", b"a: 1\n", created=True)
    assert created.startswith("--- /dev/null\n+++ b/k8s/claims.yaml\n")


ANSI = "\x1b["


@pytest.mark.parametrize(("env", "colored"), [
    ({}, False),                                   # not a terminal: never colour by default
    ({"FORCE_COLOR": "1"}, True),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins
])
def test_diff_colour_follows_the_environment(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                             env: dict[str, str], colored: bool) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = convert(str(tree), "--diff")
    assert result.exit_code == 1
    assert (ANSI in result.stdout) is colored
    json_diff = convert(str(tree), "--diff", "-o", "json").stdout
    assert ANSI not in json_diff  # data never carries colour


def test_color_diff_marks_each_kind_of_line() -> None:
    text = writer.unified_diff("job.yaml", b"a: 1\nb: 2\n", b"a: 1\nb: 3\n")
    lines = writer.color_diff(text).splitlines()
    assert lines[0] == "\x1b[1m--- a/job.yaml\x1b[0m"
    assert lines[1] == "\x1b[1m+++ b/job.yaml\x1b[0m"
    assert lines[2].startswith("\x1b[36m@@ ") and lines[2].endswith("\x1b[0m")
    assert lines[3] == " a: 1"
    assert lines[4] == "\x1b[31m-b: 2\x1b[0m"
    assert lines[5] == "\x1b[32m+b: 3\x1b[0m"
    assert writer.color_diff(text).count("\n") == text.count("\n")


def test_check_exit_4_when_only_blocked_work_is_left(tree: Path) -> None:
    (tree / "blocked.yaml").write_text(BLOCKED_JOB)
    assert convert(str(tree), "--check").exit_code == 1  # something can still be converted
    assert convert(str(tree), "--diff").exit_code == 1
    written = convert(str(tree))
    assert written.exit_code == 4  # converted what it could; a blocked workload is left
    assert "blocked" in written.stdout
    assert convert(str(tree), "--check").exit_code == 4
    assert convert(str(tree), "--diff", "--check").exit_code == 4
    assert convert(str(tree), "--check", "-q").exit_code == 4
    (tree / "blocked.yaml").unlink()
    assert convert(str(tree), "--check").exit_code == 0


def test_stdin_with_a_blocked_workload_exits_4(tree: Path) -> None:
    result = convert("-", input=BLOCKED_JOB)
    assert result.exit_code == 4
    assert result.stdout == BLOCKED_JOB


def test_help_documents_exit_4() -> None:
    text = " ".join(CliRunner().invoke(app, ["convert", "--help"]).stdout.split())
    assert "4 only blocked workloads are left" in text


def test_the_preflight_remediations_for_dra_objects_are_true(tmp_path: Path) -> None:
    """Issue 13.15: MANIFEST001/002 tell users to run convert --target-version; after it, the
    tree passes them (and the audit's DRA rules find nothing left)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "claims.yaml").write_text(
        "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: a, namespace: ml}\nspec:\n  devices:\n    requests:\n"
        "    - name: gpu\n      deviceClassName: gpu.nvidia.com\n      count: 2\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b, namespace: ml}\n"
        "spec:\n  devices:\n    requests:\n    - name: gpu\n      deviceClassName: gpu.nvidia.com\n"
        "      selectors:\n      - cel:\n          expression: "
        "device.capacity[\"gpu.nvidia.com\"].memory >= quantity(\"40Gi\")\n")

    def checks() -> dict:
        result = CliRunner().invoke(app, ["preflight", "--manifests", str(tree), "-o", "json",
                                          "--target-version", "1.35"])
        return {c["id"]: c for c in json.loads(result.stdout)["checks"]}

    before = checks()
    assert before["MANIFEST001"]["outcome"] == "warn"
    assert before["MANIFEST002"]["outcome"] == "fail"
    assert "gpudra convert --target-version 1.35" in before["MANIFEST002"]["remediation"]
    assert before["MANIFEST004"]["outcome"] == "fail"
    result = CliRunner().invoke(app, ["convert", str(tree), "--target-version", "1.35"])
    assert result.exit_code == 0, result.output
    after = checks()
    assert {k: after[k]["outcome"] for k in ("MANIFEST001", "MANIFEST002", "MANIFEST004")} == \
        {"MANIFEST001": "pass", "MANIFEST002": "pass", "MANIFEST004": "pass"}, after
    audit = CliRunner().invoke(app, ["audit", str(tree), "-o", "json", "--target-version",
                                     "1.35"])
    assert [f["rule"] for f in json.loads(audit.stdout)["findings"]] == []


def test_admin_access_needs_a_target_where_it_is_on(tmp_path: Path) -> None:
    """KEP-5018 admin access is alpha and off in 1.32/1.33: the option is refused there."""
    (tmp_path / "ds.yaml").write_text(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: m}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: c\n"
        "        env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n")
    before = (tmp_path / "ds.yaml").read_bytes()
    result = CliRunner().invoke(app, ["convert", str(tmp_path), "--admin-access",
                                      "--target-version", "1.33"])
    assert result.exit_code == 2 and "DRAAdminAccess" in result.output
    assert (tmp_path / "ds.yaml").read_bytes() == before
    result = CliRunner().invoke(app, ["convert", str(tmp_path), "--admin-access",
                                      "--target-version", "1.34"])
    assert result.exit_code == 0, result.output
    assert b"adminAccess: true" in (tmp_path / "ds.yaml").read_bytes()
