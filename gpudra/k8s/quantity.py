"""Kubernetes quantities, as far as device counts need them: exact, never float."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

# ASCII digits only and no trailing newline, as kube-apiserver's byte-by-byte parser reads them:
# Python's \d would take a fullwidth "１" and $ would accept "1\n".
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")
# Kubernetes holds a quantity in milli-units of an int64 and validates a count with
# `MilliValue() % 1000`: past 9,223,372,036,854,775 devices the milli value overflows, and the
# API server rejects the count or stores another number (docs/facts.md).
MAX_DEVICE_COUNT = (2**63 - 1) // 1000
# Exact arithmetic would expand 1e999999999 digit by digit (minutes, gigabytes); nothing a
# resource can hold is within a factor 10**64 of such a value, so such exponents are refused.
MAX_EXPONENT = 64
_BINARY: dict[str, int] = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: dict[str, Fraction | int] = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
# ${GPUS}, $(GPUS), $GPUS, {{ .Values.gpu }}, <GPUS>, __GPUS__: values filled in by some tool later.
_TEMPLATED = re.compile(r"\{\{|\$\{|\$\(|^\$[A-Za-z_]|^<[^>]+>$|^__\w+__$")


@dataclass(frozen=True, slots=True)
class DeviceCount:
    """A device quantity as written. Exactly one of `value`, `templated`, `invalid` holds."""

    raw: Any
    value: int | None = None
    templated: bool = False
    invalid: str | None = None


def parse_device_count(raw: Any) -> DeviceCount:
    """Extended resources must be whole, non-negative numbers (the API server enforces it)."""
    if isinstance(raw, bool) or raw is None:
        return DeviceCount(raw, invalid="not a number")
    if isinstance(raw, int):
        return _whole(raw, Fraction(raw))
    if isinstance(raw, float):
        return _whole(raw, Fraction(raw)) if raw == raw and abs(raw) != float("inf") else \
            DeviceCount(raw, invalid="not a number")
    if not isinstance(raw, str):
        return DeviceCount(raw, invalid="not a number")
    text = raw.strip()
    if _TEMPLATED.search(text):
        return DeviceCount(raw, templated=True)
    value = parse_quantity(text)
    if value is None:
        return DeviceCount(raw, invalid="not a valid quantity")
    return _whole(raw, value)


def _whole(raw: Any, value: Fraction) -> DeviceCount:
    if value < 0:
        return DeviceCount(raw, invalid="negative")
    if value.denominator != 1:
        return DeviceCount(raw, invalid="not a whole number")
    if value > MAX_DEVICE_COUNT:
        return DeviceCount(raw, invalid="too large for Kubernetes (at most "
                                        f"{MAX_DEVICE_COUNT:,} devices)")
    return DeviceCount(raw, value=int(value))


def parse_quantity(text: str) -> Fraction | None:
    """Parse a Kubernetes quantity string exactly; None when it is not one (or its exponent is
    beyond MAX_EXPONENT)."""
    match = _QUANTITY.fullmatch(text)
    if not match:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    base = Fraction(number)
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    return base * Fraction(10) ** exponent if abs(exponent) <= MAX_EXPONENT else None
