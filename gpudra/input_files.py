"""The files gpudra reads whole besides manifests: reports to merge, baselines, .gpudra.yaml.

Each is untrusted. Only a regular file is read (a FIFO would block, /dev/zero never end), up
to a size its readers choose, and JSON is accepted only as data the code after it can hold:
nested at most MAX_JSON_DEPTH levels, numbers within MAX_JSON_NUMBER, strings of whole
characters. What is refused raises with a one-line reason; the caller names the file.
"""

from __future__ import annotations

import os
from typing import Any

from gpudra.errors import UnreadableInputError
from gpudra.regular_file import NotRegularFileError, open_regular, read_bounded

# gpudra's own JSON files are at most six levels deep (clusters[].summary.namespaces[].x);
# 64 leaves room for what a later version adds while keeping every walk of the data (the
# schema validator recurses several Python frames per level) far from Python's recursion limit.
MAX_JSON_DEPTH = 64
# A count or line number past int64 is no count any program wrote: Kubernetes and orjson stop
# there too. orjson reads an integer past 64 bits as a float, so floats are held to it as well.
MAX_JSON_NUMBER = 2**63 - 1


def read_small(path: str, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them. Raises
    UnreadableInputError, `PATH: cannot read: REASON`."""
    try:
        fd, _ = open_regular(path)
    except NotRegularFileError:
        raise UnreadableInputError(f"{path}: cannot read: not a regular file (a device, "
                                   "FIFO or socket is never read)") from None
    except OSError as exc:
        raise UnreadableInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = read_bounded(fd, limit)
        if len(data) > limit:
            raise UnreadableInputError(f"{path}: cannot read: larger than "
                                       f"{_size(limit)}, the most gpudra reads from it")
        return data
    except OSError as exc:
        raise UnreadableInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


def decode_json(data: bytes) -> Any:
    """Plain JSON data (dicts, lists, str, int, float, bool, None) within the limits above.
    Raises ValueError with a one-line reason (`not JSON: ...` or `at $.a[0]: ...`)."""
    import orjson  # only the commands that read these files load it

    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:  # also lone surrogates, bad UTF-8, depth past 1024
        raise ValueError(f"not JSON: {exc}") from None
    _check_plain(value)
    return value


def _check_plain(value: Any) -> None:
    """Iterative, so that the check itself cannot exhaust the stack."""
    if not isinstance(value, (dict, list)):
        _check_number(value, ())
        return
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= MAX_JSON_DEPTH:
            raise ValueError(f"at {json_path(path)}: nested deeper than {MAX_JSON_DEPTH} levels")
        for key, child in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(child, (dict, list)):
                stack.append((child, (*path, key)))
            elif isinstance(child, (int, float)):
                _check_number(child, (*path, key))


def _check_number(value: Any, path: tuple[str | int, ...]) -> None:
    if isinstance(value, (int, float)) and abs(value) > MAX_JSON_NUMBER:
        raise ValueError(f"at {json_path(path)}: the number {_short(value)} is larger than "
                         f"any gpudra reads (2**63 - 1)")


def _short(value: int | float) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def json_path(path: tuple[str | int, ...]) -> str:
    """`$.summary.namespaces[0]`, as msgspec's validation errors spell a place; the middle of
    a deep place is elided to keep the message one short line."""
    parts = [f"[{part}]" if isinstance(part, int) else f".{_key(part)}" for part in path]
    if len(parts) > 8:
        parts = [*parts[:4], "...", *parts[-3:]]
    return "$" + "".join(parts)


def _key(key: str) -> str:
    return key if len(key) <= 40 else f"{key[:37]}..."
