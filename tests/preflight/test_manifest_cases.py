"""Data-driven manifests-tier tests: tests/preflight/manifest_cases/<CHECK>.yaml.

Each case writes `files` (relative path -> text) into a temporary directory and reads it with
`read_manifests` (the audit included), or reads `paths` relative to that directory instead.
`options`: `target_version` (default 1.37) and `require_migrated`. `no_schemas: true` makes
`import kubernetes_validate` fail, as in an install without the `validate` extra.
`expect` works as in the cluster cases.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.audit.engine import AuditRequest
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.preflight.manifests import MANIFEST_CHECKS, ManifestOptions, run_manifest_checks
from gpudra.preflight.manifests.read import read_manifests
from tests.preflight.cluster_case_data import assert_expected

CASES_DIR = Path(__file__).parent / "manifest_cases"


def _case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("MANIFEST*.yaml"))


def _load_cases():
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        for case in spec["cases"]:
            yield pytest.param(spec["check"], case, id=f"{spec['check']}-{case['name']}")


def _options(case: dict[str, Any]) -> ManifestOptions:
    raw = case.get("options") or {}
    target = TargetVersion.parse(str(raw["target_version"])) if "target_version" in raw \
        else DEFAULT
    return ManifestOptions(target, bool(raw.get("require_migrated")))


@pytest.mark.parametrize(("check_id", "case"), list(_load_cases()))
def test_manifest_case(check_id: str, case: dict, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    if case.get("no_schemas"):
        monkeypatch.setitem(sys.modules, "kubernetes_validate", None)  # import fails
    for name, text in (case.get("files") or {}).items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    paths = [str(tmp_path / p) for p in case.get("paths") or ["."]]
    tree = read_manifests(AuditRequest(paths))
    results = run_manifest_checks(tree, _options(case))
    assert [r.id for r in results] == [c.id for c in MANIFEST_CHECKS]
    got = next(r for r in results if r.id == check_id)
    assert_expected(got, case["expect"])


def test_every_manifest_check_has_a_case_per_outcome() -> None:
    covered: dict[str, set[str]] = {}
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        assert path.stem == spec["check"], path
        covered[spec["check"]] = {c["expect"]["outcome"] for c in spec["cases"]}
    for info in MANIFEST_CHECKS:
        declared = {o.value for o in info.outcomes}
        assert declared == covered.get(info.id), (info.id, declared, covered.get(info.id))


def test_stdin_is_read_once_and_replayed(tmp_path: Path) -> None:
    text = (b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
            b"    spec:\n      containers:\n      - {name: c, image: x, resources: {limits: "
            b"{nvidia.com/gpu: 1}}}\n")
    calls = []

    def stdin() -> bytes:
        calls.append(1)
        return text

    tree = read_manifests(AuditRequest(["-"]), stdin=stdin)
    assert len(calls) == 1
    assert [o.kind for o in tree.objects] == ["Deployment"]
    assert [f.rule for f in tree.findings] == ["GPU101"]
