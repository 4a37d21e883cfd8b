"""The one check every `.gpudra.yaml` list entry of `results` passes first (a waiver, a vouch):
it is a mapping, and it has no key but those of its kind, so a typo is an error naming the
entry, never an entry that silently selects less."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from gpudra.errors import ConfigError


def entry_fields(where: str, raw: Any, keys: Set[str], expected: str) -> Mapping[Any, Any]:
    """`raw` as a mapping of known keys; a ConfigError at `where` otherwise. `expected` says
    what the entry needs ("kind, owner and reason")."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping with {expected}")
    unknown = set(map(str, raw)) - keys
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(sorted(unknown))}; expected "
                          f"{', '.join(sorted(keys))}")
    return raw
