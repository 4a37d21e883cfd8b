"""The floors of the house: the import contracts in pyproject.toml ([tool.importlinter]) hold,
function-local imports included, and every top-level module of gpudra stands on a floor, as
does every module of a package that has floors of its own (gpudra.k8s, gpudra.results)."""

from __future__ import annotations

import pathlib
import tomllib

import pytest
from importlinter.cli import lint_imports

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _layer_contracts() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return [c["layers"] for c in contracts if c["type"] == "layers"]


def _named(layers: list[str]) -> set[str]:
    return {name.strip() for floor in layers for name in floor.split("|")}


def _modules_of(package: pathlib.Path, dotted: str) -> set[str]:
    modules = {f"{dotted}.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    return modules | {f"{dotted}.{p.parent.name}" for p in package.glob("*/__init__.py")}


def test_the_import_contracts_hold() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_every_top_level_module_stands_on_a_floor() -> None:
    house, *_ = _layer_contracts()
    named = _named(house)
    modules = _modules_of(ROOT / "gpudra", "gpudra")
    assert modules - named == set(), "add these to a floor in pyproject.toml"
    assert named - modules == set(), "these floors name modules that do not exist"


@pytest.mark.parametrize("package", ["k8s", "results"])
def test_every_module_of_a_floored_package_stands_on_its_floor(package: str) -> None:
    (layers,) = [c for c in _layer_contracts()[1:] if _named(c) <= _modules_of(
        ROOT / "gpudra" / package, f"gpudra.{package}")]
    assert _modules_of(ROOT / "gpudra" / package, f"gpudra.{package}") == _named(layers)




def _cycles() -> set[frozenset[str]]:
    """The strongly connected groups of gpudra's modules (more than one module), counting
    imports in function bodies as import-linter does."""
    import grimp

    graph = grimp.build_graph("gpudra", cache_dir=None)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(module: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if not imported.startswith("gpudra"):
                continue
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for module in sorted(graph.modules):
        if module.startswith("gpudra") and module not in order:
            visit(module)
    return found


def test_no_import_cycle() -> None:
    assert _cycles() == set(), "break the cycle (a lower module both use)"
