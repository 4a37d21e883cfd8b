"""Read one TOML file from the host: its data, or one line saying why not."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.objects import dig
from gpudra.preflight.node.host import Host, HostReadError


@dataclass(frozen=True, slots=True)
class TomlFile:
    path: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file that could not be used. `unreadable` problems (permission, I/O) mean gpudra could
    not look; the others (bad syntax, a missing import) are what the daemon will also hit."""

    path: str
    message: str
    unreadable: bool = False
    fix: str | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def read_toml(host: Host, path: str) -> TomlFile | FileProblem | None:
    """None when the file does not exist."""
    try:
        text = host.read_text(path)
    except HostReadError as exc:
        special = exc.reason.startswith("not a regular file")  # a FIFO, device or socket
        return FileProblem(path, f"cannot read: {exc.reason}", unreadable=True,
                           fix=f"make {path} a regular file (or remove it)" if special else None)
    if text is None:
        return None
    try:
        return TomlFile(path, tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        return FileProblem(path, _syntax_error(str(exc), text))


_POSITION_RE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


def _syntax_error(message: str, text: str) -> str:
    """tomllib ends its message with "(at line N, column M)" or "(at end of document)"; put
    the position first so every syntax error names its line."""
    match = _POSITION_RE.search(message)
    if match is None:
        return f"not valid TOML: {message}"
    reason = message[:match.start()]
    if match.group(1):
        return f"not valid TOML at line {match.group(1)}, column {match.group(2)}: {reason}"
    last_line = max(1, len(text.splitlines()))
    return f"not valid TOML at line {last_line} (end of file): {reason}"


def table(data: Mapping[str, Any], *keys: str) -> Mapping[str, Any] | None:
    """The nested table at `keys`, or None if a step is missing or not a table."""
    found = dig(data, *keys)
    return found if isinstance(found, Mapping) else None
