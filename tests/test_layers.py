"""The floors of the house: the import contracts in pyproject.toml ([tool.importlinter]) hold,
function-local imports included, and every top-level module of gpudra stands on a floor."""

from __future__ import annotations

import pathlib
import sys

from importlinter.cli import lint_imports

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_hold() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_every_top_level_module_stands_on_a_floor() -> None:
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    named = {name.strip() for floor in layers for name in floor.split("|")}
    package = ROOT / "gpudra"
    modules = {f"gpudra.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"gpudra.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert modules - named == set(), "add these to a floor in pyproject.toml"
    assert named - modules == set(), "these floors name modules that do not exist"
