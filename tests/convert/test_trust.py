"""Convert must never change what a workload gets: data-driven cases in trust/*.yaml.

Each case writes its manifests (`manifest`, or `files`), runs `gpudra convert` on the copy (with
`args`), and compares the result on what matters: the strategy of every workload (`workloads`,
keyed "Kind/name"), text in its reason or notes (`reasons`, `notes`; `no_notes`: text none of its
notes may contain), a container's whole `resources` block after conversion (`resources`, keyed
"Kind/name", then container), and what each container and
each pod gets (`gets`, keyed "Kind/name@namespace", read back from the written tree by the
oracle in entitlements.py: the device requests visible to each container, and the requests the
pod's claims allocate). Expected request entries are compared on the keys they name. Every
case is also held to the whole-pod oracle (entitlements.whole_pod_problems): each pod of the
result gets exactly what the device plugin gave the original.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.k8s.workloads import WorkloadTable

from .entitlements import entitlements, objects_from_text, objects_in, whole_pod_problems

CASES = Path(__file__).parent / "trust"


def _cases():
    for path in sorted(CASES.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            yield pytest.param(case, id=f"{path.stem}-{case['name']}")


def _label(w: dict[str, Any]) -> str:
    return f"{w['kind']}/{w['name']}" if w["kind"] else f"{w['file']} -"


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            _subset(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, list) and isinstance(actual, list):
        return sorted(map(str, expected)) == sorted(map(str, actual))
    return expected == actual


@pytest.mark.parametrize("case", list(_cases()))
def test_trust(case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = case.get("files") or {"manifest.yaml": case["manifest"]}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["convert", ".", *case.get("args", []), "-o", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    report = json.loads(result.stdout)
    by_label = {_label(w): w for w in report["workloads"]}
    assert {k: w["strategy"] for k, w in by_label.items()} == case["workloads"], report
    for label, text in (case.get("reasons") or {}).items():
        assert text in (by_label[label]["reason"] or ""), (label, by_label[label]["reason"])
    for label, texts in (case.get("notes") or {}).items():
        said = [*by_label[label]["notes"], by_label[label]["reason"] or ""]
        for text in texts:
            assert any(text in line for line in said), (label, text, said)
    for label, texts in (case.get("no_notes") or {}).items():
        said = [*by_label[label]["notes"], by_label[label]["reason"] or ""]
        assert not [t for t in texts if any(t in line for line in said)], (label, said)
    after = objects_in(tmp_path)
    for label, containers in (case.get("resources") or {}).items():
        kind, name = label.split("/")
        obj = next(o for o in after if o.get("kind") == kind and o["metadata"]["name"] == name)
        got = {ref.name: ref.data.get("resources") for spec in WorkloadTable().pod_specs(
            str(obj["apiVersion"]).rpartition("/")[0], kind, obj) for ref in spec.containers}
        assert {c: got.get(c) for c in containers} == containers, got
    before = [obj for text in files.values() for obj in objects_from_text(text)]
    assert whole_pod_problems(before, after) == []
    got = entitlements(after)
    for label, expected in (case.get("gets") or {}).items():
        assert label in got, (label, sorted(got))
        assert _subset(expected, got[label]), json.dumps({"expected": expected,
                                                          "got": got[label]}, indent=1)
