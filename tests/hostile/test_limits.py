"""Items 6 and 7: bounded time and memory on anything a tree holds.

YAML alias expansion is refused past go-yaml's budget (what kubectl and kube-apiserver refuse
as "excessive aliasing"), and only regular files are read, up to a size cap. Each case runs
under a memory limit in a subprocess, so a regression fails instead of exhausting the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from gpudra.sources.documents import AliasBudgetError, check_alias_budget
from gpudra.sources.file_bytes import MAX_FILE_BYTES
from tests.support.manifests import gpu_job
from tests.support.run import gpudra_process

JOB = gpu_job()
MEMORY_LIMIT = 1 << 30  # 1 GiB of address space: Python and the libraries need ~300 MB


def alias_bomb(levels: int = 12, fan_out: int = 9) -> str:
    """~800 bytes that expand to fan_out**levels nodes (9**12: 282 billion)."""
    lines = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: bomb",
             "a0: &a0 [nvidia.com/gpu, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan_out) + "]"
              for i in range(1, levels)]
    lines += ["spec:", "  containers:", "  - name: c", "    resources:", "      limits:",
              "        nvidia.com/gpu: 1"]
    return "\n".join(lines) + "\n"


def run_limited(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return gpudra_process(*args, cwd=cwd, timeout=timeout, preexec_fn=limit)


@pytest.mark.parametrize("command", [["audit", "t"], ["convert", "t"], ["convert", "t", "--diff"]])
def test_alias_bomb_is_an_input_error_naming_the_file(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "bomb.yaml").write_text(alias_bomb())
    (tmp_path / "t" / "good.yaml").write_text(JOB.format(name="good"))
    before = (tmp_path / "t" / "bomb.yaml").read_bytes()
    result = run_limited(*command, cwd=tmp_path)
    said = result.stdout + result.stderr  # convert lists errors in its summary
    assert result.returncode == 3, said
    assert "t/bomb.yaml" in said and "aliasing" in said, said
    assert "internal error" not in said
    assert (tmp_path / "t" / "bomb.yaml").read_bytes() == before
    if command == ["convert", "t"]:  # the good file beside it is still converted
        assert "resourceClaimTemplateName" in (tmp_path / "t" / "good.yaml").read_text()


def test_a_document_that_contains_itself_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "loop.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nloop: &x [nvidia.com/gpu, *x]\n")
    for command in (["audit", "t"], ["convert", "t", "--diff"]):
        result = run_limited(*command, cwd=tmp_path)
        said = result.stdout + result.stderr
        assert result.returncode == 3 and "t/loop.yaml" in said, said
        assert "internal error" not in said


def test_ordinary_anchors_stay_within_the_budget() -> None:
    import yaml

    # Shared env blocks and a few hundred aliases, as real charts render them.
    text = "env: &env [" + ", ".join(f"{{name: v{i}, value: x}}" for i in range(50)) + "]\n"
    text += "".join(f"c{i}: {{env: *env}}\n" for i in range(300))
    check_alias_budget(yaml.compose(text, Loader=yaml.SafeLoader))
    with pytest.raises(AliasBudgetError):
        check_alias_budget(yaml.compose(alias_bomb(levels=8), Loader=yaml.SafeLoader))


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/stdin", "fifo"])
@pytest.mark.parametrize("command", [["audit", "k"], ["convert", "k", "--diff"]])
def test_a_patch_that_is_not_a_regular_file_is_not_read(tmp_path: Path, target: str,
                                                         command: list[str]) -> None:
    k = tmp_path / "k"
    k.mkdir()
    (k / "job.yaml").write_text(JOB.format(name="j"))
    if target == "fifo":
        os.mkfifo(k / "fifo.yaml")
        target = "fifo.yaml"
    (k / "kustomization.yaml").write_text(f"resources:\n- job.yaml\npatches:\n- path: {target}\n")
    result = run_limited(*command, cwd=tmp_path, timeout=30)
    said = result.stdout + result.stderr
    assert result.returncode == 3, (result.returncode, said)
    assert "not a regular file" in said, said


def test_a_file_past_the_size_cap_is_an_input_error(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudra.sources import file_bytes as files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    (tmp_path / "big.yaml").write_text(JOB.format(name="big") + "#" * 2000 + "\n")
    with pytest.raises(files.UnreadableInputError, match="larger than"):
        files.read_input(str(tmp_path / "big.yaml"))
    assert MAX_FILE_BYTES >= 100 << 20  # a `kubectl get -o json` dump of 20,000 pods is 84 MB
