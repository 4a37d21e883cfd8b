"""The catalogue is complete and documented, and docs/rules.md is generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudra.preflight.docs import explain_id
from gpudra.rules.docs import rules_markdown
from gpudra.errors import UsageError
from gpudra.rules import catalogue

ROOT = Path(__file__).resolve().parents[1]


def test_docs_rules_md_is_current():
    assert (ROOT / "docs" / "rules.md").read_text() == rules_markdown(), \
        "regenerate with: gpudra rules -o markdown > docs/rules.md"


@pytest.mark.parametrize("rule_id", list(catalogue()))
def test_every_rule_is_documented(rule_id):
    info = catalogue()[rule_id]
    assert re.fullmatch(r"GPU\d{3}", info.id)
    assert re.fullmatch(r"[a-z0-9-]+", info.name)
    assert info.summary.endswith(".") and info.hint
    assert len(info.explanation) > 120, "explain why the rule matters"
    assert info.id in explain_id(info.id) and info.id in explain_id(info.name)


def test_rule_names_are_unique():
    names = [r.name for r in catalogue().values()]
    assert len(names) == len(set(names))


def test_explain_unknown_rule_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown rule"):
        explain_id("GPU000")


def test_explain_covers_preflight_checks():
    from gpudra.preflight import catalogue as check_catalogue

    for check in check_catalogue().values():
        text = explain_id(check.id.lower())
        assert text.startswith(f"# {check.id} {check.title}") and check.summary in text


def test_explain_suggests_the_id_meant():
    with pytest.raises(UsageError, match=r"did you mean CLUSTER001\?"):
        explain_id("CLUSTR001")
