"""Label and field selectors as the API server parses them from `labelSelector`/`fieldSelector`.

Label syntax (k8s.io/apimachinery pkg/labels/selector.go): comma-separated requirements
`k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`. `!=` and `notin`
also match objects without the key. Field syntax (pkg/fields/selector.go): `f=v`, `f==v`, `f!=v`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .status import ApiError, bad_request

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_CMP = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[-A-Za-z0-9_.]*)$")
_EXISTS = re.compile(rf"^(?P<neg>!?)\s*(?P<key>{_KEY})$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # exists, !exists, =, !=, in, notin, >, <
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        op = self.operator
        if op == "exists":
            return present
        if op == "!exists":
            return not present
        if op in ("=", "in"):
            return present and value in self.values
        if op in ("!=", "notin"):
            return not present or value not in self.values
        # > and <: both sides must be integers, as in the real parser.
        if not present or not _is_int(value):
            return False
        number, bound = int(value), int(self.values[0])
        return number > bound if op == ">" else number < bound


def _is_int(text: str | None) -> bool:
    return text is not None and re.fullmatch(r"-?\d+", text) is not None


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """Parse a labelSelector; raises ApiError 400 when it is malformed."""
    if not text.strip():
        return ()
    requirements = []
    for part in _split_top_level(text):
        requirements.append(_parse_requirement(part.strip(), text))
    return tuple(requirements)


def _parse_requirement(part: str, whole: str) -> Requirement:
    if match := _SET.match(part):
        values = tuple(v.strip() for v in match["values"].split(",") if v.strip())
        return Requirement(match["key"], match["op"], values)
    if match := _CMP.match(part):
        op = "=" if match["op"] == "==" else match["op"]
        if op in (">", "<") and not _is_int(match["value"]):
            raise _unparseable(whole, f"for '{op}' operator, the value must be an integer")
        return Requirement(match["key"], op, (match["value"],))
    if match := _EXISTS.match(part):
        return Requirement(match["key"], "!exists" if match["neg"] else "exists")
    raise _unparseable(whole, f"cannot parse requirement {part!r}")


def _unparseable(selector: str, why: str) -> ApiError:
    return bad_request(f'unable to parse requirement: found invalid label selector "{selector}": '
                       f"{why}")


def labels_match(requirements: tuple[Requirement, ...], labels: Mapping[str, str]) -> bool:
    return all(requirement.matches(labels) for requirement in requirements)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool

    def matches(self, obj: Mapping[str, Any], lookup: Callable[[Mapping[str, Any], str], str]
                ) -> bool:
        return (lookup(obj, self.field) == self.value) != self.negated


def parse_field_selector(text: str, supported: frozenset[str]) -> tuple[FieldRequirement, ...]:
    """Parse a fieldSelector; raises ApiError 400 for syntax errors and unsupported fields."""
    if not text.strip():
        return ()
    requirements = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*([^,]*?)\s*", part)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = match.groups()
        if field not in supported:
            raise bad_request(f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, value, op == "!="))
    return tuple(requirements)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field, "" when absent; booleans as `true`/`false`."""
    node: Any = obj
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return ""
        node = node[key]
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None else str(node)


def fields_match(requirements: tuple[FieldRequirement, ...], obj: Mapping[str, Any]) -> bool:
    return all(requirement.matches(obj, field_value) for requirement in requirements)
