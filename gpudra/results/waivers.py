"""`.gpudra.yaml` `waivers:`: resource-scoped exceptions with a reason, an owner and an expiry.

A waiver selects objects (kind, namespace, name, or a path glob) and rules. Unlike the inline
`gpudra.io/ignore` annotation it lives in the platform team's config file, so `--strict` (which
ignores annotations) still honours it. An expired waiver suppresses nothing and is reported
itself (GPU902), with its owner, so an exception cannot outlive its promise silently.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from gpudra.errors import ConfigError
from gpudra.results.entries import entry_fields
from gpudra.results.expiry import parse_expires
from gpudra.results.model import Finding, Severity, Waived

EXPIRED_RULE = "GPU902"
META_RULES = frozenset({"GPU901", EXPIRED_RULE})  # `all` never waives problems with waivers
_KEYS = {"kind", "namespace", "name", "path", "rules", "reason", "owner", "expires"}
_SELECTORS = ("kind", "namespace", "name", "path")


@dataclass(frozen=True, slots=True)
class Waiver:
    rules: frozenset[str]        # upper-case rule ids, or {"all"}
    reason: str
    kind: str | None = None      # the selectors are globs (fnmatch, case-sensitive)
    namespace: str | None = None
    name: str | None = None
    path: str | None = None      # against the file relative to the config's directory
    owner: str | None = None
    expires: dt.date | None = None
    line: int | None = None      # where it is written in the config file

    def covers(self, rule: str) -> bool:
        return rule in self.rules or ("all" in self.rules and rule not in META_RULES)

    def selects(self, kind: str | None, namespace: str | None, name: str | None,
                file: str | None, base: Path | None) -> bool:
        wanted = ((self.kind, kind), (self.namespace, namespace), (self.name, name))
        if any(glob is not None and not fnmatchcase(value or "", glob) for glob, value in wanted):
            return False
        return self.path is None or any(fnmatchcase(p, self.path) for p in _paths(file, base))

    def expired_on(self, today: dt.date) -> bool:
        """A waiver is good through its `expires` day."""
        return self.expires is not None and today > self.expires

    def describe(self) -> str:
        parts = [f"{k}={v}" for k in _SELECTORS if (v := getattr(self, k)) is not None]
        return f"{', '.join(sorted(self.rules))} on {' '.join(parts)}"


@dataclass(frozen=True)
class WaiverSet:
    """The waivers of one run, judged on one day (injected: a test fixes the clock)."""

    waivers: tuple[Waiver, ...] = ()
    today: dt.date = dt.date.min
    base: Path | None = None     # the config file's directory: path globs are relative to it
    config_file: str | None = None
    strict: bool = False         # inline annotations suppress nothing (convert reads it)

    def waiver_for(self, rule: str, kind: str | None, namespace: str | None,
                   name: str | None, file: str | None) -> Waiver | None:
        """The first unexpired waiver of `rule` on this object, if any."""
        for waiver in self.waivers:
            if (waiver.covers(rule) and not waiver.expired_on(self.today)
                    and waiver.selects(kind, namespace, name, file, self.base)):
                return waiver
        return None

    def split(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[Waived]]:
        """Findings no waiver covers, and the waived ones with their waiver's reason."""
        kept: list[Finding] = []
        waived: list[Waived] = []
        for finding in findings:
            waiver = self.waiver_for(finding.rule, finding.kind, finding.namespace,
                                     finding.name, finding.file)
            if waiver is None:
                kept.append(finding)
            else:
                waived.append(Waived(finding, waiver.reason, waiver.owner,
                                     waiver.expires.isoformat() if waiver.expires else None))
        return kept, waived

    def expired(self, severity: Severity, hint: str) -> list[Finding]:
        """One GPU902 finding per expired waiver, at its place in the config file."""
        out = []
        for waiver in self.waivers:
            if not waiver.expired_on(self.today):
                continue
            owner = f"owner {waiver.owner}" if waiver.owner else "no owner named"
            out.append(Finding(
                rule=EXPIRED_RULE, severity=severity, file=self.config_file, line=waiver.line,
                message=f"waiver of {waiver.describe()} expired on {waiver.expires} "
                        f"({owner}; reason: {waiver.reason}); it no longer suppresses",
                hint=hint))
        return out


def _paths(file: str | None, base: Path | None) -> list[str]:
    if not file or file == "-":
        return []
    shown = PurePosixPath(Path(file).as_posix())
    out = [str(shown).removeprefix("./")]
    if base is not None:
        try:
            out.append(Path(file).resolve().relative_to(base.resolve()).as_posix())
        except (OSError, ValueError, RuntimeError):
            pass  # outside the config's directory: only the path as given can match
    return out


def parse_waivers(where: str, raw: Any, known_rules: Mapping[str, Any],
                  lines: list[int | None]) -> tuple[Waiver, ...]:
    """The `waivers:` list of a config file; every mistake is a ConfigError naming the entry."""
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: 'waivers' must be a list of entries")
    return tuple(_waiver(f"{where}: waivers[{i}]", entry, known_rules,
                         lines[i] if i < len(lines) else None)
                 for i, entry in enumerate(raw))


def _waiver(where: str, entry: Any, known: Mapping[str, Any], line: int | None) -> Waiver:
    raw = entry_fields(where, entry, _KEYS, "rules, reason and a selector")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigError(f"{where}: 'reason' is required: say why the exception is fine")
    selectors = {k: raw.get(k) for k in _SELECTORS}
    if all(v is None for v in selectors.values()):
        raise ConfigError(f"{where}: select objects with kind, namespace, name or path "
                          "(to turn a rule off everywhere, use `rules: {ID: disable}`)")
    for key, value in selectors.items():
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: '{key}' must be a string")
    expires = parse_expires(where, raw)
    owner = raw.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise ConfigError(f"{where}: 'owner' must be a string")
    return Waiver(_rules(where, raw.get("rules"), known), reason.strip(), owner=owner,
                  expires=expires, line=line, **selectors)


def _rules(where: str, raw: Any, known: Mapping[str, Any]) -> frozenset[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) for r in raw):
        raise ConfigError(f"{where}: 'rules' must list rule ids (or all)")
    out = set()
    for rule_id in raw:
        key = "all" if rule_id.lower() == "all" else rule_id.upper()
        if key != "all" and key not in known:
            raise ConfigError(f"{where}: unknown rule {rule_id!r} (see `gpudra rules`)")
        out.add(key)
    return frozenset(out)
