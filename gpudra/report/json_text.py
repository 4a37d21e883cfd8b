"""The text of every JSON report: two-space indentation, characters as they are (UTF-8, no
\\u escapes), one newline at the end; what json.dumps(indent=2, ensure_ascii=False) writes.

orjson writes it several times faster: json's indenting encoder is pure Python, and a plan of
10,000 workloads is 17 MB of JSON. The two differ only in how they spell a float below 1e-4
(`1e-05` against `0.00001`, the same number), and orjson refuses what json accepts beyond
plain JSON data (keys that are not strings, integers past 64 bits, lone surrogates): json
writes those.

Characters JSON lets an encoder write as they are but a terminal acts on (C1 controls, DEL,
the Unicode line separators, bidirectional overrides) are written as `\\u` escapes, and so is a
lone surrogate, which no UTF-8 output can carry: the same data, printable anywhere.

Credentials are redacted in the data, before it is written (gpudra.printable.redacted_data):
redacting the text alone misses one an escape splits (`\\"`, `\\u0001`). Only data whose text
holds what a credential needs is walked (most reports hold none).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpudra.printable import UNSAFE_BEYOND_ASCII, may_hold_credential, redacted_data

# Outside strings JSON has only ASCII, so any of these is inside a string (C0 controls are
# escaped by both encoders already).
_UNESCAPED = re.compile(f"[{UNSAFE_BEYOND_ASCII}]")


def dumps(data: Any) -> str:
    text = _dumps(data)
    if may_hold_credential(text):
        text = _dumps(redacted_data(data))
    if _UNESCAPED.search(text):
        return _UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _dumps(data: Any) -> str:
    import orjson  # here, not at the top: commands that write no JSON do not load it

    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
    except TypeError:  # orjson.JSONEncodeError: data only json takes
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return text
