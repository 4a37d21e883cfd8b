"""The record on disk: tests/seam/record/<group>.json, one per case group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RECORD = Path(__file__).with_name("record")


def path_of(group: str, folder: Path = RECORD) -> Path:
    return folder / f"{group}.json"


def load(group: str, folder: Path = RECORD) -> dict[str, Any]:
    data = json.loads(path_of(group, folder).read_text(encoding="utf-8"))
    return data["cases"]


def save(group: str, cases: dict[str, Any], recorded_from: str, folder: Path = RECORD) -> None:
    text = json.dumps({"recorded_from": recorded_from, "cases": dict(sorted(cases.items()))},
                      indent=1, ensure_ascii=False, sort_keys=False)
    path_of(group, folder).write_text(text + "\n", encoding="utf-8")
