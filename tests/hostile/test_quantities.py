"""Item 12: device counts the API server rejects (or cannot hold) are invalid, never a count.

kube-apiserver parses quantities byte by byte with ASCII digits only, so a fullwidth `１` is
not a quantity; it keeps them in milli-units of an int64 and checks `MilliValue() % 1000`, so
a count whose milli value overflows is rejected or stored as another number (docs/facts.md).
"""

from __future__ import annotations

import time

import pytest

from gpudra.k8s.quantity import MAX_DEVICE_COUNT, parse_device_count, parse_quantity


@pytest.mark.parametrize("raw", ["１", "２", "1０", "٣", "9223372036854775808",
                                 "99999999999999999999", "9223372036854776",
                                 str(MAX_DEVICE_COUNT + 1), MAX_DEVICE_COUNT + 1, 2**64, "16Ei",
                                 "1e999999999", "1e19"])
def test_counts_kubernetes_rejects_or_cannot_hold_are_invalid(raw: object) -> None:
    started = time.monotonic()
    count = parse_device_count(raw)
    assert count.value is None and count.invalid, count
    assert time.monotonic() - started < 1  # never expanded digit by digit


@pytest.mark.parametrize("raw, value", [("1", 1), (8, 8), ("1e3", 1000), ("1k", 1000),
                                        (str(MAX_DEVICE_COUNT), MAX_DEVICE_COUNT),
                                        (" 2 ", 2), ("1000m", 1)])
def test_counts_kubernetes_accepts_still_parse(raw: object, value: int) -> None:
    assert parse_device_count(raw).value == value


@pytest.mark.parametrize("text", ["１Gi", "1e-999999999", "1e999999999", "1Gi\n"])
def test_quantities_beyond_any_resource_are_refused_quickly(text: str) -> None:
    started = time.monotonic()
    assert parse_quantity(text) is None
    assert time.monotonic() - started < 1
