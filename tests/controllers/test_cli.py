"""`gpudra controllers`: the registry in table, JSON and Markdown, one-line refusal of another
word (exit 2), the Markdown being docs/controllers.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.controllers.registry import registry

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str):
    return CliRunner().invoke(app, ["controllers", *args])


def test_table_lists_every_row_and_how_to_get_past_it() -> None:
    result = _run()
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(registry().rows) + 2
    assert "vouches for the kind" in lines[-1]


def test_json_is_the_registry() -> None:
    data = json.loads(_run("-o", "json").stdout)
    assert [(r["kinds"], r["convert"], r["source"]["commit"]) for r in data] == \
        [(list(r.kinds), r.convert, r.source.commit) for r in registry().rows]


def test_markdown_is_the_docs_page() -> None:
    assert _run("-o", "markdown").stdout == \
        (ROOT / "docs" / "controllers.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("word", ["yaml", "sarif"])
def test_another_word_is_a_usage_error(word: str) -> None:
    result = _run("-o", word)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "table, json or markdown" in result.stderr
