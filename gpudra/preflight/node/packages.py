"""Installed package versions from a host root's package database, without running dpkg/rpm.

* dpkg (Debian, Ubuntu): `/var/lib/dpkg/status`, stanzas of `Field: value` lines separated by
  blank lines; a package is installed when its `Status` ends in `installed`.
* rpm (RHEL 9, Fedora, Amazon Linux 2023, SUSE): `rpmdb.sqlite` under `/var/lib/rpm` or
  `/usr/lib/sysimage/rpm`; its `Packages` table holds one header blob per package: two
  big-endian 32-bit counts (index entries, data bytes), the 16-byte index entries (tag, type,
  offset, count) and the data; NAME, VERSION and RELEASE are tags 1000-1002, strings (type 6).
  The older Berkeley DB `Packages` file is not read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from gpudra.preflight.node.host import Host, HostReadError

DPKG_STATUS = "/var/lib/dpkg/status"
RPM_DATABASES = ("/var/lib/rpm/rpmdb.sqlite", "/usr/lib/sysimage/rpm/rpmdb.sqlite")
_NAME, _VERSION, _RELEASE = 1000, 1001, 1002
_STRING = 6


@dataclass(frozen=True, slots=True)
class InstalledPackage:
    name: str
    version: str  # as the database has it: `1.7.27-1`, `2:1.7.24~ds1-1ubuntu1`
    source: str   # which database: `dpkg status (/var/lib/dpkg/status)`


def find_installed(host: Host, names: Iterable[str]) -> InstalledPackage | None:
    """The first of `names` (in order) installed according to the host's databases."""
    wanted = tuple(names)
    found = {p.name: p for p in (*_dpkg(host, wanted), *_rpm(host, wanted))}
    return next((found[n] for n in wanted if n in found), None)


def _dpkg(host: Host, names: tuple[str, ...]) -> list[InstalledPackage]:
    try:
        text = host.read_text(DPKG_STATUS)
    except HostReadError:
        return []
    out = []
    for stanza in (text or "").split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line[:1].isspace():
                fields[key] = value.strip()
        if fields.get("Package") in names and fields.get("Status", "").endswith(" installed") \
                and fields.get("Version"):
            out.append(InstalledPackage(fields["Package"], fields["Version"],
                                        f"dpkg status ({DPKG_STATUS})"))
    return out


def _rpm(host: Host, names: tuple[str, ...]) -> list[InstalledPackage]:
    for database in RPM_DATABASES:
        if not host.exists(database):
            continue
        try:
            import sqlite3  # stdlib, but optional in some Python builds
        except ImportError:
            return []
        try:
            local = host.local_path(database)
            if not local.is_file():  # a FIFO or a device: sqlite would wait on it
                continue
            uri = local.as_uri() + "?mode=ro&immutable=1"
            with sqlite3.connect(uri, uri=True) as connection:
                rows = connection.execute("SELECT blob FROM Packages").fetchall()
        except (sqlite3.Error, HostReadError, OSError, ValueError):
            continue
        out = []
        for (blob,) in rows:
            tags = _header_strings(bytes(blob))
            if tags.get(_NAME) in names and tags.get(_VERSION):
                release = f"-{tags[_RELEASE]}" if tags.get(_RELEASE) else ""
                out.append(InstalledPackage(tags[_NAME], tags[_VERSION] + release,
                                            f"rpm database ({database})"))
        return out
    return []


def _header_strings(blob: bytes) -> dict[int, str]:
    """NAME, VERSION and RELEASE of one rpm header blob; {} for a blob that is not one."""
    try:
        entries, size = struct.unpack_from(">II", blob, 0)
        data = 8 + 16 * entries
        if entries > 100_000 or data + size > len(blob):
            return {}
        out = {}
        for i in range(entries):
            tag, kind, offset, _ = struct.unpack_from(">iiii", blob, 8 + 16 * i)
            if tag in (_NAME, _VERSION, _RELEASE) and kind == _STRING and 0 <= offset < size:
                start = data + offset
                end = blob.find(b"\0", start, data + size)
                out[tag] = blob[start:end if end >= 0 else data + size].decode("utf-8",
                                                                               "replace")
        return out
    except struct.error:
        return {}
