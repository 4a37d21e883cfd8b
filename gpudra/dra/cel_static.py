"""Checks of a selector that the CEL engine cannot make, and Kubernetes' wording of its errors.

What cel-go (Kubernetes) refuses and cel-expr-python accepts or words differently: fields of
``device`` the release does not declare, macros and functions of another release, the
messages of undeclared references and overloads in cel-go's words, and, without the engine,
a minimal check on the cel_lint tokens (:func:`fallback_check`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpudra.dra import cel_lint
from gpudra.dra.cel_env import THREE_ARGUMENT_MACROS, TWO_VARIABLE_MACROS, CelEnvironment
from gpudra.dra.cel_errors import CannotEvaluate, CelError
from gpudra.dra.cel_lint import Kind, Token

_FIELD_VARIABLE = re.compile(r"\bdevice_(driver|attributes|capacity|allowMultipleAllocations)\b")


def named_fields(error: CelError) -> CelError:
    """An engine message quotes the source: say `device.driver`, not `device_driver`."""
    def named(text: str) -> str:
        return _FIELD_VARIABLE.sub(r"device.\1", text)

    return CelError(named(error.message), error.line, error.column, named(error.detail))


def static_checks(expression: str, tokens: list[Token], environment: CelEnvironment) -> None:
    """Kubernetes compile errors that our `device` typing hides: `device.<unknown field>` (the
    release's fields), ``semver(s, true)`` before the release has it, and ordering operators on
    a Quantity (capacities are typed Quantity there)."""
    fields = environment.device_fields
    for i, tok in enumerate(tokens):
        if (tok.kind is Kind.IDENT and tok.text == "device" and i + 2 < len(tokens)
                and tokens[i + 1].kind is Kind.OP and tokens[i + 1].text == "."
                and tokens[i + 2].kind is Kind.IDENT and tokens[i + 2].text not in fields
                and not (i > 0 and tokens[i - 1].text in (".", "?."))):
            # cel-go puts a select expression at its `.` (parser VisitSelect: newSelect(op))
            dot, name = tokens[i + 1], tokens[i + 2].text
            raise CelError(f"undefined field '{name}'", dot.line, dot.column,
                           hint=environment.field_note(name))
    if not environment.semver_normalize:
        for call in _calls(tokens, ("semver", "isSemver"), member=False):
            if call.arguments == 2:
                # cel-go puts a call at its `(`; the check passed, so the arguments are typed
                # as declared
                raise CelError(f"found no matching overload for '{call.name}' applied to "
                               "'(string, bool)'", call.open.line, call.open.column,
                               hint=environment.function_note(call.name))
    for bad in cel_lint.bad_comparisons(expression, lambda domain, name: False):
        if bad.operand_type == "quantity":
            raise CelError(f"found no matching overload for '_{bad.operator}_' applied to a "
                           f"kubernetes.Quantity ({bad.operand}); use compareTo(...) or "
                           "isGreaterThan/isLessThan", bad.line, bad.column)


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    open: Token  # the `(`
    arguments: int


def _calls(tokens: list[Token], names: Iterable[str], member: bool) -> list[_Call]:
    """Calls of `names` among `tokens` (``x.name(…)`` if `member`, else ``name(…)``), with
    their number of top-level arguments."""
    wanted = frozenset(names)
    calls = []
    for i in range(len(tokens) - 1):
        after_dot = i > 0 and tokens[i - 1].text in (".", "?.")
        if (tokens[i].kind is Kind.IDENT and tokens[i].text in wanted
                and after_dot == member and tokens[i + 1].text == "("):
            calls.append(_Call(tokens[i].text, tokens[i + 1], _arguments(tokens, i + 1)))
    return calls


def _arguments(tokens: list[Token], open_index: int) -> int:
    depth, count = 0, 0
    for tok in tokens[open_index + 1:]:
        if tok.kind is Kind.CLOSE and depth == 0:
            break
        count = count or 1
        if tok.kind is Kind.OPEN:
            depth += 1
        elif tok.kind is Kind.CLOSE:
            depth -= 1
        elif depth == 0 and tok.text == ",":
            count += 1
    return count


def _macro_calls(tokens: list[Token]) -> list[_Call]:
    """Calls of the macros of newer cel-go versions the engine lacks: two-variable
    comprehensions (three-argument all/exists/existsOne, transformList …) and sortBy."""
    names = THREE_ARGUMENT_MACROS | TWO_VARIABLE_MACROS | {"sortBy"}
    return [c for c in _calls(tokens, names, member=True)
            if c.name not in THREE_ARGUMENT_MACROS or c.arguments == 3]


def refused_macro(tokens: list[Token],
                   environment: CelEnvironment) -> CelError | CannotEvaluate | None:
    """What Kubernetes says about a macro the engine lacks: a plain undeclared function where
    the release does not have it, else a selector gpudra cannot check."""
    for call in _macro_calls(tokens):
        if call.name not in environment.macros:
            return CelError(f"undeclared reference to '{call.name}' (in container '')",
                            call.open.line, call.open.column,
                            hint=environment.function_note(call.name))
        kind = "sortBy" if call.name == "sortBy" else "two-variable comprehension"
        return CannotEvaluate(
            f"{call.open.line}:{call.open.column}: cannot check: {call.name}() with "
            f"{call.arguments} arguments is a {kind} macro of Kubernetes "
            f"{environment.target}, which gpudra's CEL engine does not implement")
    return None


def cannot_check(error: CelError) -> CannotEvaluate | None:
    """``string()`` of an IP or CIDR, which Kubernetes accepts and the engine refuses (not
    declarable beside its own ``string()``)."""
    if re.search(r"no matching overload for 'string' applied to '\(net\.(IP|CIDR)\)'",
                 error.message):
        return CannotEvaluate(f"{error.line}:{error.column}: cannot check: string() of an IP "
                              "or CIDR, which gpudra's CEL engine does not implement")
    return None


_UNDECLARED = re.compile(r"^undeclared reference to '([^']+)'")
_OVERLOAD = re.compile(r"^(found no matching overload for '([^']+)' applied to )'\((.*)\)'$")


def kubernetes_wording(error: CelError, tokens: list[Token], expression: str,
                        environment: CelEnvironment) -> CelError:
    """cel-go's words for what cel-expr-python words differently: a member call's types are
    ``receiver.(arguments)``, and an attribute value (dyn here) is ``any`` in Kubernetes'
    new-selector environment (DeclType AnyType) unless the expression says ``dyn(…)``. An
    undeclared function a later release has gets that as its hint."""
    undeclared = _UNDECLARED.match(error.message)
    if undeclared:
        hint = environment.function_note(undeclared.group(1))
        return CelError(error.message, error.line, error.column, error.detail, hint)
    found = _OVERLOAD.match(error.message)
    if not found:
        return error
    types = split_types(found.group(3))
    if "dyn(" not in expression.replace(" ", ""):
        types = [re.sub(r"\bdyn\b", "any", t) for t in types]
    at = next((i for i, t in enumerate(tokens) if (t.line, t.column) == (error.line, error.column)),
              None)
    member = (at is not None and at >= 2 and tokens[at].text == "("
              and tokens[at - 1].text == found.group(2) and tokens[at - 2].text in (".", "?."))
    applied = f"{types[0]}.({', '.join(types[1:])})" if member and types else \
        f"({', '.join(types)})"
    message = f"{found.group(1)}'{applied}'"
    return CelError(message, error.line, error.column,
                    error.detail.replace(error.message, message, 1), error.hint)


def split_types(text: str) -> list[str]:
    depth, parts, start = 0, [], 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return parts + [last] if last or parts else parts


def position_of(expression: str, offset: int | None) -> tuple[int, int]:
    """1-based line and column of a 0-based offset; 1:1 for a problem of the whole."""
    if offset is None:
        return 1, 1
    line_start = expression.rfind("\n", 0, offset) + 1
    return expression.count("\n", 0, offset) + 1, offset - line_start + 1


def _eof(expression: str) -> tuple[int, int]:
    lines = expression.split("\n")
    return len(lines), len(lines[-1]) + 1


_BINARY_ONLY = frozenset({"==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "*", "/", "%", "?",
                          ":", ".", ",", "?."})


def fallback_check(expression: str, tokens: list[Token], errors: list[str]) -> None:
    """A minimal syntax check for when cel-expr-python is missing. Not a parser."""
    if errors:
        offset = int(re.search(r"offset (\d+)", errors[0]).group(1))  # type: ignore[union-attr]
        tok = next((t for t in tokens if t.offset == offset), tokens[-1])
        raise CelError("Syntax error: unterminated string literal", tok.line, tok.column)
    if not tokens:
        line, column = _eof(expression)
        raise CelError("Syntax error: mismatched input '<EOF>' expecting an expression", line, column)
    stack: list[Token] = []
    pairs = {"(": ")", "[": "]", "{": "}"}
    for i, tok in enumerate(tokens):
        if tok.kind is Kind.OTHER:
            raise CelError(f"Syntax error: token recognition error at: '{tok.text}'",
                           tok.line, tok.column)
        if tok.kind is Kind.OPEN:
            stack.append(tok)
        elif tok.kind is Kind.CLOSE:
            if not stack or pairs[stack[-1].text] != tok.text:
                raise CelError(f"Syntax error: extraneous input '{tok.text}'", tok.line, tok.column)
            stack.pop()
        prev = tokens[i - 1] if i else None
        if prev is not None and _ends_operand(prev) and _starts_operand(tok):
            raise CelError(f"Syntax error: extraneous input '{tok.text}'", tok.line, tok.column)
        if tok.kind is Kind.OP and tok.text in _BINARY_ONLY and (
                prev is None or prev.kind in (Kind.OP, Kind.OPEN)):
            raise CelError(f"Syntax error: mismatched input '{tok.text}'", tok.line, tok.column)
    line, column = _eof(expression)
    if stack:
        raise CelError(f"Syntax error: missing '{pairs[stack[-1].text]}' at '<EOF>'", line, column)
    if tokens[-1].kind is Kind.OP or (tokens[-1].kind is Kind.IDENT and tokens[-1].text == "in"):
        raise CelError("Syntax error: mismatched input '<EOF>' expecting an expression", line, column)
    for bad in cel_lint.bad_comparisons(expression, lambda domain, name: False):
        if bad.operand_type == "version" and bad.operand.lstrip("(").startswith("semver"):
            raise CelError(f"found no matching overload for '_{bad.operator}_' applied to a "
                           f"kubernetes.Semver ({bad.operand})", bad.line, bad.column)


def _ends_operand(tok: Token) -> bool:
    if tok.kind is Kind.IDENT:
        return tok.text != "in"
    return tok.kind in (Kind.STRING, Kind.NUMBER, Kind.CLOSE)


def _starts_operand(tok: Token) -> bool:
    if tok.kind is Kind.IDENT:
        return tok.text != "in"
    return tok.kind in (Kind.STRING, Kind.NUMBER)
