"""Audit and convert read the same inputs the same way: data-driven cases in agreement/*.yaml.

Each case writes its `files` into a tree and runs, as users do, `gpudra audit . -o json`,
`gpudra convert . --check -o json` and then `gpudra convert . -o json`. It holds them to:

* `workloads`: every workload of convert's summary and its strategy (keyed "<file> Kind/name",
  or "<file> -" for a whole file), and `reasons`: text in its reason;
* `gpu_workloads`: the audit's count of GPU workloads (`on_device_plugin`: of them, still on
  the device plugin), and `findings`: how many findings of each
  named rule the audit reports (rules not named are not counted);
* `check_exit`: the exit code of `convert --check` (default 4 when every workload is blocked,
  0 when there is none);
* `unchanged`: files that the converting run must leave byte for byte (default: every file when
  no workload is rewritten or repaired); a second run must change nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app

CASES = Path(__file__).parent / "agreement"
_CHANGING = {"rewrite", "repair", "quota", "bridge"}


def _cases():
    for path in sorted(CASES.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            yield pytest.param(case, id=f"{path.stem}-{case['name']}")


def _run(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, json.loads(result.stdout)


def _label(w: dict[str, Any]) -> str:
    return f"{w['file']} {w['kind']}/{w['name']}" if w["kind"] else f"{w['file']} -"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(_cases()))
def test_agreement(case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in case["files"].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)

    _, audit = _run("audit", ".", "--fail-on", "never")
    assert audit["summary"]["gpu_workloads"] == case["gpu_workloads"], audit["summary"]
    if "on_device_plugin" in case:
        assert audit["summary"]["on_device_plugin"] == case["on_device_plugin"], audit["summary"]
    rules = Counter(f["rule"] for f in audit["findings"])
    assert {r: rules[r] for r in case.get("findings", {})} == case.get("findings", {}), rules

    expected = case["workloads"]
    strategies = set(expected.values())
    default_exit = 1 if strategies & _CHANGING else 4 if "blocked" in strategies else 0
    check_exit, check = _run("convert", ".", "--check")
    by_label = {_label(w): w for w in check["workloads"]}
    assert {k: w["strategy"] for k, w in by_label.items()} == expected, check["workloads"]
    for label, text in (case.get("reasons") or {}).items():
        assert text in (by_label[label]["reason"] or ""), (label, by_label[label]["reason"])
    assert check_exit == case.get("check_exit", default_exit), check
    assert _tree(tmp_path) == before

    _, converted = _run("convert", ".")
    assert {_label(w): w["strategy"] for w in converted["workloads"]} == expected
    after = _tree(tmp_path)
    unchanged = case.get("unchanged", list(before) if not strategies & _CHANGING else [])
    for name in unchanged:
        assert after.get(name) == before[name], name
    _run("convert", ".")
    assert _tree(tmp_path) == after, "a second run changed the tree"
