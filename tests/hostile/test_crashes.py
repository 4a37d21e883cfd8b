"""Items 10 and 11: malformed input is a per-file input error (the rest of the tree is still
processed), never an internal error; broken symlinks are said; file names unsafe to print are
quoted in every text output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudra.printable import quote_name
from tests.support.manifests import gpu_job
from tests.support.run import invoke as run
from tests.support.run import said

JOB = gpu_job()
MALFORMED = {
    "metadata-scalar.yaml": JOB.format(name="x").replace("metadata:\n  name: x\n", "metadata: 5\n"),
    "metadata-list.yaml": JOB.format(name="x").replace("metadata:\n  name: x\n",
                                                      "metadata: [a]\n"),
    "template-metadata.yaml": JOB.format(name="t").replace("    spec:\n      containers",
                                                           "    metadata: 7\n    spec:\n"
                                                           "      containers"),
    "namespace-list.yaml": JOB.format(name="n").replace("  name: n\n",
                                                        "  name: n\n  namespace: [1, 2]\n"),
    "duplicate-resources.yaml": JOB.format(name="d").replace(
        "        resources:\n", "        resources:\n        resources:\n"),
    "daemonset.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: d\nspec:\n"
                      "  template:\n    spec:\n      nodeSelector:\n"
                      "        nvidia.com/gpu.present: \"true\"\n      containers: 1\n",
}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "good.yaml").write_text(JOB.format(name="good"))
    return tmp_path / "t"


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["audit", "convert"])
def test_malformed_object_is_a_per_file_error_and_the_rest_is_processed(
        tree: Path, name: str, command: str) -> None:
    (tree / name).write_text(MALFORMED[name])
    result = run(command, "t")
    assert "internal error" not in said(result), said(result)
    if command == "convert":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
        assert (tree / name).read_text() == MALFORMED[name]
        if name != "daemonset.yaml":  # nothing to convert there: no GPU request
            assert result.exit_code == 3 and f"t/{name}" in said(result), said(result)
    else:
        assert result.exit_code in (1, 3), said(result)


def test_podspecs_recursive_descent_is_no_internal_error(tree: Path) -> None:
    (tree.parent / ".gpudra.yaml").write_text('workloads:\n- kind: Job\n  podSpecs: ["$..*"]\n')
    for command in (["audit", "t"], ["convert", "t", "--diff"]):
        result = run(*command)
        assert result.exit_code in (1, 3) and "internal error" not in said(result), said(result)


def test_explicit_symlink_loop_is_an_input_error(tree: Path) -> None:
    os.symlink("loop-b", tree / "loop-a")
    os.symlink("loop-a", tree / "loop-b")
    for command in ("audit", "convert"):
        result = run(command, "t/loop-a")
        assert result.exit_code == 3, said(result)
        assert "symbolic link" in said(result) and "internal error" not in said(result)


def test_dangling_and_looping_symlinks_in_a_tree_are_reported(tree: Path) -> None:
    os.symlink("nowhere.yaml", tree / "dangling.yaml")
    os.symlink("loop.yml", tree / "loop.yml")
    result = run("audit", "t")
    assert result.exit_code == 3
    assert "t/dangling.yaml: a symbolic link that cannot be followed" in result.stderr
    assert "t/loop.yml: a symbolic link that cannot be followed" in result.stderr
    converted = run("convert", "t")
    assert converted.exit_code == 3 and "t/dangling.yaml" in said(converted)
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


UNSAFE = ["a\nb.yaml", "c\x1b[31mred.yaml", "d\u202egnp.yaml", 'e"q.yaml']


@pytest.mark.parametrize("output", ["table", "github", "markdown", "junit"])
def test_unsafe_file_names_are_quoted_in_audit_outputs(tree: Path, output: str) -> None:
    for name in UNSAFE:
        (tree / name).write_text(JOB.format(name="j"))
    os.symlink("nowhere", tree / "z\x1b]0;title\x07.yaml")  # an error line too
    result = run("audit", "t", "-o", output)
    for text in (result.stdout, result.stderr):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
        assert "\nb.yaml" not in text
    if output in ("table", "markdown", "junit"):
        for name in UNSAFE:
            assert quote_name(f"t/{name}") in result.stdout


def test_unsafe_file_names_are_quoted_in_convert_outputs(tree: Path) -> None:
    for name in UNSAFE:
        (tree / name).write_text(JOB.format(name="j"))
    diff = run("convert", "t", "--diff")
    assert diff.exit_code == 1
    assert '--- "a/t/a\\nb.yaml"\n+++ "b/t/a\\nb.yaml"\n' in diff.stdout
    for result in (diff, run("convert", "t", "--check"), run("convert", "t")):
        for text in (result.stdout, result.stderr):
            assert "\x1b" not in text and "\u202e" not in text and "\nb.yaml" not in text
        assert quote_name("t/c\x1b[31mred.yaml") in said(result)


def test_quote_name_is_git_style() -> None:
    assert quote_name("apps/job.yaml") == "apps/job.yaml"
    assert quote_name("a\tb") == '"a\\tb"'
    assert quote_name("x\x1b") == '"x\\x1b"'
    assert quote_name("back\\slash") == '"back\\\\slash"'
    assert quote_name("é.yaml") == "é.yaml"
