"""File names from a tree, made safe to print: one line, no terminal escape sequences.

A file called `a<newline>b.yaml` or `x<ESC>[2J.yaml` would otherwise split a table row, a diff
header or a CI annotation in two, or drive the terminal that shows the report. Such a name is
printed as git prints it (core.quotePath): in double quotes, with C escapes. Ordinary names
are printed as they are.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, the Unicode line/paragraph separators and the bidirectional
# overrides and isolates (which reorder what a reader sees), plus what quoting itself uses.
_NEEDS_QUOTES = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"\\\\]')
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def quote_name(name: str) -> str:
    """`name` as is, or quoted and escaped when it holds a character that is unsafe to print."""
    if not _NEEDS_QUOTES.search(name):
        return name
    return '"' + _NEEDS_QUOTES.sub(_escape, name) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    known = _C_ESCAPES.get(char)
    if known is not None:
        return known
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
