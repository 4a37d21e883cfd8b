"""Counts for issue 35 item 2: how much of gpudra's typing is erased, per package.

    python benchmarks/type_census.py [--json]

Prints, per package (a top-level module counts as the package "(root)"): the lines that
name `Any` (as `grep -rn '\bAny\b' gpudra | wc -l` counts them), the annotations that name it
(a parameter, a return, a field or variable; from the syntax tree, so comments do not count),
and imports inside a function body.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "gpudra"
_WORD = re.compile(r"\bAny\b")


def _names_any(node: ast.AST | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and _WORD.search(n.value))
        for n in ast.walk(node))


def _annotations(tree: ast.AST) -> list[ast.AST | None]:
    found: list[ast.AST | None] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found += [a.annotation for a in every if a is not None]
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def _local_imports(tree: ast.AST) -> int:
    """Imports inside a function body (one in a nested function counts once)."""
    seen: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(node):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    seen.add(id(n))
    return len(seen)


def census(root: Path = ROOT) -> dict[str, Counter[str]]:
    packages: dict[str, Counter[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        package = relative.parts[0] if len(relative.parts) > 1 else "(root)"
        text = path.read_text()
        tree = ast.parse(text, str(path))
        counts = packages.setdefault(package, Counter())
        counts["lines with Any"] += sum(bool(_WORD.search(line)) for line in text.splitlines())
        counts["Any in annotations"] += sum(_names_any(a) for a in _annotations(tree))
        counts["local imports"] += _local_imports(tree)
    return packages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    args = parser.parse_args()
    packages = census()
    total: Counter[str] = Counter()
    for counts in packages.values():
        total.update(counts)
    if args.json:
        print(json.dumps({"total": total, "packages": packages}, indent=2, sort_keys=True))
        return
    columns = ["lines with Any", "Any in annotations", "local imports"]
    print(f"{'package':<14}" + "".join(f"{c:>20}" for c in columns))
    for name, counts in sorted(packages.items()):
        print(f"{name:<14}" + "".join(f"{counts[c]:>20}" for c in columns))
    print(f"{'total':<14}" + "".join(f"{total[c]:>20}" for c in columns))


if __name__ == "__main__":
    main()
