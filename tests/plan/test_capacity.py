"""Consumable capacity: what an allocation consumes, mirroring the structured allocator."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpudra.plan.capacity import consumption
from gpudra.plan.inventory import Device, RequestPolicy

MI, GI = 2**20, 2**30
F = Fraction
RANGE = RequestPolicy(F(0), (), F(0), F(40 * GI), F(MI))  # --consumable-shares=unlimited
MEMORY_MODE = RequestPolicy(F(40 * GI), (), F(MI), F(40 * GI), F(MI))  # =memory
VALUES = RequestPolicy(F(1), (F(1), F(2), F(4)))


def device(policies: dict[str, RequestPolicy] | None = None, **capacity: int) -> Device:
    return Device("d.example.com", "p", "dev", "n", capacity={k: F(v) for k, v in capacity.items()},
                  allow_multiple_allocations=True, request_policies=policies or {})


@pytest.mark.parametrize("dev, requested, already, expected", [
    # no policy: nothing requested takes everything; a request takes what it asks for
    (device(memory=40 * GI), {}, None, {"memory": F(40 * GI)}),
    (device(memory=40 * GI), {}, {"memory": F(1)}, None),
    (device(memory=40 * GI), {"memory": F(10 * GI)}, {"memory": F(30 * GI)},
     {"memory": F(10 * GI)}),
    (device(memory=40 * GI), {"memory": F(11 * GI)}, {"memory": F(30 * GI)}, None),
    # a capacity the device does not have makes it ineligible
    (device(memory=40 * GI), {"shares": F(1)}, None, None),
    # validRange: default when unrequested, raised to min, rounded up to the step, max enforced
    (device({"memory": RANGE}, memory=40 * GI), {}, None, {"memory": F(0)}),
    (device({"memory": RANGE}, memory=40 * GI), {"memory": F(MI + 1)}, None, {"memory": F(2 * MI)}),
    (device({"memory": RANGE}, memory=40 * GI), {"memory": F(41 * GI)}, None, None),
    (device({"memory": MEMORY_MODE}, memory=40 * GI), {}, None, {"memory": F(40 * GI)}),
    (device({"memory": MEMORY_MODE}, memory=40 * GI), {"memory": F(0)}, None, {"memory": F(MI)}),
    # validValues: the smallest valid value >= the request; above all of them is a violation
    (device({"s": VALUES}, s=4), {"s": F(3)}, None, {"s": F(4)}),
    (device({"s": VALUES}, s=4), {"s": F(5)}, None, None),
    (device({"s": VALUES}, s=4), {}, {"s": F(3)}, {"s": F(1)}),
    (device({"s": VALUES}, s=4), {}, {"s": F(4)}, None),
    # every capacity of the device is consumed, requested or not
    (device({"memory": RANGE}, memory=40 * GI, engines=2), {"memory": F(GI)}, None,
     {"memory": F(GI), "engines": F(2)}),
])
def test_consumption(dev: Device, requested: dict, already: dict | None,
                     expected: dict | None) -> None:
    assert consumption(dev, requested, already) == expected
