"""Tables that wrap between words and never inside one: the layout of `-o table` for the audit
and for the verdicts of preflight, plan and verify.

Issue 36: rich's `overflow="fold"` cut `NVIDIA_VISIBLE_DEVICES` into `NVIDIA_VISIBLE_DEVI` and
`CES`, a workload name into `StatefulSet/notebo` and `ok`, and a CEL literal at its inner blank
(`replace("` / `", "-")`). Here a row is its narrow cells (line, severity, rule, object: never
wrapped, as wide as their widest value) and one text cell, wrapped at the blanks between
*units*: a word, or an expression kept whole (a call or an index with what is inside its
brackets, `replace(" ", "-")`, `attributes["gpu.nvidia.com"]`, or a quoted value with blanks,
`'/srv/my charts/a.yaml'`). A unit wider than the room it has gets a line of its own and goes
past the width rather than being cut: the terminal wraps it, copying it gives it back whole.
When the text cell would be narrower than `MIN_TEXT`, it goes under its row instead, indented.
Without a width (a file, a pipe) nothing wraps: each paragraph of a row is one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

GAP = 2  # blanks between two columns
MIN_TEXT = 32  # narrower than this, the text goes under its row
UNDER = 4  # the indentation of text under its row
OPENERS = {"(": ")", "[": "]", "{": "}"}
QUOTES = "'\"`"


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One line of a text cell as written (its own lines when wrapped), in one style."""

    text: str
    style: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    cells: tuple[Text, ...]           # the narrow cells, never wrapped
    text: tuple[Paragraph, ...]       # the wrapped cell, last


def units(text: str) -> list[str]:
    """The pieces `text` may be broken between: blank-separated words, except that the
    blanks inside a call's or an index's brackets (an opening bracket right after a name
    character) and inside a quoted value that starts a word do not separate."""
    return [text[start:end] for start, end in spans(text)]


def spans(text: str) -> list[tuple[int, int]]:
    """Where each of `units(text)` starts and ends in `text`."""
    found: list[tuple[int, int]] = []
    start = i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            if i > start:
                found.append((start, i))
            start = i + 1
            i += 1
            continue
        if char in OPENERS and i > start and _name_char(text[i - 1]):
            i = _closing(text, i)
        elif char in QUOTES and (i == start or text[i - 1] in "=:(["):
            end = text.find(char, i + 1)
            i = end if end != -1 else i
        i += 1
    if start < len(text):
        found.append((start, len(text)))
    return found


def _name_char(char: str) -> bool:
    return char.isalnum() or char in "_.)]"


def _closing(text: str, at: int) -> int:
    """The index of the bracket closing the one at `at` (quotes inside skipped), or `at`
    when it never closes (the bracket is then an ordinary character)."""
    depth, i = 0, at
    while i < len(text):
        char = text[i]
        if char in QUOTES:
            end = text.find(char, i + 1)
            if end == -1:
                return at
            i = end
        elif char in OPENERS:
            depth += 1
        elif char in OPENERS.values():
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return at


def wrap(text: str, width: int | None) -> list[str]:
    """`text` in lines of at most `width` cells, broken only between units (the blanks
    between two units on one line are kept as written); a line that starts indented keeps
    the indentation on its continuation lines (two more after a leading arrow, under the
    text). None: one line, as it is."""
    if width is None:
        return [text]
    indent = len(text) - len(text.lstrip(" "))
    body = text[indent:]
    hanging = " " * (indent + (2 if body.startswith("→ ") else 0))
    lines: list[str] = []
    lead, first = " " * indent, None  # the current line's indentation and first unit
    last = 0  # the end of the current line's last unit (read only once `first` is set)
    for start, end in spans(body):
        if first is not None and cell_len(lead + body[first:end]) > width:
            lines.append(lead + body[first:last])
            lead, first = hanging, start
        elif first is None:
            first = start
        last = end
    lines.append(lead + ("" if first is None else body[first:last]))
    return lines


def wrap_text(text: Text, width: int | None) -> list[Text]:
    """`wrap` for styled text: each of its lines broken between units, the styles kept."""
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        pieces = wrap(plain, width)
        if len(pieces) == 1:
            out.append(line)
            continue
        # Where each wrapped piece's first unit starts in the line, to cut the Text there.
        starts, at = [], 0
        for piece in pieces[1:]:
            at = plain.index(piece.lstrip(" "), at + 1)
            starts.append(at)
        parts = line.divide(starts)
        out.append(parts[0].copy())
        out[-1].rstrip()
        for piece, part in zip(pieces[1:], parts[1:]):
            hanging = len(piece) - len(piece.lstrip(" "))
            part = part.copy()
            part.rstrip()
            out.append(Text(" " * hanging) + part)
    return out


def render_rows(rows: Sequence[Row], width: int | None,
                justify: Sequence[str] = ()) -> list[Text]:
    """The rows as lines of styled text: narrow cells side by side, each column as wide as
    its widest value (`justify`: "right" per column where numbers align right), then the
    text beside them, or under them where the width leaves it less than MIN_TEXT."""
    if not rows:
        return []
    columns = len(rows[0].cells)
    widths = [max(cell_len(row.cells[c].plain) for row in rows) for c in range(columns)]
    start = sum(widths) + GAP * columns
    under = width is not None and width - start < MIN_TEXT
    room = None if width is None else width - (UNDER if under else start)
    out: list[Text] = []
    for row in rows:
        head = Text()
        for c, cell in enumerate(row.cells):
            pad = " " * (widths[c] - cell_len(cell.plain))
            head.append_text(Text(pad) + cell if _right(justify, c) else cell + Text(pad))
            head.append(" " * GAP)
        lines = [(line, p.style) for p in row.text for line in wrap(p.text, room)]
        if under:
            out.append(head)
            out += [Text(" " * UNDER) + Text(line, style=style) for line, style in lines]
            continue
        for n, (line, style) in enumerate(lines or [("", "")]):
            lead = head if n == 0 else Text(" " * start)
            out.append(lead + Text(line, style=style))
    return out


def _right(justify: Sequence[str], column: int) -> bool:
    return column < len(justify) and justify[column] == "right"
