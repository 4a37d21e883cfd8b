"""The format registry (gpudra.cli.formats): every line names a renderer that exists, in
the package of the data it renders, by a reference import-linter sees, and nothing is imported
before a format is asked for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpudra.cli.formats import FORMATS, Format, choices, find, names, render
from gpudra.errors import UsageError
from gpudra.report import SummaryFormat
from gpudra.report.formats import Kind
from gpudra.rules import catalogue

# Where each kind's renderers may sit: beside its data, or in gpudra.report.
HOMES = {
    Kind.AUDIT: ("gpudra.report.",),
    Kind.OUTCOMES: ("gpudra.report.",),
    Kind.FLEET: ("gpudra.report.",),
    Kind.CONVERT: ("gpudra.convert.",),
    Kind.RUNBOOK: ("gpudra.cutover.",),
    Kind.RULES: ("gpudra.rules.",),
    Kind.CHECKS: ("gpudra.preflight.",),
    Kind.CONTROLLERS: ("gpudra.controllers.",),
}


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"{f.kind.value}-{f.name}")
def test_every_line_names_a_renderer_beside_its_data(fmt: Format) -> None:
    renderer = fmt.load()
    assert callable(renderer)
    assert renderer.__module__.startswith(HOMES[fmt.kind]), renderer.__module__


def test_the_registry_imports_every_renderer_it_names() -> None:
    # By typed references, not "module:function" strings: import-linter's graph has each edge,
    # so the floors hold for the registry too.
    import grimp

    graph = grimp.build_graph("gpudra", cache_dir=None)
    imported = graph.find_modules_directly_imported_by("gpudra.cli.formats")
    assert {f.load().__module__ for f in FORMATS} - imported == set()


def test_every_kind_has_formats_and_no_word_twice() -> None:
    for kind in Kind:
        assert names(kind), kind
        assert len(set(names(kind))) == len(names(kind)), kind


def test_convert_choices_are_the_registry_s() -> None:
    assert [f.value for f in SummaryFormat] == list(names(Kind.CONVERT))


def test_a_word_a_kind_does_not_take_is_a_usage_error() -> None:
    assert choices(Kind.RUNBOOK) == "table, markdown or json"
    with pytest.raises(UsageError, match=r"^-o must be table, markdown or json, not 'sarif'$"):
        find(Kind.RUNBOOK, "sarif")
    with pytest.raises(UsageError, match=r"^unknown format 'yaml' \(table, json or markdown\)$"):
        render(Kind.RULES, "yaml", [])


def test_render_passes_the_data_to_the_renderer() -> None:
    rules = list(catalogue().values())[:2]
    data = json.loads(render(Kind.RULES, "json", rules))
    assert [r["id"] for r in data] == [r.id for r in rules]


def test_no_renderer_is_imported_before_it_is_asked_for() -> None:
    # Start-up: the CLI imports the registry; the renderers (rich among them) wait.
    modules = sorted({f.load().__module__ for f in FORMATS})
    code = ("import sys, json; import gpudra.cli; "
            f"print(json.dumps([m for m in {modules!r} + ['rich'] if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []
