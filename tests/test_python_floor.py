"""gpudra requires Python 3.11+ (issue 35 item 5): every place that names the floor names 3.11,
and no code keeps a branch or a back-port for an older Python."""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import tomllib
from collections.abc import Callable

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOOR = (3, 11)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Back-ports whose feature is in the standard library from 3.11 (tomllib, typing.Self, ...).
BACKPORTS = frozenset({"tomli", "typing_extensions", "exceptiongroup", "backports"})


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _classifier_versions() -> list[tuple[int, ...]]:
    prefix = "Programming Language :: Python :: "
    return [_version(c[len(prefix):]) for c in PYPROJECT["project"].get("classifiers", [])
            if re.fullmatch(re.escape(prefix) + r"3\.\d+", c)]


def _readme_floor() -> tuple[int, ...]:
    found = re.search(r"\(Python (\d+\.\d+)\+\)", (ROOT / "README.md").read_text())
    assert found, "README.md names the Python floor as '(Python 3.N+)'"
    return _version(found.group(1))


FLOORS = {
    "requires-python": lambda: _version(
        PYPROJECT["project"]["requires-python"].removeprefix(">=").strip()),
    "lowest classifier": lambda: min(_classifier_versions()),
    "ruff target-version": lambda: _version(
        PYPROJECT["tool"]["ruff"]["target-version"].removeprefix("py").replace("3", "3.", 1)),
    "mypy python_version": lambda: _version(PYPROJECT["tool"]["mypy"]["python_version"]),
    "README": _readme_floor,
}


@pytest.mark.parametrize("where", sorted(FLOORS))
def test_every_place_names_the_floor(where: str) -> None:
    assert FLOORS[where]() == FLOOR


def test_dependencies_carry_no_marker_for_an_older_python() -> None:
    project = PYPROJECT["project"]
    requirements = [*project["dependencies"],
                    *(r for extra in project["optional-dependencies"].values() for r in extra)]
    assert [r for r in requirements if "python_version" in r] == []


@functools.cache
def _trees() -> dict[pathlib.Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted([*(ROOT / "gpudra").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
                   *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / ".ci").rglob("*.py")])}


def _old_python_branches(tree: ast.AST) -> list[int]:
    """Lines comparing sys.version_info with a release below the floor (a dead branch)."""
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                and node.left.attr == "version_info"):
            for right in node.comparators:
                release = ast.literal_eval(right) if isinstance(right, ast.Tuple) else None
                if isinstance(release, tuple) and release <= FLOOR:
                    lines.append(node.lineno)
    return lines


def _backport_imports(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(name.split(".")[0] in BACKPORTS for name in names):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("check", [_old_python_branches, _backport_imports],
                         ids=["version branch", "back-port import"])
def test_no_code_for_an_older_python(check: Callable[[ast.AST], list[int]]) -> None:
    found = {}
    for path, tree in _trees().items():
        lines = check(tree)
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert found == {}
