"""Kubernetes' Quantity and Semver as CEL values, and the Python side of the functions on them.

CEL sees a quantity or a version as a tagged map (``{"__quantity__": "<num>/<den>"}``,
``{"__semver__": "1.2.3[-pre]"}``, see :mod:`gpudra.dra.cel`); the functions here read and make
those maps, compare them and do their arithmetic. Versions parse and compare as blang/semver
does in Kubernetes (semver 2.0, strict unless normalised).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from gpudra.dra.cel_env import cel_equal
from gpudra.dra.cel_equality import HASH_ERROR
from gpudra.k8s.quantity import parse_quantity

QUANTITY_TAG = "__quantity__"
SEMVER_TAG = "__semver__"
_INT64 = (-(2**63), 2**63 - 1)
_QUANTITY_MESSAGE = ("quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")

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
    return {QUANTITY_TAG: f"{value.numerator}/{value.denominator}"}


def version_value(value: str | Version) -> dict[str, str]:
    """The runtime form of a Version (a version attribute or ``semver("...")``)."""
    version = Version.parse(value) if isinstance(value, str) else value
    return {SEMVER_TAG: str(version)}


@lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


@lru_cache(maxsize=4096)
def _version(text: str) -> Version:
    return Version.parse(text)


def tag_of(value: Any) -> str | None:
    if isinstance(value, Mapping) and len(value) == 1:
        if QUANTITY_TAG in value:
            return "quantity"
        if SEMVER_TAG in value:
            return "version"
    return None


class _Mismatch(ValueError):
    """An argument of the wrong runtime type; :func:`overload_errors` names the call."""


def _type_of(value: Any) -> str:
    """A runtime value's type as cel-go names it in ``no such overload: f(types)``."""
    kind = tag_of(value)
    if kind is not None:
        return "kubernetes.Quantity" if kind == "quantity" else "kubernetes.Semver"
    for python, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"),
                         (bytes, "bytes"), (list, "list"), (dict, "map")):
        if isinstance(value, python):
            return name
    return "null_type" if value is None else type(value).__name__


def overload_errors(name: str, impl: Any) -> Any:
    """`impl` with a wrong-typed argument reported as cel-go's dispatcher does."""
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except _Mismatch:
            raise ValueError(f"no such overload: {name}({', '.join(map(_type_of, args))})"
                             ) from None

    return call


def as_quantity(value: Any) -> Fraction:
    if tag_of(value) != "quantity":
        raise _Mismatch("expected a Quantity")
    return _fraction(value[QUANTITY_TAG])


def as_version(value: Any) -> Version:
    if tag_of(value) != "version":
        raise _Mismatch("expected a Semver")
    return _version(value[SEMVER_TAG])


def compare_values(a: Any, b: Any) -> int:
    kind = tag_of(a)
    if kind is None or kind != tag_of(b):
        raise _Mismatch("compareTo needs two Quantities or two Semvers")
    if kind == "version":
        return as_version(a).compare(as_version(b))
    x, y = as_quantity(a), as_quantity(b)
    return (x > y) - (x < y)


def values_equal(a: Any, b: Any) -> bool:
    """``a == b`` as cel-go has it (gpudra.dra.cel_equality): a Semver or Quantity on the left
    equals only its own type and refuses any other."""
    if a is None or b is None:
        return a is None and b is None  # types.Equal checks null first
    kind = tag_of(a)
    if kind is not None:
        if tag_of(b) != kind:
            raise ValueError("no such overload")
        return compare_values(a, b) == 0
    return cel_equal(a, b)


def in_constants(a: Any, items: list[Any]) -> bool:
    """``a in [constants…]`` as cel-go has it: a hash lookup, which a Semver cannot take."""
    if tag_of(a) == "version":
        raise ValueError(HASH_ERROR)
    return any(cel_equal(a, item) for item in items)


def make_quantity(text: str) -> dict[str, str]:
    return quantity_value(text)


def is_quantity(text: str) -> bool:
    return parse_quantity(text.strip()) is not None


def make_semver(text: str, normalize: bool = False) -> dict[str, str]:
    return {SEMVER_TAG: str(Version.parse(text, normalize))}


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        Version.parse(text, normalize)
    except ValueError:
        return False
    return True


def signed(value: int) -> int:
    """Go's int64(uint64): Kubernetes' major()/minor()/patch() of a version part >= 2**63."""
    return value - _UINT64 if value >= 2**63 else value


def as_int64(value: Fraction) -> int:
    if value.denominator != 1 or not _INT64[0] <= value.numerator <= _INT64[1]:
        raise ValueError("cannot convert value to integer")
    return value.numerator


def is_integer(q: Any) -> bool:
    value = as_quantity(q)
    return value.denominator == 1 and _INT64[0] <= value.numerator <= _INT64[1]


def as_float(q: Any) -> float:
    value = as_quantity(q)
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def quantity_sign(q: Any) -> int:
    value = as_quantity(q)
    return (value > 0) - (value < 0)


def _arith(sign: int) -> tuple[Callable[[Any, Any], dict[str, str]],
                              Callable[[Any, int], dict[str, str]]]:
    def quantity_op(a: Any, b: Any) -> dict[str, str]:
        return quantity_value(as_quantity(a) + sign * as_quantity(b))

    def int_op(a: Any, b: int) -> dict[str, str]:
        return quantity_value(as_quantity(a) + sign * b)

    return quantity_op, int_op


QUANTITY_ADD = _arith(1)
QUANTITY_SUB = _arith(-1)
