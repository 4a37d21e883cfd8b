"""One reading of `expires` for every `.gpudra.yaml` exception: a waiver and a vouch give the
same day, or the same error, for the same value (gpudra.results.expiry)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from gpudra.errors import ConfigError
from gpudra.results.expiry import parse_expires
from gpudra.results.vouches import parse_vouches
from gpudra.results.waivers import parse_waivers

BAD = "'expires' must be a date such as 2027-03-31"
# (what YAML gave, the day it means; None: never; BAD: a configuration error)
CASES: list[tuple[Any, Any]] = [
    (dt.date(2027, 3, 31), dt.date(2027, 3, 31)),
    ("2027-03-31", dt.date(2027, 3, 31)),
    (dt.datetime(2027, 3, 31, 23, 59, tzinfo=dt.UTC), dt.date(2027, 3, 31)),
    (None, None),
    ("next year", BAD),
    ("2027-02-30", BAD),
    (20270331, BAD),
    (["2027-03-31"], BAD),
    (True, BAD),
]


def _waiver_day(value: Any) -> dt.date | None:
    (waiver,) = parse_waivers("cfg", [{"kind": "Job", "rules": "all", "reason": "r",
                                       "expires": value}], {}, [None])
    return waiver.expires


def _vouch_day(value: Any) -> dt.date | None:
    (vouch,) = parse_vouches("cfg", [{"kind": "Job", "owner": "o", "reason": "r",
                                      "expires": value}])
    return vouch.expires


@pytest.mark.parametrize(("value", "day"), CASES, ids=repr)
@pytest.mark.parametrize("read", [lambda v: parse_expires("cfg", {"expires": v}),
                                  _waiver_day, _vouch_day],
                         ids=["expiry", "waiver", "vouch"])
def test_every_exception_reads_expires_one_way(read: Any, value: Any, day: Any) -> None:
    if day is BAD:
        with pytest.raises(ConfigError, match=f"^cfg.*: {BAD}$"):
            read(value)
    else:
        assert read(value) == day
