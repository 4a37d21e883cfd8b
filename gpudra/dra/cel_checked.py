"""Checks Kubernetes makes on a type-checked selector that the engine does not, read from the
engine's checked expression (``Expression.serialize()``: a ``cel.expr.CheckedExpr`` protobuf).

* **Homogeneous literals** (cel-go ``ValidateHomogeneousAggregateLiterals``, in the API
  server's base environment): the elements of a list literal, and the keys and the values of a
  map literal, must all have the first one's type. ``[1, "a"]`` → ``expected type 'int' but
  found 'string'`` at the offending element (cel-go cel/validator.go); literals inside a call
  of ``format`` are exempt.
* **Cost estimates that overflow** (k8s.io/apiserver pkg/cel/library/cost.go and cel-go's
  estimator; the API server refuses an estimate above 1,000,000 as "too complex, exceeds cost
  limit"): ``isSorted``/``min``/``max``/``indexOf``/``lastIndexOf`` on a list of strings or
  bytes (the elements' size is unbounded), ``join`` of a typed list (its result's size is
  unbounded; on an untyped attribute Kubernetes estimates nothing), ``==`` and
  ``!=`` between type values, and cel-go's ``slice(a, b)`` with constant ``a > b``. Every other
  estimate of a DRA selector stays far below the limit (attribute strings are at most 64
  characters, maps at most 32 entries): gpudra computes no other cost.

The protobuf is read with a minimal wire-format reader (no protobuf dependency): only the fields
these checks need (cel/expr/checked.proto, syntax.proto).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

COST_LIMIT_MESSAGE = "too complex, exceeds cost limit"
_STRING_LIST_FUNCTIONS = frozenset({"isSorted", "min", "max", "indexOf", "lastIndexOf"})
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


@dataclass(frozen=True, slots=True)
class Problem:
    message: str
    offset: int | None  # into the expression; None: the whole expression (cost)


@dataclass
class _Node:
    id: int
    kind: str  # "const", "ident", "select", "call", "list", "map", "comprehension", "other"
    function: str = ""
    target: _Node | None = None
    children: list[_Node] = field(default_factory=list)  # call args, list elements, …
    entries: list[tuple[_Node, _Node]] = field(default_factory=list)  # map literal
    constant: int | None = None  # an int64 literal


def problems(serialized: bytes) -> list[Problem]:
    """What Kubernetes refuses in a checked expression the engine accepted, first first."""
    checked = _message(_message(serialized).get(2, [b""])[0])  # google.protobuf.Any value
    types = dict(_map(checked.get(3, [])))
    positions = dict(_varint_map(_message(checked.get(5, [b""])[0]).get(4, [])))
    root = _expr(checked.get(4, [b""])[0])
    found: list[Problem] = []
    cost: list[Problem] = []
    for node, exempt in _walk(root):
        if exempt:
            pass
        elif node.kind == "list":
            _homogeneous([(e, types.get(e.id)) for e in node.children], positions, found)
        elif node.kind == "map":
            _homogeneous([(k, types.get(k.id)) for k, _ in node.entries], positions, found)
            _homogeneous([(v, types.get(v.id)) for _, v in node.entries], positions, found)
        if node.kind == "call" and _too_costly(node, types):
            cost.append(Problem(COST_LIMIT_MESSAGE, None))
    found.sort(key=lambda p: p.offset or 0)
    return found + cost[:1]  # validation first: the cost is estimated only for a valid AST


def _homogeneous(items: list[tuple[_Node, bytes | None]], positions: dict[int, int],
                 found: list[Problem]) -> None:
    if len(items) < 2 or items[0][1] is None:
        return
    first = items[0][1]
    for node, type_ in items[1:]:
        if type_ is not None and type_ != first:
            found.append(Problem(f"expected type '{type_name(first)}' but found "
                                 f"'{type_name(type_)}'", positions.get(node.id)))
            return  # cel-go reports one mismatch per literal


def _too_costly(call: _Node, types: dict[int, bytes]) -> bool:
    element = _list_element(types.get(call.target.id)) if call.target is not None else None
    if call.function == "join":
        return element is not None
    if call.function in _STRING_LIST_FUNCTIONS:
        return element in ("string", "bytes")
    if call.function in ("_==_", "_!=_"):
        return any(_is_type_type(types.get(arg.id)) for arg in call.children)
    if call.function == "slice" and call.target is not None and len(call.children) == 2:
        start, end = (arg.constant for arg in call.children)
        return start is not None and end is not None and start > end
    return False


def _list_element(type_: bytes | None) -> str | None:
    if type_ is None:
        return None
    list_type = _message(type_).get(6)
    if not list_type:
        return None
    element = _message(list_type[0]).get(1)
    return type_name(element[0]) if element else None


def _is_type_type(type_: bytes | None) -> bool:
    return type_ is not None and 11 in _message(type_)


def type_name(type_: bytes) -> str:
    """A cel.expr.Type in cel-go's words (FormatCELType); an untyped value is ``any``, as
    Kubernetes calls attribute values."""
    fields = _message(type_)
    if 1 in fields:
        return "any"
    if 2 in fields:
        return "null_type"
    if 3 in fields:
        return _PRIMITIVES.get(_varint_of(fields[3][0]), "unknown")
    if 5 in fields:
        return _WELL_KNOWN.get(_varint_of(fields[5][0]), "unknown")
    if 6 in fields:
        element = _message(fields[6][0]).get(1)
        return f"list({type_name(element[0]) if element else 'any'})"
    if 7 in fields:
        inner = _message(fields[7][0])
        return (f"map({type_name(inner[1][0]) if 1 in inner else 'any'}, "
                f"{type_name(inner[2][0]) if 2 in inner else 'any'})")
    if 9 in fields:
        return bytes(fields[9][0]).decode()
    if 14 in fields:
        abstract = _message(fields[14][0])
        name = abstract.get(1, [b""])[0].decode()
        params = [type_name(p) for p in abstract.get(2, [])]
        return f"{name}({', '.join(params)})" if params else name
    if 11 in fields:
        return "type"
    return "unknown"


# --- the expression tree -------------------------------------------------------------------

def _expr(data: bytes) -> _Node:
    fields = _message(data)
    node_id = _varint_of(fields[2][0]) if 2 in fields else 0
    if 6 in fields:  # call_expr
        call = _message(fields[6][0])
        return _Node(node_id, "call", call.get(2, [b""])[0].decode(),
                     _expr(call[1][0]) if 1 in call else None,
                     [_expr(arg) for arg in call.get(3, [])])
    if 7 in fields:  # list_expr
        return _Node(node_id, "list", children=[_expr(e) for e in _message(fields[7][0])
                                                .get(1, [])])
    if 8 in fields:  # struct_expr: a map literal has map_key entries
        entries = []
        for entry in _message(fields[8][0]).get(2, []):
            parts = _message(entry)
            if 3 in parts and 4 in parts:
                entries.append((_expr(parts[3][0]), _expr(parts[4][0])))
        return _Node(node_id, "map", entries=entries)
    if 5 in fields:  # select_expr
        select = _message(fields[5][0])
        return _Node(node_id, "select", children=[_expr(select[1][0])] if 1 in select else [])
    if 9 in fields:  # comprehension_expr: range, init, condition, step, result
        parts = _message(fields[9][0])
        return _Node(node_id, "comprehension",
                     children=[_expr(parts[k][0]) for k in (2, 4, 5, 6, 7) if k in parts])
    if 3 in fields:  # const_expr
        constant = _message(fields[3][0])
        value = _varint_of(constant[3][0]) if 3 in constant else None  # int64_value
        if value is not None and value >= 2**63:
            value -= 2**64
        return _Node(node_id, "const", constant=value)
    return _Node(node_id, "other")


def _walk(node: _Node, exempt: bool = False) -> Iterator[tuple[_Node, bool]]:
    """Every node, with whether it is inside a call of ``format``, whose literals are exempt
    from the homogeneous check (cel-go ext/formatting.go stringFormatValidator)."""
    yield node, exempt
    exempt = exempt or (node.kind == "call" and node.function == "format")
    if node.target is not None:
        yield from _walk(node.target, exempt)
    for child in node.children:
        yield from _walk(child, exempt)
    for key, value in node.entries:
        yield from _walk(key, exempt)
        yield from _walk(value, exempt)


# --- protobuf wire format ------------------------------------------------------------------

def _message(data: bytes) -> dict[int, list[Any]]:
    """Field number -> values (ints for varints, bytes for length-delimited fields)."""
    out: dict[int, list[Any]] = {}  # ints (varints) and bytes: what the field number says
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _varint_of(value: int | bytes) -> int:
    return value if isinstance(value, int) else _varint(value, 0)[0]


def _map(entries: list[bytes]) -> Iterator[tuple[int, bytes]]:
    """A protobuf map<int64, message>: each entry a message with key 1 and value 2."""
    for entry in entries:
        fields = _message(entry)
        yield _varint_of(fields.get(1, [0])[0]), fields.get(2, [b""])[0]


def _varint_map(entries: list[bytes]) -> Iterator[tuple[int, int]]:
    """A protobuf map<int64, int32>: each entry a message with key 1 and value 2."""
    for entry in entries:
        fields = _message(entry)
        yield _varint_of(fields.get(1, [0])[0]), _varint_of(fields.get(2, [0])[0])
