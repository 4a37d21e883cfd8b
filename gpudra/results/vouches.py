"""`.gpudra.yaml` `vouch:`: kinds whose controllers a user vouches do not read the GPU limit.

convert blocks a workload of a custom resource that gpudra's controller registry does not list
(gpudra.controllers.registry): nobody has read its controller, and a controller that derives
something from `nvidia.com/gpu` (a process count, a hostfile, an image) runs the converted
workload differently. A vouch is the reviewed exception, shaped like a waiver: which kind (and
optionally which API group or group/version), who vouches (`owner`), why (`reason`), and until
when (`expires`, optional; good through that day). An expired vouch lets nothing through, and
convert says whose it was.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from gpudra.errors import ConfigError
from gpudra.results.entries import entry_fields
from gpudra.results.expiry import parse_expires

_KEYS = frozenset({"kind", "apiVersion", "owner", "reason", "expires"})


@dataclass(frozen=True, slots=True)
class Vouch:
    kind: str
    owner: str
    reason: str
    api_version: str | None = None  # "group/version", or "group" for every version
    expires: dt.date | None = None

    def selects(self, api_version: str, kind: str) -> bool:
        if kind != self.kind:
            return False
        if self.api_version is None:
            return True
        return api_version == self.api_version or \
            api_version.rpartition("/")[0] == self.api_version

    def expired_on(self, today: dt.date) -> bool:
        return self.expires is not None and today > self.expires

    def describe(self) -> str:
        until = f", until {self.expires.isoformat()}" if self.expires else ""
        return f"vouched for by {self.owner} in .gpudra.yaml ({self.reason}{until})"


@dataclass(frozen=True)
class VouchSet:
    """The vouches of one run, judged on one day (injected: a test fixes the clock)."""

    vouches: tuple[Vouch, ...] = ()
    today: dt.date = dt.date.min

    def vouch_for(self, api_version: str, kind: str) -> Vouch | None:
        """The first unexpired vouch for this kind, if any."""
        for vouch in self.vouches:
            if vouch.selects(api_version, kind) and not vouch.expired_on(self.today):
                return vouch
        return None

    def expired_for(self, api_version: str, kind: str) -> Vouch | None:
        """An expired vouch for this kind (to say why it no longer lets the kind through)."""
        for vouch in self.vouches:
            if vouch.selects(api_version, kind) and vouch.expired_on(self.today):
                return vouch
        return None


def parse_vouches(where: str, raw: Any) -> tuple[Vouch, ...]:
    """The `vouch:` list of a config file; every mistake is a ConfigError naming the entry."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: 'vouch' must be a list of entries")
    return tuple(_vouch(f"{where}: vouch[{i}]", entry) for i, entry in enumerate(raw))


def _vouch(where: str, entry: Any) -> Vouch:
    raw = entry_fields(where, entry, _KEYS, "kind, owner and reason")
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind.strip() or any(c in kind for c in "*?[ "):
        raise ConfigError(f"{where}: 'kind' must name one kind (no globs): gpudra trusts a "
                          "vouch for that controller only")
    texts = {}
    reasons = {"owner": "who answers for it",
               "reason": "why its controller does not read nvidia.com/gpu"}
    for key, why in reasons.items():
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: '{key}' is required: say {why}")
        texts[key] = " ".join(value.split())
    api_version = raw.get("apiVersion")
    if api_version is not None and (not isinstance(api_version, str) or not api_version
                                    or api_version.count("/") > 1 or " " in api_version):
        raise ConfigError(f"{where}: 'apiVersion' must be group/version or a group, such as "
                          "example.com/v1")
    return Vouch(kind, texts["owner"], texts["reason"], api_version, parse_expires(where, raw))

