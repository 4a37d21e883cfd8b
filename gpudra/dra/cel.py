"""CEL for DRA device selectors: compile (validate) and evaluate against a device dict.

The engine is cel-expr-python (the CEL C++ implementation; docs/library-notes §1). It has no
opaque types that Python can produce, so Kubernetes' ``Quantity`` and ``Semver`` are handled in
two environments built from the same function list:

* a **check** environment declares them as abstract types ``kubernetes.Quantity`` /
  ``kubernetes.Semver``. Every expression is type-checked there, so CEL rejects what Kubernetes
  rejects, with the same wording: ``quantity("1Gi") >= quantity("1Mi")`` →
  ``found no matching overload for '_>=_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'``;
* a **runtime** environment declares them as ``map(string, dyn)`` and represents a value as a
  tagged map (``{"__quantity__": "<num>/<den>"}``, ``{"__semver__": "1.2.3[-pre]"}``). Member
  functions are one overload each, dispatched in Python on the tag. Quantities are exact
  :class:`fractions.Fraction` values (``gpudra.quantity.parse_quantity``); versions compare as
  semver 2.0 (major.minor.patch numerically, then pre-release), as blang/semver does in
  Kubernetes.

Kubernetes declares the device as an object type (``kubernetes.DRADevice``: ``driver`` a string,
``attributes`` maps of unknown-typed values, ``capacity`` maps of ``Quantity``,
``allowMultipleAllocations`` a bool). cel-expr-python cannot declare such a type, so both
environments declare ``device`` as ``map(string, dyn)`` plus one typed variable per field, and
expressions are compiled with ``device.driver`` rewritten to ``device_driver`` (same length, so
positions hold; comprehensions over ``device.attributes[d]`` work). ``capacity >= 16`` and a
selector that is a capacity, not a bool, are then refused as Kubernetes refuses them, and
result types are named in cel-go's words (``map(string, kubernetes.Quantity)``). An undefined
field of ``device`` (``device.nosuch``) is found from the token stream of
``gpudra.dra.cel_lint``.

Environment: variable ``device``; ``quantity``, ``isQuantity``, ``semver`` (with the optional
``normalize`` bool), ``isSemver``, ``sign(q)``; members ``compareTo``, ``isGreaterThan``,
``isLessThan``, ``major``, ``minor``, ``patch``, ``asInteger``, ``asApproximateFloat``,
``isInteger``, ``add``, ``sub``; optional values (``.?name``, ``orValue``, ``optional.of``); the
strings extension (``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
``trim``, ``indexOf``, ``join``, …) and ``cel.bind``. Standard ``startsWith``, ``endsWith``,
``contains``, ``matches`` are built in. Not declared: the Kubernetes lists, regex (``find``),
URL, IP/CIDR and sets libraries (tests/oracle/test_selectors_oracle.py lists the known
differences from Kubernetes).

**Without cel-expr-python** (it has wheels only for Python >= 3.11; gpudra supports 3.10),
:func:`compile_selector` falls back to a minimal hand-written check on the cel_lint tokenizer:
unterminated strings, unknown characters, unbalanced brackets, a dangling operator, two operands
in a row, relational operators on quantities, and undefined ``device`` fields. It accepts much
that CEL rejects (unknown functions, type errors). Evaluation raises :class:`UnsupportedError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gpudra.dra import cel_lint
from gpudra.dra.cel_lint import Kind, Token
from gpudra.errors import GpudraError, UsageError
from gpudra.quantity import parse_quantity

try:  # pragma: no cover - exercised by the environment, not by a test switch
    from cel_expr_python import cel as _cel
    from cel_expr_python.ext import ext_bindings as _ext_bindings
    from cel_expr_python.ext import ext_optional as _ext_optional
    from cel_expr_python.ext import ext_strings as _ext_strings
except ImportError:  # Python 3.10, or a platform without a wheel
    _cel = None
    _ext_bindings = None
    _ext_optional = None
    _ext_strings = None

MAX_EXPRESSION_LENGTH = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})

_QUANTITY_TAG = "__quantity__"
_SEMVER_TAG = "__semver__"
_INT64 = (-(2**63), 2**63 - 1)
_LOCATION = re.compile(r"<input>:(\d+):(\d+): ([^\n]*)")
_QUANTITY_MESSAGE = ("quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


# --- errors ------------------------------------------------------------------------------

class CelError(UsageError):
    """A selector that does not compile. `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int, detail: str | None = None) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.detail = detail or message  # every error the engine reported, with carets


class CelEvaluationError(GpudraError):
    """A selector that compiled but failed on a device (e.g. ``no such key``): neither true nor
    false. Kubernetes aborts the allocation attempt on such an error."""


class UnsupportedError(GpudraError):
    """Evaluation needs cel-expr-python, which is not installed (Python < 3.11)."""


def engine_available() -> bool:
    """Whether the real CEL engine is importable (else compile checks are minimal)."""
    return _cel is not None


# --- semver --------------------------------------------------------------------------------

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
_LOOSE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?([-+].*)?$")


@dataclass(frozen=True, slots=True)
class Version:
    """A semantic version as Kubernetes' semver library parses it (build metadata dropped:
    it never affects comparison or equality)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Version:
        """Strict ``MAJOR.MINOR.PATCH[-pre][+build]``; with `normalize`, a leading ``v``,
        missing minor/patch and leading zeros are accepted, as ``semver(s, true)`` does."""
        if normalize:
            loose = _LOOSE.match(text)
            if loose:
                parts = [str(int(p)) if p else "0" for p in loose.group(1, 2, 3)]
                text = ".".join(parts) + (loose.group(4) or "")
        match = _SEMVER.match(text)
        if not match:
            raise ValueError(f"could not parse {text!r} as a semantic version")
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        if any(p.isdigit() and len(p) > 1 and p[0] == "0" for p in pre):
            raise ValueError(f"could not parse {text!r} as a semantic version: "
                             "numeric pre-release identifiers must not have leading zeroes")
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre)

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(self.prerelease) if self.prerelease else "")

    def compare(self, other: Version) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self.prerelease == other.prerelease:
            return 0
        if not self.prerelease or not other.prerelease:
            return -1 if self.prerelease else 1  # a release ranks above its pre-releases
        for a, b in zip(self.prerelease, other.prerelease):
            if a == b:
                continue
            if a.isdigit() and b.isdigit():
                return -1 if int(a) < int(b) else 1
            if a.isdigit() != b.isdigit():
                return -1 if a.isdigit() else 1  # numeric identifiers rank lower
            return -1 if a < b else 1
        return -1 if len(self.prerelease) < len(other.prerelease) else 1


# --- tagged values and the Python side of the functions ------------------------------------

def quantity_value(value: str | int | Fraction) -> dict[str, str]:
    """The runtime form of a Quantity (a capacity value or ``quantity("...")``)."""
    if isinstance(value, str):
        parsed = parse_quantity(value.strip())
        if parsed is None:
            raise ValueError(_QUANTITY_MESSAGE)
        value = parsed
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        raise TypeError(f"not a quantity: {value!r}")
    value = Fraction(value)
    return {_QUANTITY_TAG: f"{value.numerator}/{value.denominator}"}


def version_value(value: str | Version) -> dict[str, str]:
    """The runtime form of a Version (a version attribute or ``semver("...")``)."""
    version = Version.parse(value) if isinstance(value, str) else value
    return {_SEMVER_TAG: str(version)}


@lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


@lru_cache(maxsize=4096)
def _version(text: str) -> Version:
    return Version.parse(text)


def _kind(value: Any) -> str | None:
    if isinstance(value, Mapping) and len(value) == 1:
        if _QUANTITY_TAG in value:
            return "quantity"
        if _SEMVER_TAG in value:
            return "version"
    return None


def _as_quantity(value: Any) -> Fraction:
    if _kind(value) != "quantity":
        raise ValueError("no such overload: expected a Quantity")
    return _fraction(value[_QUANTITY_TAG])


def _as_version(value: Any) -> Version:
    if _kind(value) != "version":
        raise ValueError("no such overload: expected a Semver")
    return _version(value[_SEMVER_TAG])


def _compare(a: Any, b: Any) -> int:
    kind = _kind(a)
    if kind is None or kind != _kind(b):
        raise ValueError("no such overload: compareTo needs two Quantities or two Semvers")
    if kind == "version":
        return _as_version(a).compare(_as_version(b))
    x, y = _as_quantity(a), _as_quantity(b)
    return (x > y) - (x < y)


def _quantity(text: str) -> dict[str, str]:
    return quantity_value(text)


def _is_quantity(text: str) -> bool:
    return parse_quantity(text.strip()) is not None


def _semver(text: str, normalize: bool = False) -> dict[str, str]:
    return {_SEMVER_TAG: str(Version.parse(text, normalize))}


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        Version.parse(text, normalize)
    except ValueError:
        return False
    return True


def _int64(value: Fraction) -> int:
    if value.denominator != 1 or not _INT64[0] <= value.numerator <= _INT64[1]:
        raise ValueError("cannot convert value to integer")
    return value.numerator


def _is_integer(q: Any) -> bool:
    value = _as_quantity(q)
    return value.denominator == 1 and _INT64[0] <= value.numerator <= _INT64[1]


def _float(q: Any) -> float:
    value = _as_quantity(q)
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _sign(q: Any) -> int:
    value = _as_quantity(q)
    return (value > 0) - (value < 0)


def _arith(sign: int):
    def quantity_op(a: Any, b: Any) -> dict[str, str]:
        return quantity_value(_as_quantity(a) + sign * _as_quantity(b))

    def int_op(a: Any, b: int) -> dict[str, str]:
        return quantity_value(_as_quantity(a) + sign * b)

    return quantity_op, int_op


_ADD = _arith(1)
_SUB = _arith(-1)


# --- environments --------------------------------------------------------------------------

def _declarations(quantity_type: Any, semver_type: Any) -> list[Any]:
    """Function declarations. With two distinct types (check env) every overload exists; with
    one map type (runtime env) the overloads per name collapse into one Python-dispatched one."""
    T, O = _cel.Type, _cel.Overload
    Q, S = quantity_type, semver_type
    runtime = Q == S

    def member(name: str, returns: Any, params: list[Any], impl: Any, suffix: str) -> Any:
        return O(f"{name}_{suffix}", returns, params, is_member=True, impl=impl)

    decls = {
        "quantity": [O("quantity_string", Q, [T.STRING], impl=_quantity)],
        "isQuantity": [O("is_quantity_string", T.BOOL, [T.STRING], impl=_is_quantity)],
        "semver": [O("semver_string", S, [T.STRING], impl=_semver),
                   O("semver_string_bool", S, [T.STRING, T.BOOL], impl=_semver)],
        "isSemver": [O("is_semver_string", T.BOOL, [T.STRING], impl=_is_semver),
                     O("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], impl=_is_semver)],
        # a global function in Kubernetes (cel.Overload, not MemberOverload), whatever the
        # library's doc comment says: `sign(quantity("1"))`
        "sign": [O("sign_quantity", T.INT, [Q], impl=_sign)],
        "asInteger": [member("asInteger", T.INT, [Q], lambda q: _int64(_as_quantity(q)), "quantity")],
        "isInteger": [member("isInteger", T.BOOL, [Q], _is_integer, "quantity")],
        "asApproximateFloat": [member("asApproximateFloat", T.DOUBLE, [Q], _float, "quantity")],
        "add": [member("add", Q, [Q, Q], _ADD[0], "quantity_quantity"),
                member("add", Q, [Q, T.INT], _ADD[1], "quantity_int")],
        "sub": [member("sub", Q, [Q, Q], _SUB[0], "quantity_quantity"),
                member("sub", Q, [Q, T.INT], _SUB[1], "quantity_int")],
        "major": [member("major", T.INT, [S], lambda v: _as_version(v).major, "semver")],
        "minor": [member("minor", T.INT, [S], lambda v: _as_version(v).minor, "semver")],
        "patch": [member("patch", T.INT, [S], lambda v: _as_version(v).patch, "semver")],
    }
    comparisons = {
        "compareTo": (T.INT, _compare),
        "isGreaterThan": (T.BOOL, lambda a, b: _compare(a, b) > 0),
        "isLessThan": (T.BOOL, lambda a, b: _compare(a, b) < 0),
    }
    for name, (returns, impl) in comparisons.items():
        decls[name] = [member(name, returns, [Q, Q], impl, "quantity")]
        if not runtime:
            decls[name].append(member(name, returns, [S, S], impl, "semver"))
    return [_cel.FunctionDecl(name, overloads) for name, overloads in decls.items()]


def _new_env(quantity_type: Any, semver_type: Any) -> Any:
    """Besides ``device``, the device's fields as variables of their Kubernetes types, for
    expressions rewritten by :func:`_typed_fields`."""
    T = _cel.Type
    variables = {
        "device": T.Map(T.STRING, T.DYN),
        "device_driver": T.STRING,
        "device_allowMultipleAllocations": T.BOOL,
        "device_attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device_capacity": T.Map(T.STRING, T.Map(T.STRING, quantity_type)),
    }
    return _cel.NewEnv(
        variables=variables,
        extensions=[_ext_strings.ExtStrings(), _ext_bindings.ExtBindings(),
                    _ext_optional.ExtOptional()],
        functions=_declarations(quantity_type, semver_type),
    )


def _typed_fields(expression: str, tokens: list[Token]) -> str:
    """`device.driver` -> `device_driver` (and attributes, capacity, allowMultipleAllocations)
    wherever the three tokens touch, for both environments, where those names have the types
    Kubernetes gives the fields of its ``kubernetes.DRADevice`` object: a string, maps of
    unknown-typed attributes and of Quantities, a bool. Same length, so positions in messages
    stay right. (A user's own identifier ``device_driver`` would be undeclared in Kubernetes
    and is accepted here: the one price of the trick.)"""
    chars = list(expression)
    for i in range(len(tokens) - 2):
        device, dot, name = tokens[i], tokens[i + 1], tokens[i + 2]
        if (device.kind is Kind.IDENT and device.text == "device" and dot.text == "."
                and name.kind is Kind.IDENT and name.text in DEVICE_FIELDS
                and dot.offset == device.offset + len("device") and name.offset == dot.offset + 1
                and not (i > 0 and tokens[i - 1].text in (".", "?."))):
            chars[dot.offset] = "_"
    return "".join(chars)


def _type_name(name: str) -> str:
    """cel-expr-python's type name in cel-go's wording, as Kubernetes prints it: ``MAP<STRING,
    DYN>`` -> ``map(string, google.protobuf.Any)`` (the only dyn values are attributes, which
    Kubernetes types as Any)."""
    found = re.fullmatch(r"(MAP|LIST|TYPE)<(.*)>", name)
    if found:
        depth, parts, start = 0, [], 0
        inner = found.group(2)
        for i, char in enumerate(inner):
            depth += char == "<"
            depth -= char == ">"
            if char == "," and depth == 0:
                parts.append(inner[start:i].strip())
                start = i + 1
        parts.append(inner[start:].strip())
        return f"{found.group(1).lower()}({', '.join(_type_name(p) for p in parts)})"
    named = {"NULL": "null_type", "DYN": "google.protobuf.Any",
             "DURATION": "google.protobuf.Duration", "TIMESTAMP": "google.protobuf.Timestamp"}
    return named.get(name, name if "." in name else name.lower())


def _engine_error(exc: Exception, expression: str) -> CelError:
    text = str(exc)
    text = re.sub(r"^[A-Z_]+: ", "", text)
    text = re.sub(r" \[[A-Z_]+\]$", "", text)
    found = _LOCATION.search(text)
    if found:
        return CelError(found.group(3), int(found.group(1)), int(found.group(2)), text)
    return CelError(text.strip() or f"cannot compile {expression!r}", 1, 1, text)


# --- checks the engine cannot make ---------------------------------------------------------

_FIELD_VARIABLE = re.compile(r"\bdevice_(driver|attributes|capacity|allowMultipleAllocations)\b")


def _named_fields(error: CelError) -> CelError:
    """An engine message quotes the source: say `device.driver`, not `device_driver`."""
    def named(text: str) -> str:
        return _FIELD_VARIABLE.sub(r"device.\1", text)

    return CelError(named(error.message), error.line, error.column, named(error.detail))


def _static_checks(expression: str, tokens: list[Token]) -> None:
    """Kubernetes compile errors that our `device` typing hides: `device.<unknown field>` and
    ordering operators on a Quantity (capacities are typed Quantity there)."""
    for i, tok in enumerate(tokens):
        if (tok.kind is Kind.IDENT and tok.text == "device" and i + 2 < len(tokens)
                and tokens[i + 1].kind is Kind.OP and tokens[i + 1].text == "."
                and tokens[i + 2].kind is Kind.IDENT and tokens[i + 2].text not in DEVICE_FIELDS
                and not (i > 0 and tokens[i - 1].kind is Kind.OP and tokens[i - 1].text in (".", "?."))):
            # cel-go puts a select expression at its `.` (parser VisitSelect: newSelect(op))
            dot = tokens[i + 1]
            raise CelError(f"undefined field '{tokens[i + 2].text}'", dot.line, dot.column)
    for bad in cel_lint.bad_comparisons(expression, lambda domain, name: False):
        if bad.operand_type == "quantity":
            raise CelError(f"found no matching overload for '_{bad.operator}_' applied to a "
                           f"kubernetes.Quantity ({bad.operand}); use compareTo(...) or "
                           "isGreaterThan/isLessThan", bad.line, bad.column)


def _eof(expression: str) -> tuple[int, int]:
    lines = expression.split("\n")
    return len(lines), len(lines[-1]) + 1


_BINARY_ONLY = frozenset({"==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "*", "/", "%", "?",
                          ":", ".", ",", "?."})


def _fallback_check(expression: str, tokens: list[Token], errors: list[str]) -> None:
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


# --- public API ----------------------------------------------------------------------------

@dataclass(frozen=True)
class PreparedDevice:
    """A device converted to the engine's runtime form once, to be evaluated by many selectors
    (building the activation costs about as much as evaluating a string comparison)."""

    activation: Any


@dataclass(frozen=True)
class Selector:
    """A compiled selector; :meth:`evaluate` runs it on one device."""

    expression: str
    _program: Any
    _env: Any
    _domains: tuple[tuple[str, str], ...]  # (kind, domain) literally referenced

    def evaluate(self, device: Mapping[str, Any]) -> bool:
        """True/False for `device`; raises :class:`CelEvaluationError` when CEL yields an error
        (``no such key``, a bad ``quantity()`` argument, a non-bool result).

        `device` = ``{"driver": str, "attributes": {domain: {name: value}}, "capacity":
        {domain: {name: quantity}}}``; attribute values are str, int, bool or
        :class:`Version`; capacity values are quantity strings (``"80Gi"``), ints or Fractions.
        """
        data = _device_data(device, self._domains)
        return self._result(self._program.eval(self._env.Activation(_variables(data))))

    @property
    def domains(self) -> tuple[tuple[str, str], ...]:
        """(kind, domain) pairs the expression names literally: ("attribute", "gpu.nvidia.com")."""
        return self._domains

    def evaluate_prepared(self, device: PreparedDevice) -> bool:
        """Like :meth:`evaluate`, on a device converted once by :meth:`SelectorEngine.prepare`
        (which must have been given at least this selector's :attr:`domains`)."""
        return self._result(self._program.eval(device.activation))

    @staticmethod
    def _result(value: Any) -> bool:
        kind = value.type()
        if kind == _cel.Type.BOOL:
            return bool(value.value())
        if kind == _cel.Type.ERROR:
            raise CelEvaluationError(runtime_message(str(value.value())))
        name = _type_name(kind.name())
        raise CelEvaluationError(f"CEL result of type {name} could not be converted to bool: "
                                 f"unsupported native conversion from {name} to 'bool'")


_STATUS = re.compile(r"^[A-Z_]+: ")
_KEY_NOT_FOUND = re.compile(r'Key not found in map\s*:\s*"?([^"]*)"?')


def runtime_message(engine_message: str) -> str:
    """A run-time error in the words of Kubernetes' allocator (cel-go), as far as they are
    known: ``no such key: profile``, ``no such overload``, the Quantity library's own messages;
    cel-cpp's status prefix (``OUT_OF_RANGE: ``) dropped. Parse errors of ``semver()`` keep
    gpudra's wording (Kubernetes passes on blang/semver's, e.g. "No Major.Minor.Patch
    elements found")."""
    found = _KEY_NOT_FOUND.search(engine_message)
    if found:
        return f"no such key: {found.group(1)}"
    text = _STATUS.sub("", engine_message)
    if text.startswith("No matching overloads found"):
        return "no such overload"
    return text


class SelectorEngine:
    """Compiles DRA selectors with the Kubernetes DRA CEL environment (as far as it is
    emulated here; see the module docstring) and evaluates them against device dicts."""

    def __init__(self) -> None:
        self._check_env = None
        self._runtime_env = None
        if _cel is not None:
            T = _cel.Type
            self._check_env = _new_env(T.AbstractType("kubernetes.Quantity"),
                                       T.AbstractType("kubernetes.Semver"))
            runtime = T.Map(T.STRING, T.DYN)
            self._runtime_env = _new_env(runtime, runtime)

    @property
    def can_evaluate(self) -> bool:
        return self._runtime_env is not None

    def check(self, expression: str) -> None:
        """Raise :class:`CelError` unless `expression` compiles as a DRA selector."""
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CelError(f"expression is too long ({len(expression)} > {MAX_EXPRESSION_LENGTH} "
                           "characters)", 1, 1)
        tokens, errors = cel_lint.tokenize(expression)
        if self._check_env is None:
            _fallback_check(expression, tokens, errors)
        else:
            try:
                checked = self._check_env.compile(_typed_fields(expression, tokens))
            except RuntimeError as exc:
                raise _named_fields(_engine_error(exc, expression)) from None
            result = checked.return_type()
            if not (result == _cel.Type.BOOL or result == _cel.Type.DYN):
                raise CelError(f"must evaluate to bool or the unknown type, not "
                               f"{_type_name(result.name())}", 1, 1)
        _static_checks(expression, tokens)

    def compile(self, expression: str) -> Selector:
        """Check `expression`, then build its evaluable form."""
        self.check(expression)
        if self._runtime_env is None:
            raise UnsupportedError("evaluating CEL selectors needs cel-expr-python "
                                   "(Python >= 3.11); only a minimal syntax check ran")
        try:
            program = self._runtime_env.compile(_typed_fields(expression,
                                                              cel_lint.tokenize(expression)[0]))
        except RuntimeError as exc:  # pragma: no cover - the check env is stricter
            raise _named_fields(_engine_error(exc, expression)) from None
        domains = tuple(sorted({(ref.kind, ref.domain) for ref in cel_lint.references(expression)}))
        return Selector(expression, program, self._runtime_env, domains)

    def evaluate(self, selector: str | Selector, device: Mapping[str, Any]) -> bool:
        compiled = selector if isinstance(selector, Selector) else self.compile(selector)
        return compiled.evaluate(device)

    def prepare(self, device: Mapping[str, Any],
                domains: Iterable[tuple[str, str]] = ()) -> PreparedDevice:
        """Convert `device` once for :meth:`Selector.evaluate_prepared`. `domains`: the union
        of the :attr:`Selector.domains` of the selectors that will run on it (an unknown domain
        is an empty map in Kubernetes; adding one only affects expressions that name it)."""
        if self._runtime_env is None:
            raise UnsupportedError("evaluating CEL selectors needs cel-expr-python "
                                   "(Python >= 3.11)")
        data = _device_data(device, tuple(domains))
        return PreparedDevice(self._runtime_env.Activation(_variables(data)))


def default_engine() -> SelectorEngine:
    """A shared engine: building the CEL environments costs milliseconds, checking is pure."""
    return _engine(_cel is not None)


@lru_cache(maxsize=2)
def _engine(with_cel: bool) -> SelectorEngine:
    # Keyed on whether the engine imported, so tests that hide it get the fallback engine.
    return SelectorEngine()


def compile_selector(expression: str) -> None:
    """Raise :class:`CelError` (line, column 1-based) unless `expression` is a valid selector.

    With cel-expr-python this is a full parse and type-check in the DRA environment. Without it
    (Python 3.10, or no wheel for the platform) only the minimal check described in the module
    docstring runs: syntax errors such as unbalanced brackets or quotes are still caught,
    unknown functions and type errors are not.
    """
    default_engine().check(expression)


def _device_data(device: Mapping[str, Any], domains: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {
        str(domain): {str(k): _attribute(v) for k, v in (names or {}).items()}
        for domain, names in (device.get("attributes") or {}).items()}
    capacity: dict[str, dict[str, Any]] = {
        str(domain): {str(k): _capacity(v) for k, v in (names or {}).items()}
        for domain, names in (device.get("capacity") or {}).items()}
    # Kubernetes returns an empty map for an unknown domain; emulate it for the literal domains
    # the expression names (`has(device.attributes["x.com"].y)` is then false, not an error).
    for kind, domain in domains:
        (attributes if kind == "attribute" else capacity).setdefault(domain, {})
    return {"driver": str(device.get("driver", "")),
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations", False)),
            "attributes": attributes, "capacity": capacity}


def _variables(data: dict[str, Any]) -> dict[str, Any]:
    """The activation: ``device`` and its fields as the variables of :func:`_typed_fields`."""
    return {"device": data, "device_driver": data["driver"],
            "device_allowMultipleAllocations": data["allowMultipleAllocations"],
            "device_attributes": data["attributes"], "device_capacity": data["capacity"]}


def _attribute(value: Any) -> Any:
    if isinstance(value, Version):
        return version_value(value)
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):  # DRAListTypeAttributes
        return [_attribute(v) for v in value]
    raise TypeError(f"unsupported attribute value {value!r}: use str, int, bool or Version")


def _capacity(value: Any) -> dict[str, str]:
    if _kind(value) == "quantity":
        return dict(value)
    return quantity_value(value)
