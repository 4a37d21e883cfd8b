"""What is wrong with a CEL selector for the NVIDIA driver, beyond syntax.

Shared by the audit rules (GPU605, GPU606) and by `convert`, which refuses user selectors
(`--selector`) that its own audit would flag: a selector on an attribute the driver does not
publish fails at allocation time, and `>=` on a quantity does not compile in Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.dra.attributes import (
    NVIDIA_DOMAIN,
    STANDARD_DOMAIN,
    DeviceType,
    attribute_problem,
    capacity_problem,
)
from gpudra.dra.cel_lint import BadComparison, Reference, analyse


@dataclass(frozen=True, slots=True)
class SelectorProblem:
    kind: str  # "reference": an attribute/capacity the driver does not publish; "comparison"
    message: str


def selector_problems(expression: str, device_type: DeviceType | None = None,
                      nvidia_class: bool = False) -> list[SelectorProblem]:
    """Problems in one expression, each reported once. `nvidia_class`: the request's class is
    an NVIDIA one, so standard (resource.kubernetes.io) names are judged too."""
    analysis = analyse(expression)
    nvidia = nvidia_class or NVIDIA_DOMAIN in expression
    problems: list[SelectorProblem] = []
    seen: set[tuple[str, str, str]] = set()
    for ref in analysis.references:
        key = (ref.kind, ref.domain, ref.name)
        if ref.guarded or key in seen:
            continue
        seen.add(key)
        problem = _reference_problem(ref, device_type, nvidia)
        if problem:
            problems.append(SelectorProblem(
                "reference", f"selector {ref.text} ({position(ref.line, ref.column)}): {problem}"))
    problems += [SelectorProblem("comparison", _comparison_message(c))
                 for c in analysis.comparisons]
    return problems


def _reference_problem(ref: Reference, device_type: DeviceType | None, nvidia: bool) -> str | None:
    if ref.domain == STANDARD_DOMAIN and not nvidia:
        return None  # another driver may publish other standard names
    if ref.is_capacity:
        return capacity_problem(ref.domain, ref.name, device_type)
    return attribute_problem(ref.domain, ref.name, device_type)


def _comparison_message(c: BadComparison) -> str:
    what = "Quantity" if c.operand_type == "quantity" else "semver Version"
    method = {"<": "isLessThan", ">": "isGreaterThan"}.get(c.operator)
    alternative = f"x.compareTo(y) {c.operator} 0"
    if method:
        alternative += f" or x.{method}(y)"
    return (f"selector applies {c.operator} to a {what} ({c.operand}, "
            f"{position(c.line, c.column)}); CEL has no {c.operator} for it: use {alternative}")


def position(line: int, column: int) -> str:
    return f"column {column}" if line == 1 else f"expression line {line}, column {column}"
