"""The text of CEL selectors as plan reads it, without evaluating them: which device fields
an expression reads (so results can be memoised on them), its top-level ``&&`` terms, and
the comparisons `gpudra plan` explains term by term."""

from __future__ import annotations

import re
from fractions import Fraction

from gpudra.dra import cel_lint
from gpudra.dra.cel_lint import Kind, Token


def projection(expression: str) -> tuple[tuple[tuple[str, str, str], ...] | None, bool, bool]:
    """The literal references of `expression` when they are its only uses of ``device``."""
    tokens, errors = cel_lint.tokenize(expression)
    if errors:
        return None, False, False
    refs = {(r.line, r.column): r for r in cel_lint.references(expression)}
    references: list[tuple[str, str, str]] = []
    driver = multiple = False
    for i, tok in enumerate(tokens):
        if tok.kind is not Kind.IDENT or tok.text != "device":
            continue
        if i > 0 and tokens[i - 1].kind is Kind.OP and tokens[i - 1].text in (".", "?."):
            continue  # some other object's field called device
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        field_tok = tokens[i + 2] if i + 2 < len(tokens) else None
        if (nxt is not None and nxt.text == "." and field_tok is not None
                and field_tok.text in ("driver", "allowMultipleAllocations")
                and not _is_call(tokens, i + 3)):
            driver |= field_tok.text == "driver"
            multiple |= field_tok.text == "allowMultipleAllocations"
            continue
        ref = refs.get((tok.line, tok.column))
        if ref is None or _is_call(tokens, _token_at(tokens, tok.offset + len(ref.text))):
            return None, False, False
        references.append(("capacity" if ref.is_capacity else "attribute", ref.domain, ref.name))
    return tuple(dict.fromkeys(references)), driver, multiple


def _token_at(tokens: list[Token], offset: int) -> int:
    """Index of the first token at or after `offset`; len(tokens) at the end."""
    for i, tok in enumerate(tokens):
        if tok.offset >= offset:
            return i
    return len(tokens)


def _is_call(tokens: list[Token], i: int) -> bool:
    return i < len(tokens) and tokens[i].kind is Kind.OPEN and tokens[i].text == "("


def split_conjunction(expression: str) -> list[str]:
    """Top-level ``&&`` terms of `expression` (outer parentheses removed); the expression
    itself when a top-level ``||`` or ``?:`` makes splitting wrong."""
    tokens, errors = cel_lint.tokenize(expression)
    if errors or not tokens:
        return [expression.strip()]
    while (tokens[0].text == "(" and tokens[-1].text == ")"
           and _closing(tokens, 0) == len(tokens) - 1):
        start, end = tokens[1].offset, tokens[-1].offset
        expression = expression[start:end]
        tokens, _ = cel_lint.tokenize(expression)
        if not tokens:
            return [expression.strip()]
    depth = 0
    cuts: list[tuple[int, int]] = []
    for tok in tokens:
        if tok.kind is Kind.OPEN:
            depth += 1
        elif tok.kind is Kind.CLOSE:
            depth -= 1
        elif depth == 0 and tok.kind is Kind.OP:
            if tok.text in ("||", "?"):
                return [expression.strip()]
            if tok.text == "&&":
                cuts.append((tok.offset, tok.offset + 2))
    if not cuts:
        return [expression.strip()]
    terms, start = [], 0
    for begin, end in cuts:
        terms.append(expression[start:begin].strip())
        start = end
    terms.append(expression[start:].strip())
    return [t for t in terms if t]


def _closing(tokens: list[Token], opener: int) -> int | None:
    depth = 0
    for i in range(opener, len(tokens)):
        if tokens[i].kind is Kind.OPEN:
            depth += 1
        elif tokens[i].kind is Kind.CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return None


_OPERAND = r"""(?P<fn>quantity|semver)\((?P<q>["'])(?P<arg>[^"']*)(?P=q)(?:\s*,\s*\w+)?\)"""
_REF = (r"""device\.(?P<kind>attributes|capacity)\[(?P<dq>["'])(?P<domain>[^"']+)(?P=dq)\]"""
        r"""(?:\.(?P<name>\w+)|\[(?P<nq>["'])(?P<name2>[^"']+)(?P=nq)\])""")
_COMPARE = re.compile(rf"^{_REF}\.compareTo\({_OPERAND}\)\s*(?P<op>>=|<=|==|!=|>|<)\s*0$")
_METHOD = re.compile(rf"^{_REF}\.(?P<method>isGreaterThan|isLessThan)\({_OPERAND}\)$")
# The string methods convert puts between an attribute and `==` (GFD's label spelling of
# productName and architecture): `.lowerAscii()`, `.replace(" ", "-")`.
_CHAIN_STEP = re.compile(r"""\.(?:(?P<case>lowerAscii|upperAscii)\(\)"""
                         r"""|replace\(\s*(?P<oq>["'])(?P<old>[^"']*)(?P=oq)\s*,"""
                         r"""\s*(?P<nq>["'])(?P<new>[^"']*)(?P=nq)\s*\))""")
_CHAIN = r"""(?P<chain>(?:\.(?:lowerAscii|upperAscii)\(\)|\.replace\(\s*"[^"]*"\s*,\s*"[^"]*"\s*\)"""\
    r"""|\.replace\(\s*'[^']*'\s*,\s*'[^']*'\s*\))*)"""
_EQUALS = re.compile(
    rf"""^{_REF}{_CHAIN}\s*(?P<op>==)\s*(?P<sq>["'])(?P<arg>[^"']*)(?P=sq)$""")
_MEMBER = re.compile(rf"""^{_REF}{_CHAIN}\s+(?P<op>in)\s+\[(?P<arg>[^\]]*)\]$""")


def string_chain(term: str) -> str:
    """The string methods an equality term applies to its attribute before comparing
    (`.replace(" ", "-")`); empty for any other term."""
    match = _EQUALS.match(term.strip()) or _MEMBER.match(term.strip())
    return match.group("chain") if match else ""


def apply_chain(chain: str, value: str) -> str:
    """`value` as CEL turns it with `chain` (see :func:`string_chain`); the same transforms
    only, ASCII case as lowerAscii/upperAscii change it."""
    for step in _CHAIN_STEP.finditer(chain):
        case = step.group("case")
        if case == "lowerAscii":
            value = "".join(c.lower() if c.isascii() else c for c in value)
        elif case == "upperAscii":
            value = "".join(c.upper() if c.isascii() else c for c in value)
        else:
            value = value.replace(step.group("old"), step.group("new"))
    return value


def parse_comparison(term: str) -> tuple[str, str, str, str, str] | None:
    """(kind, domain, name, operator, operand) for ``x.compareTo(quantity("90Gi")) >= 0``,
    ``x.isGreaterThan(semver("1.0.0"))``, ``x == "value"`` or ``x in ["a", "b"]`` (the last two
    also with the string methods of :func:`string_chain`); None for anything else."""
    term = term.strip()
    for pattern in (_COMPARE, _METHOD, _EQUALS, _MEMBER):
        match = pattern.match(term)
        if match:
            op = match.groupdict().get("op") or (
                ">" if match.group("method") == "isGreaterThan" else "<")
            kind = "capacity" if match.group("kind") == "capacity" else "attribute"
            name = match.group("name") or match.group("name2")
            return kind, match.group("domain"), name, op, match.group("arg")
    return None


def term_label(term: str) -> str:
    """``memory >= 90Gi`` for a capacity/version comparison; the term itself otherwise."""
    parsed = parse_comparison(term)
    if parsed is None:
        return term
    kind, _, name, op, operand = parsed
    if op == "==" and kind == "attribute" and ".compareTo(" not in term:
        return f'{name}{string_chain(term)} {op} "{operand}"'
    if op == "in":
        return f"{name}{string_chain(term)} in [{operand}]"
    return f"{name} {op} {operand}"


def format_quantity(value: Fraction) -> str:
    """80Gi, 512Mi, 7, 0.5: the shortest exact binary-suffixed form of a quantity."""
    if value.denominator != 1:
        return str(float(value))
    number = value.numerator
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if number and number % size == 0:
            return f"{number // size}{suffix}"
    return str(number)
