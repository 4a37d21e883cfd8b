"""Singular and plural: `1 node`, `2 nodes` (issue 36 item 3: `1 nodes`, `1 pods, 1 GPUs`,
`1 waves`, `1 workloads`...). Every count gpudra says in words goes through one helper,
gpudra.k8s.objects.plural; the messages render right with 1 and with 2, and no f-string in gpudra/
puts a count straight before a plural noun (the way the wrong ones were written)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gpudra.cutover.runbook import _fits
from gpudra.cutover.waves import Side
from gpudra.k8s.objects import noun_for, plural

SOURCE = Path(__file__).resolve().parents[1] / "gpudra"
# The nouns gpudra counts, as their plurals (what follows a count in a message).
NOUNS = frozenset({
    "nodes", "pods", "GPUs", "objects", "waves", "workloads", "files", "findings", "clusters",
    "devices", "replicas", "slices", "claims", "slots", "times", "DaemonSets", "PrometheusRules",
    "documents", "entries", "errors", "containers", "requests", "namespaces", "contexts",
    "DeviceClass(es)", "DeviceClasses", "pools", "rules", "checks", "templates",
})
# An expression that is a number of things: len(...), sum(...), or a name such as n, count,
# gpus, nodes, side.workloads. A CONSTANT is a fixed number above one, no count.
COUNT = re.compile(r"^(len|sum)\(|(^|[._'])(n|count|total|gpus|nodes|pods|workloads|replicas|"
                   r"demand|files|objects|waves|findings|clusters|devices|moved|held|left|"
                   r"short|restarts|asked|candidates|of|expected|desired|known|fixed|"
                   r"objects_read|files_scanned|documents_parsed)'?\]?\)?$")
NEXT_WORD = re.compile(r"^ ([A-Za-z-]+(?:\(es\))?)")


@pytest.mark.parametrize(("n", "noun", "many", "said"), [
    (0, "node", None, "0 nodes"), (1, "node", None, "1 node"), (2, "node", None, "2 nodes"),
    (1, "GPU", None, "1 GPU"), (2, "GPU", None, "2 GPUs"),
    (1, "DeviceClass", "DeviceClasses", "1 DeviceClass"),
    (2, "DeviceClass", "DeviceClasses", "2 DeviceClasses"),
])
def test_the_helper(n: int, noun: str, many: str | None, said: str) -> None:
    assert plural(n, noun, many) == said
    assert noun_for(n, noun, many) == said.split(" ", 1)[1]


def _side(count: int) -> Side:
    return Side("DRA", nodes=count, gpus=count, workloads=count, demand=count, failures=())


@pytest.mark.parametrize(("count", "said"), [
    (1, "1/1 GPU on 1 node, 1 workload: fit"),
    (2, "2/2 GPUs on 2 nodes, 2 workloads: fit"),
])
def test_a_cutover_side_with_one_and_two(count: int, said: str) -> None:
    assert _fits(_side(count)) == said


def _counted_nouns() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            for value, text in zip(node.values, node.values[1:]):
                if not (isinstance(value, ast.FormattedValue) and isinstance(text, ast.Constant)):
                    continue
                expression = ast.unparse(value.value)
                word = NEXT_WORD.match(str(text.value))
                if word and word.group(1) in NOUNS and COUNT.search(expression) \
                        and not expression.isupper():
                    where = path.relative_to(SOURCE.parent)
                    found.append(f"{where}:{node.lineno}: {{{expression}}} {word.group(1)}")
    return found


def test_no_count_is_written_before_a_plural_noun_by_hand() -> None:
    assert _counted_nouns() == [], "use gpudra.k8s.objects.plural(count, noun)"
