"""Render the small values convert writes (claims, claim templates, quota keys) as YAML text.

Hand-written because it must match each file's own indentation and sequence style, and because
a generic dumper writes YAML 1.2 plain scalars that kubectl (YAML 1.1) reads as booleans
(`yes`, `on`). Every string is checked by round-tripping it through the YAML 1.1 resolver and
double-quoted unless it reads back as the same string.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from gpudra.printable import UNSAFE_BEYOND_ASCII
from gpudra.yamledit.textedit import Style

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_UNESCAPED = re.compile(f"[{UNSAFE_BEYOND_ASCII}]")
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_FLOW_INDICATORS = set(",[]{}")
# Scalars some YAML 1.1 parser (go-yaml, which kubectl uses) reads as non-strings even where
# PyYAML does not: exponent numbers without a dot (`1e3`), `y`/`n`, sexagesimal `1:20`, hex.
_LOOKS_TYPED = re.compile(
    r"^(?:[-+]?(?:\d[\d_]*)?\.?\d*(?:[eE][-+]?\d+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
    r"|[yYnN]|0x[0-9a-fA-F_]+|0o?[0-7_]+|[-+]?\d+(?::[0-5]?\d)+(?:\.\d*)?|~)$")


def scalar(value: Any, *, in_flow: bool = False) -> str:
    """A scalar as YAML 1.1 text that reads back as exactly `value`: plain when that is safe,
    else single-quoted, else double-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _plain_ok(text, in_flow):
        return text
    if "\n" not in text and text.isprintable():
        if '"' not in text and "\\" not in text:
            return f'"{text}"'  # what Kubernetes docs and most manifests use
        return "'" + text.replace("'", "''") + "'"
    # JSON leaves C1 controls, DEL, line separators and bidirectional characters as they are;
    # YAML refuses the first two in a stream and a reader would act on the others: escapes.
    return _UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}",
                          json.dumps(text, ensure_ascii=False))


def _plain_ok(text: str, in_flow: bool) -> bool:
    if not text or text != text.strip() or text[0] in _INDICATORS or not text.isprintable():
        return False
    if _LOOKS_TYPED.match(text):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    if in_flow and any(c in _FLOW_INDICATORS for c in text):
        return False
    return _reads_back(text)


@functools.lru_cache(maxsize=4096)
def _reads_back(text: str) -> bool:
    # Pure function of its argument: memoised, since keys and names repeat across documents.
    try:
        return bool(yaml.load(f"k: {text}", Loader=_LOADER) == {"k": text})
    except yaml.YAMLError:
        return False


def flow(value: Any) -> str:
    """Flow-style YAML for a value (for edits inside `{...}` / `[...]`)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{scalar(k, in_flow=True)}: {flow(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalar(value, in_flow=True)


def block_entry(key: str, value: Any, style: Style) -> list[str]:
    """`key: value` as block lines, relative to the key's column (no trailing newlines)."""
    if isinstance(value, Mapping) and value:
        lines = [f"{scalar(key)}:"]
        lines += _indent(block_mapping(value, style), style.indent)
        return lines
    if isinstance(value, list) and value:
        lines = [f"{scalar(key)}:"]
        lines += _indent(block_sequence(value, style), style.sequence_offset)
        return lines
    return [f"{scalar(key)}: {_block_value(value)}"]


def _block_value(value: Any) -> str:
    # Empty collections can only be written in flow style; scalars follow block-context rules.
    return flow(value) if isinstance(value, (Mapping, list)) else scalar(value)


def block_mapping(value: Mapping[str, Any], style: Style) -> list[str]:
    lines: list[str] = []
    for k, v in value.items():
        lines += block_entry(k, v, style)
    return lines


def block_sequence(items: list[Any], style: Style) -> list[str]:
    lines: list[str] = []
    dash = "-" + " " * (style.item_gap - 1)
    for item in items:
        if isinstance(item, Mapping) and item:
            # Item content sits `item_gap` columns right of the dash, as the file writes it.
            body = block_mapping(item, style)
            lines.append(f"{dash}{body[0]}")
            lines += _indent(body[1:], style.item_gap)
        else:
            lines.append(f"{dash}{_block_value(item)}")
    return lines


def document(value: Mapping[str, Any], style: Style, comment: str | None = None) -> list[str]:
    """A whole new document's lines (without the `---` separator)."""
    lines = [f"# {line}" for line in (comment.splitlines() if comment else [])]
    return lines + block_mapping(value, style)


def _indent(lines: list[str], by: int) -> list[str]:
    pad = " " * by
    return [pad + line if line else line for line in lines]
