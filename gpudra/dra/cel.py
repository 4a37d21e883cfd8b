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

Environment: that of one Kubernetes release (:class:`SelectorEngine` takes a
:class:`~gpudra.dra.versions.TargetVersion`; what each release offers is
:mod:`gpudra.dra.cel_env`, read at the Kubernetes source and compared with the oracle):
variable ``device`` (``allowMultipleAllocations`` from 1.34 with DRAConsumableCapacity);
``quantity``, ``isQuantity``, ``semver`` and ``isSemver`` (the ``normalize`` bool from 1.34),
``sign(q)``; members ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``,
``patch``, ``asInteger``, ``asApproximateFloat``, ``isInteger``, ``add``, ``sub``; optional
values; the strings extension at version 2, as Kubernetes has it (no ``reverse()``, no
``quote()`` member; ``strings.quote``, ``format``, ``join``); ``cel.bind``; Kubernetes' lists,
regex, URL, IP, CIDR, format and authorizer libraries and cel-go's sets; from 1.35 cel-go's
lists extension. Selectors that use a two-variable comprehension, ``sortBy`` or ``string(ip)``
cannot be checked (:class:`CannotEvaluate`); URL, IP, CIDR and format functions compile but
cannot be evaluated. What Kubernetes refuses after type-checking (mixed-type literals, cost
overflows) is read from the checked expression (:mod:`gpudra.dra.cel_checked`).
Run-time errors are worded as the allocator words them
(:func:`runtime_message`; semver parse errors as blang/semver), and ``==``/``in`` between a
version attribute and another type fail as in Kubernetes (:mod:`gpudra.dra.cel_equality`).
What still differs is listed in tests/oracle/test_selectors_oracle.py (``KNOWN``) and
docs/facts.md.

**Without cel-expr-python** (it has wheels only for Python >= 3.11; gpudra supports 3.10),
:func:`compile_selector` falls back to a minimal hand-written check on the cel_lint tokenizer:
unterminated strings, unknown characters, unbalanced brackets, a dangling operator, two operands
in a row, relational operators on quantities, and undefined ``device`` fields. It accepts much
that CEL rejects (unknown functions, type errors). Evaluation raises :class:`UnsupportedError`.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gpudra.dra import cel_checked, cel_lint
from gpudra.dra.cel_env import (
    LIBRARY,
    THREE_ARGUMENT_MACROS,
    TWO_VARIABLE_MACROS,
    CelEnvironment,
    Function,
    cel_equal,
)
from gpudra.dra.cel_equality import EQUALS, HASH_ERROR, IN_CONSTANTS, kubernetes_equality
from gpudra.dra.cel_lint import Kind, Token
from gpudra.dra.versions import DEFAULT, TargetVersion
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

_QUANTITY_TAG = "__quantity__"
_SEMVER_TAG = "__semver__"
_INT64 = (-(2**63), 2**63 - 1)
_LOCATION = re.compile(r"<input>:(\d+):(\d+): ([^\n]*)")
_QUANTITY_MESSAGE = ("quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


# --- errors ------------------------------------------------------------------------------

class CelError(UsageError):
    """A selector that does not compile. `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int, detail: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.detail = detail or message  # every error the engine reported, with carets
        self.hint = hint  # what would make it compile (a release, a feature gate), if known


class CelEvaluationError(GpudraError):
    """A selector that compiled but failed on a device (e.g. ``no such key``): neither true nor
    false. Kubernetes aborts the allocation attempt on such an error."""


class UnsupportedError(GpudraError):
    """Evaluation needs cel-expr-python, which is not installed (Python < 3.11)."""


class CannotEvaluate(UnsupportedError):
    """A selector Kubernetes accepts that gpudra cannot check or evaluate: it uses a function
    or macro of the release's DRA environment that gpudra's CEL engine does not implement
    (gpudra.dra.cel_env). Neither valid nor invalid as far as gpudra can tell."""


def engine_available() -> bool:
    """Whether the real CEL engine is importable (else compile checks are minimal)."""
    return _cel is not None


# --- semver --------------------------------------------------------------------------------

_DIGITS = frozenset("0123456789")
_IDENTIFIER = _DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_UINT64 = 2**64


def _go_quote(text: str) -> str:
    """Go's %q of a string, as blang/semver's messages quote the offending part."""
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f",
               "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def _number(part: str, what: str) -> int:
    """One of MAJOR, MINOR, PATCH as blang/semver v4 ``Parse`` checks it, in its words."""
    if not set(part) <= _DIGITS:
        raise ValueError(f"Invalid character(s) found in {what} number {_go_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes "
                         f"{_go_quote(part)}")
    return _uint64(part)


def _uint64(digits: str) -> int:
    """Go's strconv.ParseUint(digits, 10, 64), with its errors."""
    if not digits:
        raise ValueError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(digits)
    if value >= _UINT64:
        raise ValueError(f"strconv.ParseUint: parsing {_go_quote(digits)}: value out of range")
    return value


def _strict(text: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver v4 ``Parse`` (what Kubernetes' ``semver()`` and version attributes use):
    the same checks in the same order, so that the first error is the one Kubernetes reports."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    patch, build, prerelease = parts[2], None, None
    if "+" in patch:
        patch, build = patch.split("+", 1)
    if "-" in patch:
        patch, prerelease = patch.split("-", 1)
    patch_number = _number(patch, "patch")
    identifiers = []
    for identifier in prerelease.split(".") if prerelease is not None else ():
        if not identifier:
            raise ValueError("Prerelease is empty")
        if set(identifier) <= _DIGITS:
            if len(identifier) > 1 and identifier[0] == "0":
                raise ValueError("Numeric PreRelease version must not contain leading zeroes "
                                 f"{_go_quote(identifier)}")
            _uint64(identifier)
        elif not set(identifier) <= _IDENTIFIER:
            raise ValueError(f"Invalid character(s) found in prerelease {_go_quote(identifier)}")
        identifiers.append(identifier)
    for identifier in build.split(".") if build is not None else ():
        if not identifier:
            raise ValueError("Build meta data is empty")
        if not set(identifier) <= _IDENTIFIER:
            raise ValueError(f"Invalid character(s) found in build meta data "
                             f"{_go_quote(identifier)}")
    return major, minor, patch_number, tuple(identifiers)


def _normalized(text: str) -> str:
    """``semver(s, true)``'s normalisation before the strict parse (k8s.io/apiserver
    pkg/cel/library/semverlib.go normalizeAndParse): no ``v`` prefix, no leading zeros in the
    first three dot-separated parts, missing minor and patch filled with 0."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _DIGITS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


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
        missing minor/patch and leading zeros are accepted, as ``semver(s, true)`` does.
        :class:`ValueError` carries blang/semver's message, as Kubernetes reports it."""
        return cls(*_strict(_normalized(text) if normalize else text))

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


class _Mismatch(ValueError):
    """An argument of the wrong runtime type; :func:`_overload_errors` names the call."""


def _type_of(value: Any) -> str:
    """A runtime value's type as cel-go names it in ``no such overload: f(types)``."""
    kind = _kind(value)
    if kind is not None:
        return "kubernetes.Quantity" if kind == "quantity" else "kubernetes.Semver"
    for python, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"),
                         (bytes, "bytes"), (list, "list"), (dict, "map")):
        if isinstance(value, python):
            return name
    return "null_type" if value is None else type(value).__name__


def _overload_errors(name: str, impl: Any) -> Any:
    """`impl` with a wrong-typed argument reported as cel-go's dispatcher does."""
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except _Mismatch:
            raise ValueError(f"no such overload: {name}({', '.join(map(_type_of, args))})"
                             ) from None

    return call


def _as_quantity(value: Any) -> Fraction:
    if _kind(value) != "quantity":
        raise _Mismatch("expected a Quantity")
    return _fraction(value[_QUANTITY_TAG])


def _as_version(value: Any) -> Version:
    if _kind(value) != "version":
        raise _Mismatch("expected a Semver")
    return _version(value[_SEMVER_TAG])


def _compare(a: Any, b: Any) -> int:
    kind = _kind(a)
    if kind is None or kind != _kind(b):
        raise _Mismatch("compareTo needs two Quantities or two Semvers")
    if kind == "version":
        return _as_version(a).compare(_as_version(b))
    x, y = _as_quantity(a), _as_quantity(b)
    return (x > y) - (x < y)


def _equals(a: Any, b: Any) -> bool:
    """``a == b`` as cel-go has it (gpudra.dra.cel_equality): a Semver or Quantity on the left
    equals only its own type and refuses any other."""
    if a is None or b is None:
        return a is None and b is None  # types.Equal checks null first
    kind = _kind(a)
    if kind is not None:
        if _kind(b) != kind:
            raise ValueError("no such overload")
        return _compare(a, b) == 0
    return cel_equal(a, b)


def _in_constants(a: Any, items: list[Any]) -> bool:
    """``a in [constants…]`` as cel-go has it: a hash lookup, which a Semver cannot take."""
    if _kind(a) == "version":
        raise ValueError(HASH_ERROR)
    return any(cel_equal(a, item) for item in items)


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


def _signed(value: int) -> int:
    """Go's int64(uint64): Kubernetes' major()/minor()/patch() of a version part >= 2**63."""
    return value - _UINT64 if value >= 2**63 else value


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
        return O(f"{name}_{suffix}", returns, params, is_member=True,
                 impl=_overload_errors(name, impl))

    decls = {
        "quantity": [O("quantity_string", Q, [T.STRING], impl=_quantity)],
        "isQuantity": [O("is_quantity_string", T.BOOL, [T.STRING], impl=_is_quantity)],
        # both arities on every release: _static_checks refuses the normalize argument before
        # 1.34 in Kubernetes' words (the engine would call it an undeclared reference)
        "semver": [O("semver_string", S, [T.STRING], impl=_semver),
                   O("semver_string_bool", S, [T.STRING, T.BOOL], impl=_semver)],
        "isSemver": [O("is_semver_string", T.BOOL, [T.STRING], impl=_is_semver),
                     O("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], impl=_is_semver)],
        # a global function in Kubernetes (cel.Overload, not MemberOverload), whatever the
        # library's doc comment says: `sign(quantity("1"))`
        "sign": [O("sign_quantity", T.INT, [Q], impl=_overload_errors("sign", _sign))],
        "asInteger": [member("asInteger", T.INT, [Q], lambda q: _int64(_as_quantity(q)), "quantity")],
        "isInteger": [member("isInteger", T.BOOL, [Q], _is_integer, "quantity")],
        "asApproximateFloat": [member("asApproximateFloat", T.DOUBLE, [Q], _float, "quantity")],
        "add": [member("add", Q, [Q, Q], _ADD[0], "quantity_quantity"),
                member("add", Q, [Q, T.INT], _ADD[1], "quantity_int")],
        "sub": [member("sub", Q, [Q, Q], _SUB[0], "quantity_quantity"),
                member("sub", Q, [Q, T.INT], _SUB[1], "quantity_int")],
        "major": [member("major", T.INT, [S], lambda v: _signed(_as_version(v).major),
                          "semver")],
        "minor": [member("minor", T.INT, [S], lambda v: _signed(_as_version(v).minor),
                          "semver")],
        "patch": [member("patch", T.INT, [S], lambda v: _signed(_as_version(v).patch),
                          "semver")],
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


_PRIMITIVES = {"int": "INT", "uint": "UINT", "double": "DOUBLE", "bool": "BOOL",
               "string": "STRING", "bytes": "BYTES", "dyn": "DYN",
               "google.protobuf.Duration": "DURATION", "google.protobuf.Timestamp": "TIMESTAMP"}


def _cel_type(name: str) -> Any:
    """A CEL type from its cel-go name: ``list(string)``, ``map(string, list(string))``,
    ``net.IP``; an optional value is ``dyn`` (looser than Kubernetes)."""
    T = _cel.Type
    if name in _PRIMITIVES:
        return getattr(T, _PRIMITIVES[name])
    found = re.fullmatch(r"(list|map|optional_type)\((.*)\)", name)
    if found is None:
        return T.AbstractType(name)
    if found.group(1) == "optional_type":
        return T.DYN  # the engine's optional type cannot be declared from Python
    params = [_cel_type(p) for p in _split_types(found.group(2))]
    return T.List(*params) if found.group(1) == "list" else T.Map(*params)


def _runtime_type(name: str) -> Any:
    """The runtime environment's loose form of a parameter: any list is ``list(dyn)``, any
    non-primitive ``dyn`` (the check environment has already checked the real types; results
    are ``dyn``, as one overload stands for all of Kubernetes' per-type ones)."""
    T = _cel.Type
    if name.startswith("list("):
        return T.List(T.DYN)
    return getattr(T, _PRIMITIVES[name]) if name in _PRIMITIVES else T.DYN


# Library functions that add overloads to one of the engine's extensions (strings): declared as
# an extension of their own, which merges. Others are plain declarations (an extension's
# declarations collide when an abstract type stands where another overload has a string).
_EXTENDING = frozenset({"indexOf", "lastIndexOf"})


def _plain_result(name: str, impl: Any) -> Any:
    """`impl`, refusing to return what the engine cannot take back from Python (a duration or
    a timestamp: ``[duration("1s")].max()``) with an error instead of the engine's crash."""
    def call(*args: Any) -> Any:
        result = impl(*args)
        if isinstance(result, (datetime.datetime, datetime.timedelta)):
            raise ValueError(f"gpudra cannot evaluate {name}() of durations or timestamps")
        return result

    return call


def _library(functions: Iterable[Function], runtime: bool) -> list[tuple[str, Any]]:
    """Kubernetes' library functions the engine lacks: every overload for the check
    environment; for the runtime one, those gpudra implements, one overload per shape."""
    decls = []
    for function in functions:
        overloads: dict[tuple, Any] = {}
        for o in function.overloads:
            if runtime:
                if function.impl is None:
                    break
                params = [_runtime_type(p) for p in o.params]
                key = (o.member, tuple(p.name() for p in params))
                if key not in overloads:
                    overloads[key] = _cel.Overload(
                        f"gpudra_{o.id}", _cel.Type.DYN, params, is_member=o.member,
                        impl=_plain_result(function.name, function.impl))
            else:
                overloads[o.id] = _cel.Overload(o.id, _cel_type(o.result),
                                                [_cel_type(p) for p in o.params],
                                                is_member=o.member)
        if overloads:
            decls.append((function.name, _cel.FunctionDecl(function.name,
                                                           list(overloads.values()))))
    return decls


def _new_env(quantity_type: Any, semver_type: Any, environment: CelEnvironment) -> Any:
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
    runtime = quantity_type == semver_type
    library = _library(environment.functions(), runtime)
    # In an extension, not `functions=`: only there does the engine dispatch a dyn parameter
    # at run time.
    extending = [decl for name, decl in library if name in _EXTENDING]
    if runtime:  # the calls gpudra.dra.cel_equality writes
        extending += [
            _cel.FunctionDecl(EQUALS, [_cel.Overload("gpudra_equals", T.BOOL, [T.DYN, T.DYN],
                                                     impl=_equals)]),
            _cel.FunctionDecl(IN_CONSTANTS, [_cel.Overload(
                "gpudra_in_constants", T.BOOL, [T.DYN, T.List(T.DYN)], impl=_in_constants)])]
    return _cel.NewEnv(
        variables=variables,
        # Kubernetes has the strings extension at version 2 (no string reverse())
        extensions=[_ext_strings.ExtStrings(2), _ext_bindings.ExtBindings(),
                    _ext_optional.ExtOptional(environment.optional_version),
                    _cel.CelExtension("kubernetes", extending)],
        functions=_declarations(quantity_type, semver_type)
        + [decl for name, decl in library if name not in _EXTENDING],
    )


def _typed_fields(expression: str, tokens: list[Token], fields: frozenset[str]) -> str:
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
                and name.kind is Kind.IDENT and name.text in fields
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


def _static_checks(expression: str, tokens: list[Token], environment: CelEnvironment) -> None:
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


def _refused_macro(tokens: list[Token],
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


def _cannot_check(error: CelError) -> CannotEvaluate | None:
    """``string()`` of an IP or CIDR, which Kubernetes accepts and the engine refuses (not
    declarable beside its own ``string()``)."""
    if re.search(r"no matching overload for 'string' applied to '\(net\.(IP|CIDR)\)'",
                 error.message):
        return CannotEvaluate(f"{error.line}:{error.column}: cannot check: string() of an IP "
                              "or CIDR, which gpudra's CEL engine does not implement")
    return None


_UNDECLARED = re.compile(r"^undeclared reference to '([^']+)'")
_OVERLOAD = re.compile(r"^(found no matching overload for '([^']+)' applied to )'\((.*)\)'$")


def _kubernetes_wording(error: CelError, tokens: list[Token], expression: str,
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
    types = _split_types(found.group(3))
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


def _split_types(text: str) -> list[str]:
    depth, parts, start = 0, [], 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return parts + [last] if last or parts else parts


def _position(expression: str, offset: int | None) -> tuple[int, int]:
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


_NO_OVERLOAD = re.compile(r"^No matching overloads found : (?:\((?P<receiver>[^)]*)\)\.)?"
                          r"(?P<name>[^(]+)(?:\((?P<args>.*)\))?$")
_CEL_GO_TYPE = {"int64": "int", "uint64": "uint",
                # at run time the only map a function meets where it wants another type is a
                # version attribute: quantities are typed at compile time
                "map": "kubernetes.Semver"}
# Functions cel-go declares with cel.Function (Kubernetes' libraries, its extensions): a wrong
# runtime type is "no such overload: f(types)". The standard library and operators say
# "no such overload", or "no such overload: f" when the value lacks the operator's trait.
_DECLARED = frozenset(f.name for f in LIBRARY) | frozenset({
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "replace", "split", "substring", "trim",
    "upperAscii", "join", "format", "strings.quote", "quantity", "isQuantity", "semver",
    "isSemver", "sign", "asInteger", "isInteger", "asApproximateFloat", "add", "sub",
    "compareTo", "isGreaterThan", "isLessThan", "major", "minor", "patch"})
_SIZED = frozenset({"string", "bytes", "list", "map"})
# Exceptions seen in the oracle: regex find/findAll say "no such overload", the lists
# extension's flatten names the receiver cel-go's way, sort names only itself.
_UNTYPED = frozenset({"find", "findAll"})
_RECEIVER_FORM = frozenset({"flatten"})
_NAMED_ONLY = frozenset({"sort"})


def runtime_message(engine_message: str) -> str:
    """A run-time error in the words of Kubernetes' allocator (cel-go): ``no such key:
    profile``, ``no such overload: major(int)`` and the libraries' own messages (semver parse
    errors as blang/semver words them); cel-cpp's status prefix (``OUT_OF_RANGE: ``) dropped."""
    found = _KEY_NOT_FOUND.search(engine_message)
    if found:
        return f"no such key: {found.group(1)}"
    text = _STATUS.sub("", engine_message)
    call = _NO_OVERLOAD.match(text)
    if call is None:
        return "no such overload" if text.startswith("No matching overloads found") else text
    name = call.group("name").strip()
    types = [_CEL_GO_TYPE.get(t, t) for t in _split_types(call.group("args") or "")]
    if call.group("receiver") is not None:
        types.insert(0, _CEL_GO_TYPE.get(call.group("receiver"), call.group("receiver")))
    if name in _NAMED_ONLY:
        return f"no such overload: {name}"
    if name in _RECEIVER_FORM and types:
        return f"no such overload: {types[0]}.{name}({', '.join(types[1:])})"
    if name in _DECLARED and name not in _UNTYPED:
        return f"no such overload: {name}({', '.join(types)})"
    if (name.startswith("_") and name.endswith("_") and len(types) == 2
            and types[0] == "kubernetes.Semver") or (name == "size" and types
                                                      and types[0] not in _SIZED):
        return f"no such overload: {name}"  # the value lacks the operator's trait
    return "no such overload"


class SelectorEngine:
    """Compiles DRA selectors in the DRA CEL environment of one Kubernetes release (as far as
    it is emulated here; see the module docstring and gpudra.dra.cel_env) and evaluates them
    against device dicts. `consumable_capacity`: the DRAConsumableCapacity gate, when not the
    release's default."""

    def __init__(self, target: TargetVersion = DEFAULT,
                 consumable_capacity: bool | None = None) -> None:
        self.environment = CelEnvironment(target, consumable_capacity)
        self._fields = self.environment.device_fields
        self._check_env = None
        self._runtime_env = None
        if _cel is not None:
            T = _cel.Type
            self._check_env = _new_env(T.AbstractType("kubernetes.Quantity"),
                                       T.AbstractType("kubernetes.Semver"), self.environment)
            runtime = T.Map(T.STRING, T.DYN)
            self._runtime_env = _new_env(runtime, runtime, self.environment)

    @property
    def target(self) -> TargetVersion:
        return self.environment.target

    @property
    def can_evaluate(self) -> bool:
        return self._runtime_env is not None

    def check(self, expression: str) -> None:
        """Raise :class:`CelError` unless `expression` compiles as a new DRA selector in the
        release, :class:`CannotEvaluate` when it uses what the engine cannot check."""
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CelError(f"expression is too long ({len(expression)} > {MAX_EXPRESSION_LENGTH} "
                           "characters)", 1, 1)
        tokens, errors = cel_lint.tokenize(expression)
        if self._check_env is None:
            _fallback_check(expression, tokens, errors)
        else:
            try:
                checked = self._check_env.compile(_typed_fields(expression, tokens, self._fields))
            except RuntimeError as exc:
                error = _named_fields(_engine_error(exc, expression))
                raise (_refused_macro(tokens, self.environment) or _cannot_check(error)
                       or _kubernetes_wording(error, tokens, expression, self.environment)
                       ) from None
            result = checked.return_type()
            if not (result == _cel.Type.BOOL or result == _cel.Type.DYN):
                raise CelError(f"must evaluate to bool or the unknown type, not "
                               f"{_type_name(result.name())}", 1, 1)
        _static_checks(expression, tokens, self.environment)
        if self._check_env is not None:
            for problem in cel_checked.problems(checked.serialize()):
                line, column = _position(expression, problem.offset)
                raise CelError(problem.message, line, column)

    def compile(self, expression: str) -> Selector:
        """Check `expression`, then build its evaluable form; :class:`CannotEvaluate` when it
        uses a function gpudra does not implement."""
        self.check(expression)
        if self._runtime_env is None:
            raise UnsupportedError("evaluating CEL selectors needs cel-expr-python "
                                   "(Python >= 3.11); only a minimal syntax check ran")
        tokens = cel_lint.tokenize(expression)[0]
        try:
            program = self._runtime_env.compile(kubernetes_equality(
                _typed_fields(expression, tokens, self._fields), tokens))
        except RuntimeError as exc:
            missing = _unimplemented(tokens, self.environment)
            if missing:
                raise CannotEvaluate(
                    f"cannot evaluate: {', '.join(missing)} (Kubernetes "
                    f"{self.target}) is not implemented by gpudra's CEL engine") from None
            raise _named_fields(_engine_error(exc, expression)) from None  # pragma: no cover
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


def _unimplemented(tokens: list[Token], environment: CelEnvironment) -> list[str]:
    """The release's library functions `tokens` call that gpudra cannot evaluate."""
    names = {f.name for f in environment.functions() if f.impl is None}
    found = []
    for i, tok in enumerate(tokens[:-1]):
        if tok.kind is not Kind.IDENT or tokens[i + 1].text != "(":
            continue
        name = tok.text
        if i >= 2 and tokens[i - 1].text == "." and tokens[i - 2].kind is Kind.IDENT:
            name = f"{tokens[i - 2].text}.{tok.text}"  # format.named, optional.unwrap
            if name not in names:
                name = tok.text
        if name in names and f"{name}()" not in found:
            found.append(f"{name}()")
    return found


def default_engine(target: TargetVersion = DEFAULT) -> SelectorEngine:
    """A shared engine per release: building the CEL environments costs milliseconds,
    checking is pure."""
    return _engine(_cel is not None, target)


@lru_cache(maxsize=16)
def _engine(with_cel: bool, target: TargetVersion) -> SelectorEngine:
    # Keyed on whether the engine imported, so tests that hide it get the fallback engine.
    return SelectorEngine(target)


def compile_selector(expression: str, target: TargetVersion = DEFAULT) -> None:
    """Raise :class:`CelError` (line, column 1-based) unless `expression` is a valid new
    selector in `target`'s DRA environment. A selector using what gpudra's engine cannot check
    (:class:`CannotEvaluate`: a two-variable comprehension, ``sortBy``, ``string(ip(…))``) is
    one Kubernetes accepts as far as gpudra can tell, and passes.

    With cel-expr-python this is a full parse and type-check in that environment. Without it
    (Python 3.10, or no wheel for the platform) only the minimal check described in the module
    docstring runs: syntax errors such as unbalanced brackets or quotes are still caught,
    unknown functions and type errors are not.
    """
    try:
        default_engine(target).check(expression)
    except CannotEvaluate:
        return


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
