"""`N documents parsed` counts the documents that parsed: one that fails is an unreadable input,
not a parsed document (issue 36, item 5: "2 documents parsed" with one of them unreadable)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app

GOOD = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j%d}
spec:
  template:
    spec:
      containers:
      - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}
"""
BROKEN_YAML = "apiVersion: v1\nkind: Pod\nmetadata: {name: x\nspec: {nvidia.com/gpu: 1}\n"
BROKEN_JSON = '{"apiVersion": "v1", "kind": "Pod", "spec": {"nvidia.com/gpu": 1,}'

# (files, documents parsed, inputs unreadable)
CASES = [
    ({"a.yaml": GOOD % 1}, 1, 0),
    ({"a.yaml": GOOD % 1, "b.yaml": BROKEN_YAML}, 1, 1),
    ({"a.yaml": GOOD % 1 + "---\n" + BROKEN_YAML + "---\n" + GOOD % 2}, 2, 1),
    ({"a.yaml": GOOD % 1, "b.json": BROKEN_JSON}, 1, 1),
    ({"a.yaml": BROKEN_YAML, "b.yaml": BROKEN_YAML}, 0, 2),
]


@pytest.mark.parametrize(("files", "parsed", "unreadable"), CASES)
@pytest.mark.parametrize("command", ["audit", "convert"])
def test_documents_parsed_counts_what_parsed(files: dict[str, str], parsed: int,
                                             unreadable: int, command: str,
                                             tmp_path: Path) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = ["audit", str(tmp_path), "-o", "json", "--fail-on", "never"] if command == "audit" \
        else ["convert", "--check", str(tmp_path), "-o", "json"]
    result = CliRunner().invoke(app, args)
    data = json.loads(result.stdout)
    counts = data["summary"]
    assert counts["documents_parsed"] == parsed, result.stdout
    assert len(data["errors"]) == unreadable
