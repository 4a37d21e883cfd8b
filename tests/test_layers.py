"""The floors of the house: the import contracts in pyproject.toml ([tool.importlinter]) hold,
function-local imports included, and every top-level module of gpudra stands on a floor, as
does every module of a package that has floors of its own (gpudra.k8s, gpudra.results)."""

from __future__ import annotations

import pathlib
import sys

import pytest
from importlinter.cli import lint_imports

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
