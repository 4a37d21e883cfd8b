"""Rewrite the two CEL selector mistakes blog posts spread, when the intent is unambiguous.

- `<quantity or version> >= y` (GPU606): CEL has no ordering operators for Kubernetes
  quantities and semver versions; `x.compareTo(y) >= 0` says the same and compiles.
- `device.attributes["gpu.nvidia.com"].memory` (GPU605): the NVIDIA driver publishes memory as
  a capacity; `device.capacity["gpu.nvidia.com"].memory` is the same number, in bytes, typed as
  a quantity. Only compared with a quantity is the meaning clear: against a bare number
  (`>= 16000`: MiB? GB?) nobody can say which unit was meant, and the selector is left alone.

A rewrite is returned only when the result has none of these problems and compiles.
"""

from __future__ import annotations

import re

from gpudra.dra.cel import compile_selector
from gpudra.dra.cel_errors import CelError
from gpudra.dra.cel_lint import analyse
from gpudra.dra.versions import TargetVersion

_MEMORY_ATTRIBUTE = re.compile(r"""device\.attributes\[(["'])gpu\.nvidia\.com\1\]\.memory\b""")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?[uU]?")


def repair_selector(expression: str, target: TargetVersion) -> str | None:
    """The repaired expression; None when there is nothing to repair or no safe repair (the
    result must compile on `target`)."""
    memory = _MEMORY_ATTRIBUTE.sub(r"device.capacity[\1gpu.nvidia.com\1].memory", expression)
    repaired = _compare_to(memory)
    if repaired is None or repaired == expression:
        return None
    if analyse(repaired).comparisons or _MEMORY_ATTRIBUTE.search(repaired):
        return None
    try:
        compile_selector(repaired, target)
    except CelError:
        return None  # e.g. capacity memory compared with a bare number
    return repaired


def _compare_to(expression: str) -> str | None:
    """`a <op> b` -> `a.compareTo(b) <op> 0` for every relational operator on a quantity or
    version; None when an operand is not a plain chain."""
    comparisons = analyse(expression).comparisons
    spans = [(c.operator, c.operands) for c in comparisons if c.operands is not None]
    if len(spans) < len(comparisons):
        return None
    for _, (left_start, left_end, right_start, right_end) in spans:
        # a bare number has no unit: `memory >= 16000` stays as written
        if _NUMBER.fullmatch(expression[left_start:left_end].strip()) or \
                _NUMBER.fullmatch(expression[right_start:right_end].strip()):
            return None
    out = expression
    for operator, operands in sorted(spans, key=lambda span: span[1][0], reverse=True):
        left_start, left_end, right_start, right_end = operands
        out = (out[:left_start] + f"{out[left_start:left_end]}.compareTo("
               f"{out[right_start:right_end]}) {operator} 0" + out[right_end:])
    return out
