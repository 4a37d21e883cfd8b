"""Consumable capacity (KEP-5075, DRAConsumableCapacity): what one allocation takes from a
device, and whether it still fits.

Mirrors kubernetes/dynamic-resource-allocation @ kubernetes-1.36.2,
``structured/internal/incubating/consumable_capacity.go`` (``CmpRequestOverCapacity``,
``calculateConsumedCapacity``, ``violatesPolicy``), which the scheduler runs for every candidate
device while the gate is on (beta, on by default from 1.36):

1. a request naming a capacity the device does not have makes the device ineligible;
2. per device capacity: nothing requested -> ``requestPolicy.default``, else the full value;
   requested without a policy -> the amount as given; ``validRange`` -> raised to ``min``,
   rounded up to ``min + n*step``; ``validValues`` -> the smallest value >= the request;
3. the amount violates the policy (not the default, and above ``max``, off the step grid, or not
   a valid value) -> ineligible;
4. what is already consumed plus this amount must not exceed the capacity value.

For a device without ``allowMultipleAllocations`` nothing is ever "consumed" (the device is taken
whole), so the rules only filter: ``capacity.requests`` must fit into the device.

Arithmetic is exact (fractions). Kubernetes rounds step ranges with integer ``Value()`` (or
milli-units with the 1.37 DRAFractionalCapacityRange gate); the two agree for integer
quantities, which is what the NVIDIA driver publishes (bytes, counts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from gpudra.plan.inventory import Device, RequestPolicy


def consumption(device: Device, requested: Mapping[str, Fraction],
                already: Mapping[str, Fraction] | None = None) -> dict[str, Fraction] | None:
    """What allocating `device` for a request with ``capacity.requests`` = `requested` consumes
    per capacity, given `already` consumed; None when the device cannot serve the request."""
    if any(name not in device.capacity for name in requested):
        return None
    out: dict[str, Fraction] = {}
    for name, value in device.capacity.items():
        policy = device.request_policies.get(name)
        amount = _amount(requested.get(name), value, policy)
        if _violates(amount, policy):
            return None
        if (already or {}).get(name, Fraction(0)) + amount > value:
            return None
        out[name] = amount
    return out


def _amount(requested: Fraction | None, value: Fraction, policy: RequestPolicy | None) -> Fraction:
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.has_range:
        assert policy.minimum is not None
        if requested < policy.minimum:
            return policy.minimum
        if policy.step is None or policy.step <= 0:
            return requested
        steps = math.ceil((requested - policy.minimum) / policy.step)
        return policy.minimum + policy.step * steps
    if policy.valid_values:
        for valid in policy.valid_values:
            if requested <= valid:
                return valid
    return requested


def _violates(amount: Fraction, policy: RequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.has_range:
        if policy.maximum is not None and amount > policy.maximum:
            return True
        if policy.step is not None and policy.step > 0 and policy.minimum is not None:
            return (amount - policy.minimum) % policy.step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False
