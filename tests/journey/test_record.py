"""tests/journey/record.py: what a wave's line counts in the folder `gpudra cutover --output-dir`
writes, and that nothing is written unless GPUDRA_JOURNEY_RECORD names a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.journey.record import ENV, Record, manifests

# files under wave-1/ -> what the line counts
LAYOUTS = [
    ({"converted/replace/ml/deployment-a.yaml", "converted/recreate/ml/job-b.yaml",
      "converted/claims/ml/deployment-a.yaml", "converted/claims/ml/job-b.yaml",
      "converted/quotas/ml/resourcequota-q.yaml", "original/replace/ml/deployment-a.yaml",
      "original/recreate/ml/job-b.yaml"},
     {"workloads": 2, "claim_templates": 2, "quotas": 1, "device_classes": 0, "changed": 5,
      "unchanged": 0}),
    ({"mapping/deviceclass-nvidia-gpu.yaml", "bridged/replace/ml/deployment-a.yaml",
      "bridged/recreate/ml/pod-b.yaml"},
     {"workloads": 0, "claim_templates": 0, "quotas": 0, "device_classes": 1, "changed": 1,
      "unchanged": 2}),
    (set(), {"workloads": 0, "claim_templates": 0, "quotas": 0, "device_classes": 0,
             "changed": 0, "unchanged": 0}),
]


def _write(root: Path, files: set[str]) -> None:
    (root / "wave-1").mkdir(parents=True)
    for name in files:
        path = root / "wave-1" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("kind: X\n", encoding="utf-8")


@pytest.mark.parametrize(("files", "counted"), LAYOUTS)
def test_a_wave_counts_what_the_strategy_changed(tmp_path: Path, files: set[str],
                                                 counted: dict[str, int]) -> None:
    _write(tmp_path, files)
    assert manifests(tmp_path, 1) == counted


def test_a_line_is_appended_only_when_the_variable_names_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "out", LAYOUTS[0][0])
    record = Record("gke-1.37", "claims", tmp_path / "out")
    monkeypatch.delenv(ENV, raising=False)
    with record.timed(1, "steps"):
        pass
    assert not list(tmp_path.glob("*.jsonl"))
    target = tmp_path / "journey.jsonl"
    monkeypatch.setenv(ENV, str(target))
    for block in ("steps", "rollback"):
        with record.timed(1, block):
            pass
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(line["cluster"], line["strategy"], line["wave"], line["block"],
             line["manifests"]) for line in lines] == [
        ("gke-1.37", "claims", 1, block, LAYOUTS[0][1]) for block in ("steps", "rollback")]
    assert all(line["seconds"] >= 0 and line["load1"] >= 0 for line in lines)
