"""Rules are emitted by their declared constant: a rule id written as a string at an emit
site is a second spelling of the rule that nothing checks (a typo fails only at run time)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gpudra
from gpudra.rules.base import AuditContext

PACKAGE = Path(gpudra.__file__).parent


def _emit_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "emit" and node.args:
                calls.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", node))
    return calls


def test_no_emit_site_spells_a_rule_id() -> None:
    calls = _emit_calls()
    assert len(calls) > 40  # every checker's emit sites were found
    spelled = [where for where, call in calls
               if any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                      and re.fullmatch(r"GPU\d+", n.value) for n in ast.walk(call.args[0]))]
    assert spelled == []


def test_emit_refuses_a_string() -> None:
    with pytest.raises(AttributeError):
        AuditContext.emit(None, "GPU101", None, "")  # type: ignore[arg-type]
