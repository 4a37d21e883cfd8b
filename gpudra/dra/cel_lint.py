"""A small CEL reader for DRA selectors: device references and comparisons CEL rejects.

This is not a CEL parser. It tokenizes the expression (strings, raw/bytes/triple-quoted
literals and `//` comments are skipped as units, so their text cannot look like code) and then
reads *postfix chains* such as ``device.capacity["gpu.nvidia.com"].memory.compareTo(x)``. That
is enough for the two things gpudra checks:

* which `device.attributes[DOMAIN].NAME` / `device.capacity[DOMAIN].NAME` names a selector reads
  (the index form ``[DOMAIN]["NAME"]`` too), with 1-based line and column;
* relational operators (``<  <=  >  >=``) applied directly to a Quantity or a semver Version,
  which CEL rejects at compile time ("no matching overload for '_>=_'"). A chain that ends in a
  method call (``.compareTo(y)``, ``.major()``, ``.asInteger()``) yields a plain number, so
  ``x.compareTo(y) >= 0`` and ``v.major() >= 550`` are fine.

Anything the reader does not understand is left alone: a false alarm costs more than a miss.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpudra.dra.attributes import is_version_attribute


class Kind(enum.Enum):
    IDENT = "ident"
    STRING = "string"
    NUMBER = "number"
    OP = "op"
    OPEN = "open"
    CLOSE = "close"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # the source text
    offset: int  # 0-based offset into the expression
    line: int  # 1-based
    column: int  # 1-based
    value: str | None = None  # decoded contents of a string literal


@dataclass(frozen=True, slots=True)
class Reference:
    """``device.attributes[domain].name`` (kind "attribute") or ``device.capacity[...]``."""

    kind: str
    domain: str
    name: str
    line: int
    column: int  # of the `device` token
    text: str  # the reference as written
    guarded: bool = False  # the whole argument of has(...): a presence test, never a failure

    @property
    def is_capacity(self) -> bool:
        return self.kind == "capacity"


@dataclass(frozen=True, slots=True)
class BadComparison:
    """A relational operator with a Quantity or Version operand."""

    operator: str
    operand_type: str  # "quantity" | "version"
    operand: str  # the offending operand's source text
    line: int
    column: int  # of the operator
    # Offsets of both operands, (left start, left end, right start, right end), when both are
    # postfix chains (what a `compareTo` rewrite needs); None otherwise.
    operands: tuple[int, int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Analysis:
    references: tuple[Reference, ...] = ()
    comparisons: tuple[BadComparison, ...] = ()
    errors: tuple[str, ...] = field(default=())  # tokenizer trouble (unterminated string, …)


VersionCheck = Callable[[str, str], bool]

_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "?.", "<", ">", "+", "-", "*", "/", "%", "!",
              "?", ":", ".", ",")
_RELATIONAL = frozenset({"<", "<=", ">", ">="})
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}
_STRING_PREFIXES = frozenset({"r", "b", "rb", "br"})
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "`": "`",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}
# Quantity methods that return a Quantity; every other method returns a plain value.
_QUANTITY_PRESERVING = frozenset({"add", "sub"})


# --- tokenizer ---------------------------------------------------------------------------

def tokenize(expr: str) -> tuple[list[Token], list[str]]:
    """Tokens of `expr` (comments and whitespace dropped) and any tokenizer errors."""
    tokens: list[Token] = []
    errors: list[str] = []
    line_starts = _line_starts(expr)
    pos = 0
    while pos < len(expr):
        ch = expr[pos]
        if ch in " \t\r\n\f":
            pos += 1
        elif expr.startswith("//", pos):
            end = expr.find("\n", pos)
            pos = len(expr) if end < 0 else end
        elif _string_start(expr, pos) is not None:
            end, value, error = _read_string(expr, pos)
            if error:
                errors.append(error)
            tokens.append(_token(Kind.STRING, expr, pos, end, line_starts, value))
            pos = end
        elif ch.isalpha() or ch == "_":
            end = pos
            while end < len(expr) and (expr[end].isalnum() or expr[end] == "_"):
                end += 1
            tokens.append(_token(Kind.IDENT, expr, pos, end, line_starts))
            pos = end
        elif ch == "`":  # quoted identifier (CEL 0.24+): `a-b`
            end = expr.find("`", pos + 1)
            end = len(expr) if end < 0 else end + 1
            tokens.append(_token(Kind.IDENT, expr, pos, end, line_starts, expr[pos + 1:end - 1]))
            pos = end
        elif ch.isdigit() or (ch == "." and expr[pos + 1:pos + 2].isdigit()
                              and not _ends_operand(tokens)):
            end = _read_number(expr, pos)
            tokens.append(_token(Kind.NUMBER, expr, pos, end, line_starts))
            pos = end
        elif ch in _PAIRS or ch in _CLOSERS:
            kind = Kind.OPEN if ch in _PAIRS else Kind.CLOSE
            tokens.append(_token(kind, expr, pos, pos + 1, line_starts))
            pos += 1
        else:
            op = next((o for o in _OPERATORS if expr.startswith(o, pos)), None)
            end = pos + (len(op) if op else 1)
            tokens.append(_token(Kind.OP if op else Kind.OTHER, expr, pos, end, line_starts))
            pos = end
    return tokens, errors


def _line_starts(expr: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(expr) if ch == "\n")
    return starts


def _token(kind: Kind, expr: str, start: int, end: int, line_starts: list[int],
           value: str | None = None) -> Token:
    line = _bisect(line_starts, start)
    return Token(kind, expr[start:end], start, line + 1, start - line_starts[line] + 1, value)


def _bisect(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _string_start(expr: str, pos: int) -> int | None:
    """Offset of the opening quote when a string literal starts at `pos` (after r/b prefixes)."""
    for length in (0, 1, 2):
        prefix = expr[pos:pos + length]
        if length and prefix.lower() not in _STRING_PREFIXES:
            continue
        if expr[pos + length:pos + length + 1] in ("'", '"'):
            # An identifier such as `br` followed by a quote is a prefix only at a word start.
            if length and pos > 0 and (expr[pos - 1].isalnum() or expr[pos - 1] == "_"):
                return None
            return pos + length
    return None


def _read_string(expr: str, pos: int) -> tuple[int, str, str | None]:
    quote_at = _string_start(expr, pos)
    assert quote_at is not None
    raw = "r" in expr[pos:quote_at].lower()
    quote = expr[quote_at] * 3 if expr.startswith(expr[quote_at] * 3, quote_at) else expr[quote_at]
    i = quote_at + len(quote)
    out: list[str] = []
    while i < len(expr):
        if expr.startswith(quote, i):
            return i + len(quote), "".join(out), None
        ch = expr[i]
        if ch == "\n" and len(quote) == 1:
            break
        if ch == "\\" and not raw and i + 1 < len(expr):
            out.append(_ESCAPES.get(expr[i + 1], expr[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    return i, "".join(out), f"unterminated string starting at offset {pos}"


def _read_number(expr: str, pos: int) -> int:
    end = pos
    if expr.startswith(("0x", "0X"), pos):
        end += 2
        while end < len(expr) and expr[end] in "0123456789abcdefABCDEF":
            end += 1
    else:
        while end < len(expr) and expr[end].isdigit():
            end += 1
        if end < len(expr) - 1 and expr[end] == "." and expr[end + 1].isdigit():
            end += 1
            while end < len(expr) and expr[end].isdigit():
                end += 1
        if end < len(expr) and expr[end] in "eE":
            sign = 1 if expr[end + 1:end + 2] in ("+", "-") else 0
            if expr[end + 1 + sign:end + 2 + sign].isdigit():
                end += 1 + sign
                while end < len(expr) and expr[end].isdigit():
                    end += 1
    if end < len(expr) and expr[end] in "uU":
        end += 1
    return end


def _ends_operand(tokens: Sequence[Token]) -> bool:
    return _ends_operand_at(tokens, len(tokens) - 1)


def _ends_operand_at(tokens: Sequence[Token], i: int) -> bool:
    """Whether token i can end an operand (so a following `[` indexes it)."""
    return 0 <= i < len(tokens) and tokens[i].kind in (Kind.IDENT, Kind.STRING, Kind.NUMBER,
                                                         Kind.CLOSE)


# --- analysis ----------------------------------------------------------------------------

def analyse(expr: str, version_attribute: VersionCheck = is_version_attribute) -> Analysis:
    """References and bad comparisons in one selector expression."""
    tokens, errors = tokenize(expr)
    matches = _match_brackets(tokens)
    refs = tuple(ref for ref in (_reference_at(tokens, i, expr) for i in range(len(tokens)))
                 if ref is not None)
    comparisons = tuple(_bad_comparisons(tokens, matches, expr, version_attribute))
    return Analysis(refs, comparisons, tuple(errors))


def references(expr: str) -> list[Reference]:
    return list(analyse(expr).references)


def bad_comparisons(expr: str,
                    version_attribute: VersionCheck = is_version_attribute) -> list[BadComparison]:
    return list(analyse(expr, version_attribute).comparisons)


def _match_brackets(tokens: Sequence[Token]) -> dict[int, int]:
    """Index of each bracket's partner (both directions); unbalanced brackets have none."""
    out: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind is Kind.OPEN:
            stack.append(i)
        elif tok.kind is Kind.CLOSE:
            if stack and _PAIRS[tokens[stack[-1]].text] == tok.text:
                j = stack.pop()
                out[i], out[j] = j, i
            else:
                stack.clear()  # confused: give up pairing what came before
    return out


@dataclass(frozen=True, slots=True)
class _Root:
    """A recognised start of a postfix chain and the token index just after it."""

    end: int
    type: str | None  # "quantity" | "version" | None (unknown / other)
    ref: Reference | None = None


def _reference_at(tokens: Sequence[Token], i: int, expr: str) -> Reference | None:
    """``device . (attributes|capacity) [ STR ] ( . IDENT | [ STR ] )`` starting at token i."""
    root = _device_member(tokens, i, expr)
    return root.ref if root is not None else None


def _device_member(tokens: Sequence[Token], i: int, expr: str) -> _Root | None:
    t = tokens
    if not (_is(t, i, Kind.IDENT, "device") and _is(t, i + 1, Kind.OP, ".")
            and _is(t, i + 2, Kind.IDENT) and t[i + 2].text in ("attributes", "capacity")
            and _is(t, i + 3, Kind.OPEN, "[") and _is(t, i + 4, Kind.STRING)
            and _is(t, i + 5, Kind.CLOSE, "]")):
        return None
    if i > 0 and _is(t, i - 1, Kind.OP, "."):
        return None  # `x.device.attributes`: some other field called device
    kind = "attribute" if t[i + 2].text == "attributes" else "capacity"
    domain = t[i + 4].value or ""
    if _is(t, i + 6, Kind.OP, ".") and _is(t, i + 7, Kind.IDENT):
        name_tok, end = t[i + 7], i + 8
        name = name_tok.value if name_tok.value is not None else name_tok.text
    elif (_is(t, i + 6, Kind.OPEN, "[") and _is(t, i + 7, Kind.STRING)
          and _is(t, i + 8, Kind.CLOSE, "]")):
        name, end = t[i + 7].value or "", i + 9
    else:
        return None
    text = expr[t[i].offset:t[end - 1].offset + len(t[end - 1].text)]
    guarded = (_is(t, i - 1, Kind.OPEN, "(") and _is(t, i - 2, Kind.IDENT, "has")
               and _is(t, end, Kind.CLOSE, ")"))
    ref = Reference(kind, domain, name, t[i].line, t[i].column, text, guarded)
    return _Root(end, None, ref)


def _is(tokens: Sequence[Token], i: int, kind: Kind, text: str | None = None) -> bool:
    return 0 <= i < len(tokens) and tokens[i].kind is kind and (text is None or tokens[i].text == text)


def _bad_comparisons(tokens: Sequence[Token], matches: dict[int, int], expr: str,
                     version_attribute: VersionCheck) -> list[BadComparison]:
    out: list[BadComparison] = []
    for i, tok in enumerate(tokens):
        if tok.kind is not Kind.OP or tok.text not in _RELATIONAL:
            continue
        left = _chain_start(tokens, matches, i - 1)
        right = _chain_end(tokens, matches, i + 1)
        for lo, hi in ((left, i), (i + 1, right)):
            if lo is None or hi is None or lo >= hi:
                continue
            kind = _chain_type(tokens, matches, lo, hi, expr, version_attribute)
            if kind is not None:
                text = expr[tokens[lo].offset:_end(tokens[hi - 1])]
                operands = None
                if left is not None and right is not None and left < i < right:
                    operands = (tokens[left].offset, _end(tokens[i - 1]),
                                tokens[i + 1].offset, _end(tokens[right - 1]))
                out.append(BadComparison(tok.text, kind, text, tok.line, tok.column, operands))
                break  # one finding per operator is enough
    return out


def _end(tok: Token) -> int:
    return tok.offset + len(tok.text)


def _chain_start(tokens: Sequence[Token], matches: dict[int, int], pos: int) -> int | None:
    """First token of the postfix chain that ends at token `pos` (walking backwards)."""
    while pos >= 0:
        tok = tokens[pos]
        if tok.kind is Kind.CLOSE:
            opener = matches.get(pos)
            if opener is None:
                return None
            if tokens[opener].text == "[" and _ends_operand_at(tokens, opener - 1):
                pos = opener - 1  # an index: the indexed value comes before it
                continue
            if tokens[opener].text == "(" and _is(tokens, opener - 1, Kind.IDENT):
                pos = opener - 1  # a call: its name (and receiver) come before it
                continue
            return opener  # a group, list or map literal starts the chain
        if tok.kind in (Kind.IDENT, Kind.STRING, Kind.NUMBER):
            if _is(tokens, pos - 1, Kind.OP, ".") or _is(tokens, pos - 1, Kind.OP, "?."):
                pos -= 2
                continue
            return pos
        return None
    return None


def _chain_end(tokens: Sequence[Token], matches: dict[int, int], pos: int) -> int | None:
    """Index just past the postfix chain that starts at token `pos`."""
    if pos >= len(tokens):
        return None
    tok = tokens[pos]
    if tok.kind is Kind.OPEN:
        end = matches.get(pos)
        if end is None:
            return None
        pos = end + 1
    elif tok.kind in (Kind.IDENT, Kind.STRING, Kind.NUMBER):
        pos += 1
    else:
        return None
    while pos < len(tokens):
        tok = tokens[pos]
        if tok.kind is Kind.OPEN and tok.text in "([":
            end = matches.get(pos)
            if end is None:
                return None
            pos = end + 1
        elif tok.kind is Kind.OP and tok.text in (".", "?.") and _is(tokens, pos + 1, Kind.IDENT):
            pos += 2
        else:
            break
    return pos


def _chain_type(tokens: Sequence[Token], matches: dict[int, int], lo: int, hi: int, expr: str,
                version_attribute: VersionCheck) -> str | None:
    """"quantity", "version" or None for the chain tokens[lo:hi]."""
    root = _root(tokens, matches, lo, hi, expr, version_attribute)
    if root is None:
        return None
    kind, pos = root.type, root.end
    while pos < hi and kind is not None:
        if _is(tokens, pos, Kind.OP, ".") and _is(tokens, pos + 1, Kind.IDENT):
            name = tokens[pos + 1].text
            call = _is(tokens, pos + 2, Kind.OPEN, "(")
            if call:
                kind = kind if (kind == "quantity" and name in _QUANTITY_PRESERVING) else None
                pos = matches.get(pos + 2, hi) + 1
            else:
                return None  # a field of a Quantity/Version: not something we know
        else:
            return None  # indexing, or a shape we do not read
    return kind if pos == hi else None


def _root(tokens: Sequence[Token], matches: dict[int, int], lo: int, hi: int, expr: str,
          version_attribute: VersionCheck) -> _Root | None:
    member = _device_member(tokens, lo, expr)
    if member is not None and member.ref is not None:
        ref = member.ref
        if ref.is_capacity:
            return _Root(member.end, "quantity", ref)
        if version_attribute(ref.domain, ref.name):
            return _Root(member.end, "version", ref)
        return _Root(member.end, None, ref)
    tok = tokens[lo]
    if (tok.kind is Kind.IDENT and tok.text in ("quantity", "semver")
            and _is(tokens, lo + 1, Kind.OPEN, "(") and not _is(tokens, lo - 1, Kind.OP, ".")):
        close = matches.get(lo + 1)
        if close is None:
            return None
        return _Root(close + 1, "quantity" if tok.text == "quantity" else "version")
    if tok.kind is Kind.OPEN and tok.text == "(":
        close = matches.get(lo)
        if close is None or close >= hi:
            return None
        inner = _chain_type(tokens, matches, lo + 1, close, expr, version_attribute)
        return _Root(close + 1, inner)
    return None
