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
import functools
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

T = TypeVar("T")

# C0 and C1 controls, DEL, the Unicode line/paragraph separators, the bidirectional marks,
# overrides and isolates (which reorder what a reader sees) and lone surrogates (which no
# UTF-8 output can carry).
UNSAFE_BEYOND_ASCII = ("\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                       "\u2066-\u2069\ud800-\udfff")
UNSAFE = "\x00-\x1f" + UNSAFE_BEYOND_ASCII
# Patterns are compiled on first use (`_compiled`): the CLI imports this module on every run.
_UNSAFE = f"[{UNSAFE}]"
# ... plus what quoting itself uses.
_NEEDS_QUOTES = f'[{UNSAFE}"\\\\]'
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_SURROGATE = "[\ud800-\udfff]"
# `scheme://user:password@host`: the userinfo of a URL (RFC 3986), however the text around it
# is quoted; and the value of an HTTP bearer or basic credential. None of them spans a line
# break (every character `str.splitlines` breaks at is `\s`): a "Bearer" ending one line of a
# diff must not make the next line's start its token (the `+` of a diff line eaten). A token
# YAML folds onto the next line is redacted there (`_redact_continuations`).
# Userinfo runs to the last `@` before the host (Go's net/url takes `'` and `@` in it).
_USERINFO = r"://[^/?#\s\"<>\\]+@"
# A token holds a colon only followed by more of it: `bearer Bearer:` is a YAML key, kept one.
_AUTH_VALUE = (r"\b((?i:bearer)[ \t]+)(?:[^\s\"'<>\\:]|:(?=[^\s\"'<>\\]))+"
               r"|\b(Basic[ \t]+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
# The line breaks of `str.splitlines`.
_BREAK = "\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]"
# An auth word ending a line, and the token a continuation line starts with: a whole word of
# RFC 6750's b64token characters (never a YAML key: no colon), after a diff's `+`/`-`/` `
# marker and the line's indentation.
_AUTH_AT_END = rf"\b(?:(?i:bearer)|Basic)[ \t]*(?:{_BREAK})"
_AUTH_WORD_AT_END = r"\b((?i:bearer)|Basic)[ \t]*$"
_CONTINUATION = r"([+ -]?([ \t]*))([A-Za-z0-9._~+/-]+=*)(?=[ \t]|$)"
_LINE_INDENT = r"[+ -]?([ \t]*)"
_BASIC_TOKEN = r"[A-Za-z0-9+/]{8,}={0,2}$"
# Within one decoded string (a JSON or YAML value, not a printed document) the token may
# follow its auth word across any whitespace: YAML's `value: Bearer` + an indented next line.
# The token starts with a letter or digit: a diff's `+`/`-` marker after a line ending in
# "Bearer" (a diff held as a string of `-o json`) is no token.
_AUTH_VALUE_ACROSS = (r"\b((?i:bearer)\s+)[A-Za-z0-9][A-Za-z0-9._~+/-]*=*(?!\S)"
                      r"|\b(Basic\s+)([A-Za-z0-9+/]{8,}={0,2})(?!\S)")
REDACTED = "***"


def quote_name(name: str) -> str:
    """`name` as is, or quoted and escaped when it holds a character that is unsafe to print."""
    needs_quotes = _compiled(_NEEDS_QUOTES)
    if not needs_quotes.search(name):
        return name
    return '"' + needs_quotes.sub(_escape, name) + '"'


STDIN_NAME = "<stdin>"  # how the human formats name standard input, read as the path `-`


def file_name(name: str) -> str:
    """A file as the human formats show it: `<stdin>` for `-`, else quote_name's form
    (issue 36, item 5: a bare `-` read as a missing value)."""
    return STDIN_NAME if name == "-" else quote_name(name)


def escape_text(text: str) -> str:
    """`text` with every unsafe character written as its C escape (`\\n`, `\\x1b`, `\\u202e`);
    text without one is returned as it is."""
    unsafe = _compiled(_UNSAFE)
    if not unsafe.search(text):
        return text
    return unsafe.sub(_escape, text)


def redact(text: str) -> str:
    """`text` without credentials: `https://admin:secret@host` -> `https://***@host`,
    `Bearer abc` -> `Bearer ***`."""
    # Each pattern runs only over text that holds its literal part: reports run to 30 MB.
    if "@" in text and "://" in text:
        text = _compiled(_USERINFO).sub(f"://{REDACTED}@", text)
    if _has_auth_word(text):
        text = _compiled(_AUTH_VALUE).sub(_kept_auth_word, text)
        if _compiled(_AUTH_AT_END).search(text):
            text = _redact_continuations(text)
    return text


def _kept_auth_word(match: re.Match[str]) -> str:
    if match.group(2) is not None and not is_basic_credential(match.group(3)):
        return match.group()
    return (match.group(1) or match.group(2)) + REDACTED


def is_basic_credential(token: str) -> bool:
    """Whether the word after `Basic` is a credential: base64 of `user:password` (RFC 7617),
    or a word that holds a digit, `+`, `/` or `=` (no English word does: `Basic English`)."""
    if _compiled("[0-9+/=]").search(token):
        return True
    try:
        import base64  # only when a `Basic` word is met: not on every command's start-up

        return b":" in base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except ValueError:
        return False


def _redact_continuations(text: str) -> str:
    """`text` with the token that continues a line ending in `Bearer`/`Basic` redacted: the
    next line is a continuation when it is more indented (after a diff marker `+`/`-`/` `)
    and starts with a whole token word (no `key:`, no `# comment`). The marker, indentation
    and line breaks are kept, so a diff stays a diff with as many lines."""
    lines = text.splitlines(keepends=True)
    for number in range(len(lines) - 1):
        body = _without_break(lines[number])
        auth = _compiled(_AUTH_WORD_AT_END).search(body)
        if auth is None:
            continue
        following = lines[number + 1]
        next_body = _without_break(following)
        token = _compiled(_CONTINUATION).match(next_body)
        if token is None or len(token.group(2)) <= _indent(body):
            continue
        if auth.group(1) == "Basic" and not (_compiled(_BASIC_TOKEN).match(token.group(3))
                                             and is_basic_credential(token.group(3))):
            continue
        lines[number + 1] = (token.group(1) + REDACTED + next_body[token.end():]
                             + following[len(next_body):])
    return "".join(lines)


def _without_break(line: str) -> str:
    return _compiled(f"(?:{_BREAK})$").sub("", line, count=1)


def _indent(body: str) -> int:
    match = _compiled(_LINE_INDENT).match(body)
    return len(match.group(1)) if match else 0


def redact_value(text: str) -> str:
    """A decoded string (a JSON or YAML value) without credentials: `redact`, and a token
    separated from its `Bearer`/`Basic` by any whitespace, line breaks included."""
    text = redact(text)
    if _has_auth_word(text):
        text = _compiled(_AUTH_VALUE_ACROSS).sub(_kept_auth_word, text)
    return text


def may_hold_credential(text: str) -> bool:
    """Whether `text` holds what `redact` looks for (False: `redact` keeps it as it is)."""
    return ("@" in text and "://" in text) or _has_auth_word(text)


def _has_auth_word(text: str) -> bool:
    # Any case of "bearer" (HTTP auth schemes are case-insensitive; `BeArEr tok` too).
    return "Basic" in text or _compiled("(?i:bearer)").search(text) is not None


def redacted_data(data: Any) -> Any:
    """Decoded JSON `data` (dicts, lists, tuples, scalars) copied with every string in it, keys
    too, passed through `redact`: what a data format does before it serializes, since an
    encoder's escapes (`\\u00e9`, `\\"`) hide a credential from `redact` run over its text.
    Iterative, as deep as the data goes; tuples come back as lists (JSON arrays)."""
    root: list[Any] = [data]
    stack: list[tuple[Any, Any]] = [(root, 0)]  # (container, key) of a value to redact
    while stack:
        container, key = stack.pop()
        value = container[key]
        if isinstance(value, str):
            container[key] = redact_value(value)
        elif isinstance(value, dict):
            copy = _redacted_keys(value)
            container[key] = copy
            stack.extend((copy, k) for k in copy)
        elif isinstance(value, (list, tuple)):
            items = list(value)
            container[key] = items
            stack.extend((items, index) for index in range(len(items)))
    return root[0]


def _redacted_keys(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """`mapping` with its string keys redacted. Two keys that redact to the same text both stay:
    the later ones numbered (`https://***@h`, `https://***@h (2)`), never one silently lost."""
    copy: dict[Any, Any] = {}
    for key, value in mapping.items():
        if isinstance(key, str):
            shown = redact_value(key)
            if shown != key or shown in copy:
                base, number = shown, 2
                while shown in copy or (shown != key and shown in mapping):
                    shown, number = f"{base} ({number})", number + 1
            key = shown
        copy[key] = value
    return copy


def redacted_lines(text: str) -> tuple[int, ...]:
    """The numbers (from 1) of the lines of `text` that `redact` changes. Redaction replaces
    a credential within a line (a token continuing a `Bearer` line within the next one) and
    keeps every line break, so the lines before and after pair up one to one."""
    shown = redact(text)
    if shown == text:
        return ()
    return tuple(number for number, (before, after) in
                 enumerate(zip(text.splitlines(), shown.splitlines()), start=1)
                 if before != after)


def short_repr(value: Any, width: int = 40) -> str:
    """A value of an input in a one-line message: its repr, cut to `width` characters."""
    text = repr(value)
    return text if len(text) <= width else f"{text[:width - 3]}..."


def printable_line(text: str) -> str:
    """A message for stderr or a log: credentials redacted, unsafe characters escaped."""
    return escape_text(redact(text))


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate (a `\\ud800` escape in JSON) replaced by U+FFFD, as
    Go's encoding/json (and so the API server and kubectl) decodes it."""
    surrogate = _compiled(_SURROGATE)
    return surrogate.sub("\ufffd", text) if surrogate.search(text) else text


# A JSON or YAML escape that can make one: only texts that hold it are walked.
_SURROGATE_ESCAPE = r"\\(?:u[dD][89a-fA-F]|U0000[dD][89a-fA-F])"


def may_hold_surrogates(text: str) -> bool:
    """Whether JSON or YAML `text` has an escape that can decode to a surrogate."""
    return "\\" in text and _compiled(_SURROGATE_ESCAPE).search(text) is not None


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
            if any(isinstance(k, str) and _compiled(_SURROGATE).search(k) for k in container):
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
                if _compiled(_SURROGATE).search(value):
                    container[key] = without_lone_surrogates(value)
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return data


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    known = _C_ESCAPES.get(char)
    if known is not None:
        return known
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# Fields `escaped` keeps as they are: file names, which renderers print with quote_name (it
# must see the name as it is: escaping it first would escape twice); the rule catalogue,
# gpudra's own text (its explanations are Markdown, line breaks and all); and plan's report
# (gpudra.report.outcomes.OutcomeReport.plan_report), which only `-o json` prints: 17 MB of
# JSON at 10,000 workloads, never walked for nothing.
KEPT_FIELDS = frozenset({"file", "rules", "plan_report"})
# Deeper than any report gpudra builds or merges; past it a value is printed by its escaped text.
_MAX_DEPTH = 100


def escaped(data: T) -> T:
    """`data` (records, tuples, lists, mappings) with every string in it passed through
    `escape_text`, but for `KEPT_FIELDS`; enums and other values are kept. The one
    pass that makes a result safe for a text format, whatever field a renderer prints."""
    return cast(T, _escaped(data, 0))


def _escaped(value: Any, depth: int) -> Any:
    """`value` escaped; the very object when nothing in it needed escaping (most reports hold
    no unsafe character, and copying 100,000 records for nothing costs seconds)."""
    kind: type = type(value)
    if kind is str:
        return escape_text(value)
    if value is None or kind in _SCALARS or isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        return escape_text(value)
    if depth > _MAX_DEPTH:
        return escape_text(str(value))
    record = _record(kind)
    if record is not None:
        names, values = record
        changes = {}
        for name, old in zip(names, values(value) if len(names) > 1 else (values(value),)):
            new = _escaped(old, depth + 1)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, Mapping):
        pairs = [(k, v, _escaped(k, depth + 1), v if k in KEPT_FIELDS else _escaped(v, depth + 1))
                 for k, v in value.items()]
        if all(new_k is k and new_v is v for k, v, new_k, new_v in pairs):
            return value
        return {new_k: new_v for _, _, new_k, new_v in pairs}
    if isinstance(value, (tuple, list)):
        items = [_escaped(v, depth + 1) for v in value]
        if all(new is old for new, old in zip(items, value)):
            return value
        if hasattr(value, "_fields"):  # a named tuple
            return kind(*items)
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, (set, frozenset)):
        members = [(v, _escaped(v, depth + 1)) for v in value]
        if all(new is old for old, new in members):
            return value
        return kind(new for _, new in members)
    return value


_SCALARS = frozenset({int, float, bool})


@functools.cache
def _record(kind: type) -> tuple[tuple[str, ...], Callable[[Any], Any]] | None:
    """The fields `escaped` rebuilds a record of `kind` with, and one getter of them all;
    None: not a dataclass (or one with no such field)."""
    if not dataclasses.is_dataclass(kind):
        return None
    names = tuple(f.name for f in dataclasses.fields(kind)
                  if f.init and f.name not in KEPT_FIELDS)
    return (names, operator.attrgetter(*names)) if names else None
