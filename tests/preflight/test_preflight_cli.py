"""`gpudra preflight` and `gpudra checks` end to end: every tier through the CLI, the JSON
contract of design.md, the shared report formats, --skip, --fail-on and the config skip list."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.preflight import catalogue
from tests.fakeapi import FakeCluster
from tests.preflight.test_cluster_fakeapi import STATE

ENV = {"KUBECONFIG": "", "HOME": "/nonexistent"}
CONTRACT_KEYS = {"id", "title", "outcome", "message", "remediation"}


@pytest.fixture(scope="module")
def cluster() -> Any:
    """The test state without its 403 rules: every check can look."""
    with FakeCluster({k: v for k, v in STATE.items() if k != "deny"}, tls=False) as fake:
        yield fake


@pytest.fixture(scope="module")
def denied() -> Any:
    """The test state as it is: resourcequotas are forbidden."""
    with FakeCluster(STATE, tls=False) as fake:
        yield fake


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["preflight", *args], env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_cluster_tier_json_contract(cluster: FakeCluster) -> None:
    code, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    report = json.loads(out)
    checks = {c["id"]: c for c in report["checks"]}
    assert set(checks) == {c.id for c in catalogue().values() if c.tier.value == "cluster"}
    for check in checks.values():
        assert CONTRACT_KEYS <= set(check)
        assert check["outcome"] in ("pass", "warn", "fail", "unavailable")
        assert (check["remediation"] is None) == (check["outcome"] == "pass")
    assert report["errors"] == []
    assert report["summary"]["tier"] == "cluster"
    assert report["summary"]["server_version"] == "v1.34.2"
    assert code == (1 if any(c["outcome"] == "fail" for c in checks.values()) else 0)
    assert {r.method for r in cluster.requests} == {"GET"}


def test_a_refused_resource_is_unavailable_and_the_run_partial(denied: FakeCluster) -> None:
    code, out, err = _run("--kubeconfig", str(denied.kubeconfig), "-o", "json")
    report = json.loads(out)
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["CLUSTER011"]["outcome"] == "unavailable"  # 403 on resourcequotas: never pass
    assert "403" in checks["CLUSTER011"]["message"]
    assert [e["object"] for e in report["errors"]] == ["resourcequotas"]
    assert code == 3 and "resourcequotas" in err


def test_fail_on_warn_and_skip(cluster: FakeCluster) -> None:
    code, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", "json",
                        "--fail-on", "warn")
    warned = [c["id"] for c in json.loads(out)["checks"] if c["outcome"] in ("warn", "fail")]
    assert warned and code == 1
    code, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", "json",
                        "--fail-on", "warn", "--skip", ",".join(warned))
    skipped = {c["id"] for c in json.loads(out)["checks"] if c["skipped"]}
    assert skipped == set(warned) and code == 0


def test_skip_list_from_the_config_and_unknown_ids(cluster: FakeCluster, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", "json",
                        "--fail-on", "warn")
    warned = [c["id"] for c in json.loads(out)["checks"] if c["outcome"] in ("warn", "fail")]
    (tmp_path / ".gpudra.yaml").write_text(f"preflight:\n  skip: [{', '.join(warned)}]\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", "json",
                        "--fail-on", "warn")
    assert code == 0
    code, _, err = _run("--skip", "NODE999")
    assert code == 2 and "unknown check 'NODE999'" in err


@pytest.mark.parametrize("fmt", ["table", "junit", "markdown", "github"])
def test_every_format_renders_every_check(cluster: FakeCluster, fmt: str) -> None:
    _, out, _ = _run("--kubeconfig", str(cluster.kubeconfig), "-o", fmt)
    for info in catalogue().values():
        if info.tier.value == "cluster" and fmt != "github":
            assert info.id in out, (fmt, info.id)
    if fmt == "junit":
        suite = ET.fromstring(out)
        assert int(suite.get("tests")) == 17  # 16 checks and the inputs case
        assert suite.get("errors") == "0"


def test_unreachable_cluster_is_one_line_and_exit_3(cluster: FakeCluster) -> None:
    code, _, err = _run("--kubeconfig", str(cluster.kubeconfig), "--context",
                        "fake-unreachable")
    assert code == 3 and len(err.strip().splitlines()) == 1 and "cannot reach" in err


def test_node_tier_on_a_fake_host_root(tmp_path: Path) -> None:
    (tmp_path / "etc" / "containerd").mkdir(parents=True)
    (tmp_path / "etc" / "containerd" / "config.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = false\n')
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
        "2024\n")
    code, out, _ = _run("--node", "--host-root", str(tmp_path), "-o", "json")
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert set(checks) == {c.id for c in catalogue().values() if c.tier.value == "node"}
    assert checks["NODE001"]["outcome"] == "fail"  # 550 is below the DRA driver's 565
    assert checks["NODE003"]["outcome"] == "fail"  # enable_cdi = false
    assert code == 1


def test_manifests_tier(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      containers:\n      - name: c\n        image: x\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    code, out, _ = _run("--manifests", str(tmp_path), "-o", "json")
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert checks["MANIFEST003"]["outcome"] == "warn" and code == 0
    code, out, _ = _run("--manifests", str(tmp_path), "-o", "json", "--require-migrated")
    assert json.loads(out)["checks"][2]["outcome"] == "fail" and code == 1
    code, _, err = _run("--manifests", str(tmp_path / "missing"))
    assert code == 3 and "no such file" in err


def test_checks_lists_the_catalogue_and_docs_are_current() -> None:
    result = CliRunner().invoke(app, ["checks", "-o", "json"])
    listed = json.loads(result.stdout)
    assert [c["id"] for c in listed] == list(catalogue())
    result = CliRunner().invoke(app, ["checks", "-o", "markdown"])
    docs = Path(__file__).resolve().parents[2] / "docs" / "checks.md"
    assert docs.read_text() == result.stdout, "regenerate: gpudra checks -o markdown > docs/checks.md"


# --- one vocabulary; a wrong --host-root -------------------------------------------------

EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")


@pytest.mark.parametrize(("word", "same_as"), [("warning", "warn"), ("error", "fail"),
                                               ("WARN", "warn")])
def test_fail_on_takes_audits_words_too(word: str, same_as: str) -> None:
    code, out, _ = _run("--manifests", EXAMPLES, "--fail-on", word, "-o", "json")
    expected, expected_out, _ = _run("--manifests", EXAMPLES, "--fail-on", same_as, "-o", "json")
    assert code == expected != 2
    assert json.loads(out)["summary"]["fail_on"] == same_as.lower()


@pytest.mark.parametrize(("word", "same_as"), [("warn", "warning"), ("fail", "error")])
def test_audit_fail_on_takes_preflights_words_too(word: str, same_as: str) -> None:
    got = CliRunner().invoke(app, ["audit", EXAMPLES, "--fail-on", word, "-o", "junit"])
    want = CliRunner().invoke(app, ["audit", EXAMPLES, "--fail-on", same_as, "-o", "junit"])
    assert got.exit_code == want.exit_code != 2 and got.stdout == want.stdout


def test_unknown_fail_on_is_a_usage_error_naming_both_vocabularies() -> None:
    code, _, err = _run("--manifests", EXAMPLES, "--fail-on", "sometimes")
    assert code == 2 and "Invalid value" in err and "'warning'" in err


@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_host_root_that_is_no_directory_is_an_input_error(tmp_path: Path, make: str) -> None:
    root = tmp_path / "host"
    if make == "file":
        root.write_text("")
    code, out, err = _run("--node", "--host-root", str(root))
    assert code == 3 and out == ""
    assert f"--host-root {root}: " + ("not a directory" if make == "file"
                                      else "no such directory") in err


# issue 36, item 6: `--manifests a b c` takes several paths, as audit, convert and plan do.
@pytest.mark.parametrize("args", [
    ("--manifests", "apps", "platform", "web"),
    ("--manifests", "apps", "--manifests", "platform", "web"),
    ("--manifests", "apps", "--manifests", "platform", "--manifests", "web"),
    ("apps", "platform", "--manifests", "web"),
])
def test_manifests_takes_several_paths(args: tuple[str, ...], monkeypatch: Any) -> None:
    monkeypatch.chdir(EXAMPLES)
    code, out, err = _run(*args, "-o", "json")
    one_by_one = _run("--manifests", "apps", "--manifests", "platform", "--manifests", "web",
                      "-o", "json")
    assert (code, out) == one_by_one[:2], err
    assert code in (0, 1) and json.loads(out)["checks"]


def test_paths_without_manifests_are_a_usage_error_that_says_so() -> None:
    code, _, err = _run("apps", "web")
    assert code == 2
    assert "paths go with --manifests (gpudra preflight --manifests apps web)" in err
