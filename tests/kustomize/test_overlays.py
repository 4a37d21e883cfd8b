"""Kustomize overlays, with kubectl as the oracle.

Each directory under trees/ is a base + overlays tree with a case.yaml:

* ``args``: convert options; ``overlays``: the directories to build;
* ``converted``: overlays whose rendering must follow the conversion; for them
  ``kubectl kustomize (convert(tree))`` must give every container the same devices (class,
  count, selectors, shared or not) as ``convert(kubectl kustomize (tree))``;
* ``unchanged``: overlays that must render byte for byte as before (blocked cases);
* ``counts``: per overlay, workload and container, the number of devices it must get from
  claims after convert (and none from the device plugin), where the oracle does not apply;
* ``exit``: convert's exit code; ``blocked``: text that must appear in a blocked reason;
* every overlay without ``counts``, before and after: each pod gets what the device plugin
  gave it (tests/convert/entitlements.py, whole_pod_problems);
* ``audit``: ``[rule, file, line]`` findings audit must report on the tree before convert.

Every overlay must build before and after, and a second convert must change nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.cli import app
from tests.convert.entitlements import entitlements, objects_from_text, whole_pod_problems

TREES = Path(__file__).parent / "trees"
CASES = sorted(p.name for p in TREES.iterdir() if (p / "case.yaml").is_file())
KUBECTL = shutil.which("kubectl")


def _case(name: str) -> dict[str, Any]:
    return yaml.safe_load((TREES / name / "case.yaml").read_text()) or {}


def _build(directory: Path) -> str:
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return done.stdout


def _convert(args: list[str]) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["convert", *args, "-o", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, json.loads(result.stdout)


def _devices(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """What each container gets, without the names convert chose for claims and requests."""
    def strip(view: list[dict[str, Any]]) -> list:
        return sorted(json.dumps({k: v for k, v in r.items() if k not in ("claim", "request")},
                                 sort_keys=True) for r in view)

    return {workload: {name: strip(view) for name, view in entry["containers"].items()}
            for workload, entry in entitlements(objects).items()}


def _tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", CASES)
def test_audit_sees_patches(name: str, tmp_path: Path) -> None:
    case = _case(name)
    tree = tmp_path / "tree"
    shutil.copytree(TREES / name, tree, ignore=shutil.ignore_patterns("case.yaml"))
    report = run_audit(AuditRequest([str(tree)]))
    assert not report.errors, report.errors
    got = {(f.rule, str(Path(f.file).relative_to(tree)), f.line) for f in report.findings}
    for rule, file, line in case.get("audit", []):
        assert (rule, file, line) in got, sorted(got)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("name", CASES)
def test_overlay_oracle(name: str, tmp_path: Path) -> None:
    case = _case(name)
    tree = tmp_path / "tree"
    shutil.copytree(TREES / name, tree, ignore=shutil.ignore_patterns("case.yaml"))
    args = [str(a) for a in case.get("args", [])]
    overlays = case["overlays"]
    before = {o: _build(tree / o) for o in overlays}

    code, report = _convert([str(tree), *args])
    assert code == case.get("exit", 0), report
    for text in case.get("blocked", []):
        assert any(text in (w["reason"] or "") for w in report["workloads"]), report["workloads"]
    after = {o: _build(tree / o) for o in overlays}

    for overlay in case.get("unchanged", []):
        assert after[overlay] == before[overlay], overlay
    # Each built pod gets what the device plugin gave it; `counts` cases repair a tree whose
    # pods asked for devices twice (GPU110), so what they got before is not the measure.
    for overlay in (o for o in overlays if o not in case.get("counts", {})):
        assert whole_pod_problems(objects_from_text(before[overlay]),
                                  objects_from_text(after[overlay])) == [], overlay
    for overlay in case.get("converted", []):
        rendered = tmp_path / "rendered" / overlay / "all.yaml"
        rendered.parent.mkdir(parents=True)
        rendered.write_text(before[overlay])
        plain = [a for a in args if a != "--claims-file" and not a.endswith(".yaml")]
        _convert([str(rendered), *plain])
        expected = _devices(objects_from_text(rendered.read_text()))
        got = _devices(objects_from_text(after[overlay]))
        assert got == expected, overlay
        assert '"device-plugin"' not in json.dumps(got), overlay
    for overlay, workloads in case.get("counts", {}).items():
        got = entitlements(objects_from_text(after[overlay]))
        for workload, containers in workloads.items():
            for container, count in containers.items():
                view = got[workload]["containers"][container]
                assert all("device-plugin" not in r for r in view), view
                assert sum(r["count"] for r in view) == count, view

    snapshot = _tree_files(tree)
    code, _ = _convert([str(tree), *args, "--check"])
    assert code in (0, 4)
    assert _tree_files(tree) == snapshot


def test_overlays_without_their_base_are_left_alone(tmp_path: Path) -> None:
    """Converting overlays whose base is outside the paths changes nothing and says why."""
    tree = tmp_path / "tree"
    shutil.copytree(TREES / "smp-count", tree, ignore=shutil.ignore_patterns("case.yaml"))
    before = _tree_files(tree)
    code, report = _convert([str(tree / "overlays")])
    assert code == 4
    reasons = [w["reason"] for w in report["workloads"]]
    assert len(reasons) == 2 and all("outside the paths" in r for r in reasons), reasons
    assert _tree_files(tree) == before
