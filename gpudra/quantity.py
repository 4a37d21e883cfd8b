"""Kubernetes quantities, as far as device counts need them: exact, never float."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
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
    return DeviceCount(raw, value=int(value))


def parse_quantity(text: str) -> Fraction | None:
    """Parse a Kubernetes quantity string exactly; None when it is not one."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    base = Fraction(number)
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    return base * Fraction(10) ** int(suffix[1:])
