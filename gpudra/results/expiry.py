"""The `expires` of a `.gpudra.yaml` exception (a waiver, a vouch): one reading for both.

YAML gives a date (`expires: 2027-03-31`), a datetime (`2027-03-31T12:00:00Z`) or a string
(`"2027-03-31"`); each means that day, and the exception is good through it. Anything else
is a configuration error naming where it was written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from gpudra.errors import ConfigError


def parse_expires(where: str, raw: Mapping[str, Any]) -> dt.date | None:
    """The day `raw`'s `expires` names (None: it never expires)."""
    expires = raw.get("expires")
    if isinstance(expires, str):
        try:
            expires = dt.date.fromisoformat(expires)
        except ValueError:
            raise ConfigError(f"{where}: 'expires' must be a date such as 2027-03-31") from None
    if isinstance(expires, dt.datetime):
        expires = expires.date()
    if expires is not None and not isinstance(expires, dt.date):
        raise ConfigError(f"{where}: 'expires' must be a date such as 2027-03-31")
    return expires
