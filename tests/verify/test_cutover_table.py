"""cutover's table names each wave's moving workloads and what stays on the device plugin, and
says where each wave's steps are (issue 36, item 4: it listed no workload and named neither
`-o markdown` nor `--output-dir`); the way it points to runs and gives the runbook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.verify.test_cutover import blocked_fleet, ordered_fleet, safe_fleet

FLEETS: dict[str, tuple[list[dict[str, Any]], tuple[str, ...]]] = {
    "safe": (safe_fleet(), ()),
    "ordered": (ordered_fleet(), ()),
    "blocked": (blocked_fleet(), ("--max-wave-nodes", "1")),
}


def _cutover(source: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                           *args], capture_output=True, text=True, timeout=120,
                          env={"NO_COLOR": "1", "PATH": "", "HOME": str(source.parent)})


@pytest.mark.parametrize("name", sorted(FLEETS))
def test_the_table_names_what_each_wave_moves_and_what_stays(name: str, tmp_path: Path) -> None:
    objects, args = FLEETS[name]
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    report = json.loads(_cutover(source, "-o", "json", *args).stdout)
    table = _cutover(source, *args)
    lines = table.stdout.splitlines()
    for wave in report["waves"]:
        moved = ", ".join(f"{w['namespace']}/{w['kind']}/{w['name']}" for w in wave["workloads"])
        assert f"wave {wave['wave']} moves: {moved}" in lines
    stays = [f"{u['namespace']}/{u['kind']}/{u['name']}" for u in report["unconverted"]]
    assert any(line.startswith(f"stays on the device plugin: {', '.join(stays)} ")
               for line in lines) is bool(stays)
    hint = "steps per wave: -o markdown (the runbook), or --output-dir DIR (the runbook and " \
           "the manifests)"
    assert hint in lines
    # what the hint names runs, and gives the runbook with each wave
    markdown = _cutover(source, "-o", "markdown", *args)
    assert markdown.returncode == table.returncode, markdown.stderr
    assert markdown.stdout.startswith("# GPU cutover runbook")
    assert [line.split(":")[0] for line in markdown.stdout.splitlines()
            if line.startswith("## Wave ")] == [f"## Wave {w['wave']}" for w in report["waves"]]
    out = tmp_path / "out"
    written = _cutover(source, "--output-dir", str(out), *args)
    assert written.returncode == table.returncode, written.stderr
    assert f"steps per wave: {out}/runbook.md; the manifests: {out}/wave-N/" in \
        written.stdout.splitlines()
    assert (out / "runbook.md").is_file()
    assert sorted(p.name for p in out.glob("wave-*")) == \
        sorted(f"wave-{w['wave']}" for w in report["waves"])
