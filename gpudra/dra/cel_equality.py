"""Where Kubernetes' run-time equality differs from the engine's, for device attributes.

The engine (cel-expr-python) compares values of different types as unequal. Kubernetes (cel-go)
asks the left operand, and its ``Semver`` and ``Quantity`` types answer ``no such overload``
for anything but their own type (k8s.io/apiserver pkg/cel/semver.go, quantity.go ``Equal``).
Attributes are untyped at compile time, so these selectors compile and then fail on every
device, as the oracle shows (tests/oracle/test_selectors_oracle.py):

* ``device.attributes["gpu.nvidia.com"].driverVersion == "570.124.6"``: a version attribute
  compared with a string (or a number) is a run-time ``no such overload``, not false;
  ``"570.124.6" == <version>`` and ``!=`` are plain false/true, as in the engine;
* ``<version attribute> in ["570.124.6", …]``: cel-go turns ``in`` on a list of constants
  into a hash lookup, which fails for a Semver (``hash of unhashable type cel.Semver``), and
  ``x in []`` into false, without evaluating ``x`` (interpreter/decorators.go
  maybeOptimizeSetMembership).

:func:`kubernetes_equality` rewrites such comparisons, in the run-time environment only (the
check environment keeps the source as written), into calls of :data:`EQUALS` and
:data:`IN_CONSTANTS`, which :mod:`gpudra.dra.cel` implements. Only a comparison with a bare
attribute reference on one side is rewritten; anything else keeps the engine's semantics (for
example ``[<version>] == ["x"]``, true in Kubernetes, false here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpudra.dra.cel_lint import Kind, Token

EQUALS = "_gpudra_equals"
IN_CONSTANTS = "_gpudra_in_constants"
HASH_ERROR = "internal error: runtime error: hash of unhashable type cel.Semver"

# Tokens that end an operand of `==` / `in` (both bind looser than arithmetic and unary).
_LOOSER = frozenset({"&&", "||", "?", ":", ","})
_RELATIONS = frozenset({"==", "!=", "<", "<=", ">", ">="})
_CONSTANT_IDENTS = frozenset({"true", "false", "null"})


@dataclass(frozen=True, slots=True)
class _Edit:
    offset: int
    remove: int  # characters replaced at `offset`
    text: str
    order: int  # among edits at one offset: lower first


def kubernetes_equality(source: str, tokens: Sequence[Token]) -> str:
    """`source` (the expression as compiled; `tokens` are its tokens, at the same offsets) with
    ``==`` and ``in`` rewritten where an operand is a bare device attribute reference."""
    edits: list[_Edit] = []
    constant_false: list[tuple[int, int]] = []
    for i, tok in enumerate(tokens):
        is_in = tok.kind is Kind.IDENT and tok.text == "in"
        if not (is_in or (tok.kind is Kind.OP and tok.text == "==")):
            continue
        left, right = _operand_start(tokens, i), _operand_end(tokens, i)
        if left is None or right is None:
            continue
        start, end = tokens[left].offset, _end(tokens[right - 1])
        if is_in and [t.text for t in tokens[i + 1:right]] == ["[", "]"]:
            edits.append(_Edit(start, end - start, "false", 0))  # not even evaluated
            constant_false.append((start, end))
            continue
        left_attribute = _is_attribute(tokens[left:i])
        if is_in:
            if not (left_attribute and _constant_list(tokens[i + 1:right])):
                continue
            function = IN_CONSTANTS
        elif left_attribute or _is_attribute(tokens[i + 1:right]):
            function = EQUALS
        else:
            continue
        size = end - start  # enclosing calls open before and close after the ones inside
        edits.append(_Edit(start, 0, f"{function}(", -size))
        edits.append(_Edit(tok.offset, len(tok.text), ",", 0))
        edits.append(_Edit(end, 0, ")", size))
    # what a `false` replaces is not compiled: no edits inside it
    edits = [e for e in edits if not any(lo < e.offset < hi for lo, hi in constant_false)]
    out = source
    for edit in sorted(edits, key=lambda e: (e.offset, e.order), reverse=True):
        out = out[:edit.offset] + edit.text + out[edit.offset + edit.remove:]
    return out


def _end(tok: Token) -> int:
    return tok.offset + len(tok.text)


def _operand_start(tokens: Sequence[Token], op: int) -> int | None:
    """First token of the left operand of the relation at `op`; None when that operand is
    itself a relation (``a == b == c``) or unbalanced."""
    depth = 0
    for j in range(op - 1, -1, -1):
        tok = tokens[j]
        if tok.kind is Kind.CLOSE:
            depth += 1
        elif tok.kind is Kind.OPEN:
            if depth == 0:
                return j + 1
            depth -= 1
        elif depth == 0 and _is_relation(tok):
            return None
        elif depth == 0 and tok.text in _LOOSER:
            return j + 1
    return 0 if depth == 0 else None


def _operand_end(tokens: Sequence[Token], op: int) -> int | None:
    """Index just past the right operand of the relation at `op`; None as above."""
    depth = 0
    for j in range(op + 1, len(tokens)):
        tok = tokens[j]
        if tok.kind is Kind.OPEN:
            depth += 1
        elif tok.kind is Kind.CLOSE:
            if depth == 0:
                return j if j > op + 1 else None
            depth -= 1
        elif depth == 0 and _is_relation(tok):
            return None
        elif depth == 0 and tok.text in _LOOSER:
            return j if j > op + 1 else None
    return len(tokens) if depth == 0 and len(tokens) > op + 1 else None


def _is_relation(tok: Token) -> bool:
    return (tok.kind is Kind.OP and tok.text in _RELATIONS) or (
        tok.kind is Kind.IDENT and tok.text == "in")


def _is_attribute(span: Sequence[Token]) -> bool:
    """``device.attributes[D].name`` or ``device.attributes[D]["name"]``."""
    shape = [t.text if t.kind in (Kind.OP, Kind.OPEN, Kind.CLOSE) else t.kind for t in span]
    head = [Kind.IDENT, ".", Kind.IDENT, "[", Kind.STRING, "]"]
    return (shape[:6] == head and span[0].text == "device" and span[2].text == "attributes"
            and shape[6:] in ([".", Kind.IDENT], ["[", Kind.STRING, "]"]))


def _constant_list(span: Sequence[Token]) -> bool:
    """A list literal of constants (cel-go folds it and looks its elements up in a hash set;
    an empty one is not looked up)."""
    if len(span) < 3 or span[0].text != "[" or span[-1].text != "]":
        return False
    expect_value = True
    for tok in span[1:-1]:
        if expect_value:
            if tok.kind is Kind.OP and tok.text == "-":
                continue
            if not (tok.kind in (Kind.STRING, Kind.NUMBER)
                    or (tok.kind is Kind.IDENT and tok.text in _CONSTANT_IDENTS)):
                return False
            if tok.kind is Kind.STRING and "b" in tok.text.lower().split(tok.text[-1])[0]:
                return False  # bytes are not hashed (cel-go interpreter/decorators.go)
            expect_value = False
        elif tok.text == ",":
            expect_value = True
        else:
            return False
    return True
