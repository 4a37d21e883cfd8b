"""Text from inputs, made safe to print: one line, no terminal escape sequences, no secrets.

Everything gpudra prints may come from a hostile manifest, server or kubeconfig: a name holding
`<ESC>[2J` drives the terminal that shows the report, a CR or LF lets a value start a line of
its own (where a CI runner reads `::error ...` as a command), and bidirectional overrides
reorder what a reader sees. Two ways to print such text, both reversible by a reader:

* `quote_name` for file names: as git prints them (core.quotePath), in double quotes with C
  escapes, so a diff header stays one `git apply` reads;
* `escape_text` for every other value (object names, namespaces, messages, contexts): the same
  escapes without the quotes, as kubectl escapes names in its tables.

`redact` removes credentials from text (a server URL's `user:password@`, a bearer token), and
`without_lone_surrogates` replaces what no output can encode.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any, TypeVar, cast

T = TypeVar("T")

# C0 and C1 controls, DEL, the Unicode line/paragraph separators, the bidirectional marks,
# overrides and isolates (which reorder what a reader sees) and lone surrogates (which no
# UTF-8 output can carry).
UNSAFE_BEYOND_ASCII = ("\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                       "\u2066-\u2069\ud800-\udfff")
UNSAFE = "\x00-\x1f" + UNSAFE_BEYOND_ASCII
_UNSAFE = re.compile(f"[{UNSAFE}]")
# ... plus what quoting itself uses.
_NEEDS_QUOTES = re.compile(f'[{UNSAFE}"\\\\]')
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_SURROGATE = re.compile("[\ud800-\udfff]")
# `scheme://user:password@host`: the userinfo of a URL (RFC 3986), however the text around it
# is quoted; and the value of an HTTP bearer or basic credential.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@\"'<>\\]+@")
_AUTH_VALUE = re.compile(r"\b((?i:bearer)\s+)[^\s\"'<>\\]+"
                         r"|\b(Basic\s+)(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}")
REDACTED = "***"


def quote_name(name: str) -> str:
    """`name` as is, or quoted and escaped when it holds a character that is unsafe to print."""
    if not _NEEDS_QUOTES.search(name):
        return name
    return '"' + _NEEDS_QUOTES.sub(_escape, name) + '"'


def escape_text(text: str) -> str:
    """`text` with every unsafe character written as its C escape (`\\n`, `\\x1b`, `\\u202e`);
    text without one is returned as it is."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escape, text)


def redact(text: str) -> str:
    """`text` without credentials: `https://admin:secret@host` -> `https://***@host`,
    `Bearer abc` -> `Bearer ***`."""
    if "@" in text:
        text = _USERINFO.sub(rf"\1{REDACTED}@", text)
    return _AUTH_VALUE.sub(lambda m: (m.group(1) or m.group(2)) + REDACTED, text)


def printable_line(text: str) -> str:
    """A message for stderr or a log: credentials redacted, unsafe characters escaped."""
    return escape_text(redact(text))


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate (a `\\ud800` escape in JSON) replaced by U+FFFD, as
    Go's encoding/json (and so the API server and kubectl) decodes it."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


# A JSON or YAML escape that can make one: only texts that hold it are walked.
SURROGATE_ESCAPE = re.compile(r"\\(?:u[dD][89a-fA-F]|U0000[dD][89a-fA-F])")


def replace_lone_surrogates(data: Any) -> Any:
    """Decoded JSON `data` with the lone surrogates of its strings (keys too) replaced by
    U+FFFD, in place: what Go's encoding/json gives the API server and kubectl for `"\\ud800"`.
    Iterative, as deep as the decoder went."""
    if isinstance(data, str):
        return without_lone_surrogates(data)
    stack = [data]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            if any(isinstance(k, str) and _SURROGATE.search(k) for k in container):
                fixed = {without_lone_surrogates(k) if isinstance(k, str) else k: v
                         for k, v in container.items()}
                container.clear()
                container.update(fixed)
            items: Any = container.items()
        elif isinstance(container, list):
            items = enumerate(container)
        else:
            continue
        for key, value in list(items):
            if isinstance(value, str):
                if _SURROGATE.search(value):
                    container[key] = without_lone_surrogates(value)
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return data


def has_lone_surrogate(data: Any) -> bool:
    """Whether a string of `data` (decoded JSON or YAML; keys too) holds a lone surrogate."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return True
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    known = _C_ESCAPES.get(char)
    if known is not None:
        return known
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# Fields that hold a file name: renderers print those with quote_name, which must see the name
# as it is (escaping it first would escape twice).
FILE_FIELDS = frozenset({"file"})
# Deeper than any report gpudra builds or merges; past it a value is printed by its escaped text.
_MAX_DEPTH = 100


def escaped(data: T) -> T:
    """`data` (records, tuples, lists, mappings) with every string in it passed through
    `escape_text`, except file names (`FILE_FIELDS`); enums and other values are kept. The one
    pass that makes a result safe for a text format, whatever field a renderer prints."""
    return cast(T, _escaped(data, 0))


def _escaped(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return value if isinstance(value, enum.Enum) else escape_text(value)
    if value is None or isinstance(value, (int, float, enum.Enum)):
        return value
    if depth > _MAX_DEPTH:
        return escape_text(str(value))
    if isinstance(value, Mapping):
        return {_escaped(k, depth + 1):
                v if k in FILE_FIELDS else _escaped(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        items = [_escaped(v, depth + 1) for v in value]
        if hasattr(value, "_fields"):  # a named tuple
            return type(value)(*items)
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, (set, frozenset)):
        return type(value)(_escaped(v, depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _escaped(getattr(value, f.name), depth + 1)
                   for f in dataclasses.fields(value) if f.init and f.name not in FILE_FIELDS}
        return dataclasses.replace(value, **changes)
    return value
