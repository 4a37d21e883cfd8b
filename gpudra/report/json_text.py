"""The text of every JSON report: two-space indentation, characters as they are (UTF-8, no
\\u escapes), one newline at the end; what json.dumps(indent=2, ensure_ascii=False) writes.

orjson writes it several times faster: json's indenting encoder is pure Python, and a plan of
10,000 workloads is 17 MB of JSON. The two differ only in how they spell a float below 1e-4
(`1e-05` against `0.00001`, the same number), and orjson refuses what json accepts beyond
plain JSON data (keys that are not strings, integers past 64 bits, lone surrogates): json
writes those.
"""

from __future__ import annotations

import json
from typing import Any


def dumps(data: Any) -> str:
    import orjson  # here, not at the top: commands that write no JSON do not load it

    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
    except TypeError:  # orjson.JSONEncodeError: data only json takes
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
