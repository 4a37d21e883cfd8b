"""Recorded run vs replayed run: every difference, each pointing at its first differing byte."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

CONTEXT_LINES = 3


def first_difference(recorded: str, found: str) -> str:
    """Where two texts first differ (offset, line, column) and a short unified diff there."""
    offset = next((i for i, (a, b) in enumerate(zip(recorded, found)) if a != b),
                  min(len(recorded), len(found)))
    line = recorded.count("\n", 0, offset) + 1
    column = offset - (recorded.rfind("\n", 0, offset) + 1) + 1
    diff = difflib.unified_diff(recorded.splitlines(keepends=True),
                                found.splitlines(keepends=True), "recorded", "replayed",
                                n=CONTEXT_LINES)
    shown = "".join(list(diff)[:40])
    return (f"first differing byte at offset {offset} (line {line}, column {column}): "
            f"recorded {recorded[offset:offset + 20]!r}, replayed {found[offset:offset + 20]!r}"
            f"\n{shown}")


def _value(name: str, recorded: object, found: object) -> Iterator[str]:
    if recorded == found:
        return
    if isinstance(recorded, str) and isinstance(found, str):
        yield f"{name}: {first_difference(recorded, found)}"
    else:  # a hashed output (or a file written on one side only)
        yield f"{name}: recorded {_short(recorded)}, replayed {_short(found)}"


def _short(value: object) -> str:
    if isinstance(value, str):
        return f"{len(value)} characters of text"
    return "no such file" if value is None else repr(value)


def differences(recorded: Mapping[str, object], found: Mapping[str, object]) -> list[str]:
    """Readable differences between two runs of one case; empty when they are identical."""
    problems: list[str] = []
    for key in ("argv", "stdin", "cluster", "exit", "stdout", "stderr"):
        problems += _value(key, recorded.get(key), found.get(key))
    files_then = recorded.get("files") or {}
    files_now = found.get("files") or {}
    assert isinstance(files_then, Mapping) and isinstance(files_now, Mapping)
    for path in sorted(files_then.keys() | files_now.keys()):
        if path not in files_now:
            problems.append(f"file {path}: recorded as written, not written now")
        elif path not in files_then:
            problems.append(f"file {path}: written now, not in the record")
        else:
            problems += _value(f"file {path}", files_then[path], files_now[path])
    return problems
