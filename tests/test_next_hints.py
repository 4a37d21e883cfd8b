"""Every Next hint the audit prints runs as shown (issue 36, item 4): under `--context a
--context b` each cluster's hints name its context; no `convert --diff` on a Helm chart (convert
blocks what a chart renders) or when nothing is left to convert. Each case's hints are run."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from tests.cluster.test_many_clusters import fleet  # noqa: F401 (the fixture)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _run(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "", **(env or {})})


def hints(output: str) -> list[list[str]]:
    """Each Next block's commands, in order, as argument lists."""
    blocks = []
    for block in output.split("\nNext\n")[1:]:
        lines = []
        for line in block.splitlines():
            if not line.startswith("  gpudra "):
                break
            lines.append(shlex.split(line.split("  # ")[0]))
        blocks.append(lines)
    return blocks


def _runs(command: list[str], env: dict[str, str] | None = None) -> None:
    """The hint parses and runs: no usage error (exit 2); 3 (no cluster here) is the
    cluster's absence, not the hint's fault."""
    assert command[0] == "gpudra"
    result = _run(command[1:], env)
    assert result.exit_code in (0, 1, 3), (command, result.output)
    assert "No such option" not in result.output and "Usage:" not in result.output


def _tree(tmp_path: Path, *parts: str) -> Path:
    for part in parts:
        shutil.copytree(EXAMPLES / part, tmp_path / part)
    return tmp_path


def _converted(tmp_path: Path) -> Path:
    tree = _tree(tmp_path, "apps", "platform", "web")
    assert _run(["convert", str(tree), "-q"]).exit_code in (0, 1)
    return tree


# (the tree, whether `convert --diff` is among its hints)
TREES = {
    "plain manifests": (lambda tmp: _tree(tmp, "apps"), True),
    "a Helm chart": (lambda tmp: _tree(tmp, "charts"), False),
    "a chart beside plain manifests": (lambda tmp: _tree(tmp, "charts", "apps"), True),
    "everything converted": (_converted, False),
}


@pytest.mark.parametrize("case", sorted(TREES))
def test_file_audit_hints_run_and_name_convert_only_when_it_can_rewrite(
        case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build, converts = TREES[case]
    tree = build(tmp_path)
    monkeypatch.chdir(tmp_path)
    (steps,) = hints(_run(["audit", str(tree)]).stdout) or [[]]
    assert any(step[1:3] == ["convert", "--diff"] for step in steps) is converts
    for step in steps:
        _runs(step)


def test_each_clusters_hints_name_its_context_and_run(
        fleet: dict[str, Any], tmp_path: Path,  # noqa: F811 (the fixture)
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"KUBECONFIG": fleet["kubeconfig"], "HOME": str(tmp_path)}
    output = _run(["audit", "--context", "east", "--context", "west"], env).stdout
    blocks = hints(output)
    contexts = [name for name in ("east", "west") if f"Cluster {name}\n" in output]
    assert contexts == ["east", "west"] and len(blocks) == 2
    for name, steps in zip(contexts, blocks):
        cluster_steps = [s for s in steps if s[1] in ("convert", "preflight")]
        assert cluster_steps, steps
        for step in cluster_steps:
            assert step[step.index("--context") + 1] == name, step
        for step in steps:
            _runs(step, env)
