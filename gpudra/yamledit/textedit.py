"""Surgical edits on YAML text, located by PyYAML node marks.

Every edit is a replacement of a character span of the original document text. Edits never
overlap and are applied from the end, so every position refers to the original text, and every
byte outside the edited spans is kept: comments, quoting, indentation, CRLF, trailing spaces.
Layouts the editor cannot change faithfully raise LayoutError; the caller then leaves the
workload alone and says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import yaml

from gpudra.errors import GpudraError

_DASHES = re.compile(r"(?: *- +)+")


class LayoutError(GpudraError):
    """The YAML is laid out in a way that cannot be edited without touching other lines."""


@dataclass(frozen=True, slots=True, order=True)
class Edit:
    start: int
    end: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class Style:
    """How a file writes YAML, so inserted blocks look like their neighbours."""

    indent: int = 2          # spaces per nesting level of mappings
    sequence_offset: int = 0  # columns between a key and the dashes of its block sequence
    newline: str = "\n"
    item_gap: int = 2        # columns from a dash to its item's content (`-   name:` is 4)
    json: bool = False       # the document is JSON (a flow mapping with quoted keys)


class TextDocument:
    """One document's text with line geometry, and the edits planned against it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.edits: list[Edit] = []

    # --- geometry --------------------------------------------------------------------------

    def line_start(self, index: int) -> int:
        """Index of the first character of the line containing `index`."""
        return self.text.rfind("\n", 0, index) + 1

    def line_end(self, index: int) -> int:
        """Index just past the newline that ends the line containing `index` (or end of text)."""
        pos = self.text.find("\n", index)
        return len(self.text) if pos < 0 else pos + 1

    def last_content_end(self, node: yaml.Node) -> int:
        """Index just past the last line that holds content of `node` (its trailing comment
        included, the comment lines after it excluded: they belong to what follows)."""
        return self.line_end(_last_index(node))

    def column(self, index: int) -> int:
        return index - self.line_start(index)

    def only_indent_before(self, index: int) -> bool:
        return self.text[self.line_start(index):index].strip() == ""

    # --- edits -----------------------------------------------------------------------------

    def replace(self, start: int, end: int, text: str) -> None:
        self.edits.append(Edit(start, end, text))

    def insert(self, index: int, text: str) -> None:
        self.edits.append(Edit(index, index, text))

    def result(self) -> str:
        ordered = sorted(self.edits, key=lambda e: (e.start, e.end))
        for before, after in pairwise(ordered):
            if after.start < before.end:
                raise LayoutError("overlapping edits")
        out = self.text
        for edit in reversed(ordered):
            out = out[: edit.start] + edit.text + out[edit.end:]
        return out

    # --- primitives ------------------------------------------------------------------------

    def remove_entry(self, mapping: yaml.MappingNode, key: yaml.Node) -> None:
        """Remove one key (and its value) from a mapping."""
        pairs = mapping.value
        index = next(i for i, (k, _) in enumerate(pairs) if k is key)
        value = pairs[index][1]
        if mapping.flow_style:
            self._remove_flow_item(pairs, index, key, value, mapping)
            return
        if not self.only_indent_before(key.start_mark.index):
            self._remove_dash_entry(pairs, index, key, value)
            return
        self.replace(self.line_start(key.start_mark.index), self.last_content_end(value), "")

    def _remove_dash_entry(self, pairs: list[tuple[yaml.Node, yaml.Node]], index: int,
                           key: yaml.Node, value: yaml.Node) -> None:
        """Remove the first entry of a sequence item's mapping, the one on the dash line
        (`- env: ...`): what follows it moves up onto the dash line (`- name: x`, or a comment
        line `- # ...`), at the column the removed key had, so the item keeps its indentation.
        Blank lines between go with it."""
        line = self.line_start(key.start_mark.index)
        before = self.text[line:key.start_mark.index]
        if index != 0 or index + 1 >= len(pairs) or not _DASHES.fullmatch(before):
            raise LayoutError("a key shares its line with a sequence dash")
        content = self.last_content_end(value)
        while content < len(self.text) and self.text[content] in " \t\r\n":
            content += 1
        if content >= pairs[index + 1][0].start_mark.index + 1:
            raise LayoutError("a key shares its line with a sequence dash")
        self.replace(key.start_mark.index, content, "")

    def remove_item(self, sequence: yaml.SequenceNode, item: yaml.Node) -> None:
        """Remove one item from a sequence."""
        index = next(i for i, node in enumerate(sequence.value) if node is item)
        if sequence.flow_style:
            pairs = [(node, node) for node in sequence.value]
            self._remove_flow_item(pairs, index, item, item, sequence)
            return
        dash = self.text.rfind("-", self.line_start(item.start_mark.index), item.start_mark.index)
        if dash < 0:
            # `-` alone on the line above the item's content.
            previous = self.line_start(self.line_start(item.start_mark.index) - 1)
            dash = self.text.find("-", previous, item.start_mark.index)
        if dash < 0 or not self.only_indent_before(dash):
            raise LayoutError("unusual sequence layout")
        self.replace(self.line_start(dash), self.last_content_end(item), "")

    def _remove_flow_item(self, pairs: list[tuple[yaml.Node, yaml.Node]], index: int,
                          first: yaml.Node, last: yaml.Node, container: yaml.Node) -> None:
        if len(pairs) == 1:
            open_end = container.start_mark.index + 1
            close = container.end_mark.index - 1
            self.replace(open_end, close, "")
            return
        if index + 1 < len(pairs):
            start = first.start_mark.index
            end = pairs[index + 1][0].start_mark.index
        else:
            start = _last_index(pairs[index - 1][1]) + 1
            end = last.end_mark.index
        self.replace(start, end, "")

    def _take(self, start: int, end: int) -> str:
        """The text of [start, end) with the edits already planned inside it applied; those
        edits are consumed (the span is about to move)."""
        inside = sorted((e for e in self.edits if start <= e.start and e.end <= end),
                        key=lambda e: (e.start, e.end))
        if any(e.start < end and e.end > start and e not in inside for e in self.edits):
            raise LayoutError("overlapping edits")
        out = self.text[start:end]
        for edit in reversed(inside):
            out = out[: edit.start - start] + edit.text + out[edit.end - start:]
            self.edits.remove(edit)
        return out

    def replace_scalar(self, node: yaml.Node, rendered: str, value: object,
                       style: Style) -> None:
        """Give a scalar a new value: plain or quoted text as `rendered`; a block scalar keeps
        its header (`|`, `>-`) and gets the new value's lines at its content indentation."""
        if not isinstance(node, yaml.ScalarNode):
            raise LayoutError("not a scalar")
        if node.style not in ("|", ">"):
            self.replace(node.start_mark.index, node.end_mark.index, rendered)
            return
        header_end = self.line_end(node.start_mark.index)
        header = self.text[node.start_mark.index:header_end].strip()
        text = str(value)
        if "+" in header or (node.style == ">" and "\n" in text.rstrip("\n")):
            raise LayoutError("a block scalar whose new value cannot keep its layout")
        if text.endswith("\n") != ("-" not in header):
            raise LayoutError("the new value does not fit the block scalar's chomping")
        first = header_end
        while first < len(self.text) and self.text[first] in " \t":
            first += 1
        pad = " " * (first - header_end)
        lines = text.rstrip("\n").split("\n")
        body = "".join(f"{pad}{line}{style.newline}" if line else style.newline
                       for line in lines)
        self.replace(header_end, self.last_content_end(node), body)

    def move_under(self, pairs: list[tuple[yaml.Node, yaml.Node]], header: str,
                   style: Style) -> None:
        """Move block-mapping entries under a new key `header` (`exactly:`), placed at the
        first of them, each line one indentation step deeper; their text is kept."""
        if not pairs:
            raise LayoutError("nothing to move")
        spans = []
        for key, value in pairs:
            if not self.only_indent_before(key.start_mark.index):
                raise LayoutError("a key shares its line with a sequence dash")
            spans.append((self.line_start(key.start_mark.index), self.last_content_end(value)))
        moved = [self._take(start, end) for start, end in spans]
        column = self.column(pairs[0][0].start_mark.index)
        step = " " * style.indent
        body = "".join(_shift(text, step) for text in moved)
        first_start, first_end = spans[0]
        lines = f"{' ' * column}{header}{style.newline}{body}"
        self.replace(first_start, first_end, lines if body.endswith("\n") else lines + "\n")
        for start, end in spans[1:]:
            self.replace(start, end, "")

    def lift_out(self, key: yaml.Node, value: yaml.Node, style: Style) -> None:
        """Replace `key: {a: 1, b: 2}` (block or flow value) by its entries `a: 1`, `b: 2`
        at the key's indentation; block entries keep their text."""
        if not self.only_indent_before(key.start_mark.index):
            raise LayoutError("a key shares its line with a sequence dash")
        if not isinstance(value, yaml.MappingNode) or not value.value:
            raise LayoutError("only a non-empty mapping can be lifted out")
        start, end = self.line_start(key.start_mark.index), self.last_content_end(value)
        column = self.column(key.start_mark.index)
        if value.flow_style:
            pad = " " * column
            body = "".join(f"{pad}{self.text[k.start_mark.index:k.end_mark.index]}: "
                           f"{self.text[v.start_mark.index:v.end_mark.index]}{style.newline}"
                           for k, v in value.value)
            self._take(start, end)
            self.replace(start, end, body)
            return
        inner = self.column(value.value[0][0].start_mark.index)
        text = self._take(self.line_end(key.start_mark.index), end)
        self.replace(start, end, _shift(text, None, inner - column))

    def append_block(self, mapping: yaml.MappingNode, lines: Iterable[str], style: Style) -> None:
        """Append `lines` (already relative-indented) after a block mapping's last entry."""
        if mapping.flow_style or not mapping.value:
            raise LayoutError("cannot append to a flow-style or empty mapping")
        column = self.column(mapping.value[0][0].start_mark.index)
        at = self.last_content_end(mapping.value[-1][1])
        self.insert(at, self.block_text(lines, column, style, at))

    def insert_before_key(self, key: yaml.Node, lines: Iterable[str], style: Style) -> None:
        """Insert `lines` as new entries just before the line of `key`, at its indentation."""
        if not self.only_indent_before(key.start_mark.index):
            raise LayoutError("a key shares its line with a sequence dash")
        at = self.line_start(key.start_mark.index)
        self.insert(at, self.block_text(lines, self.column(key.start_mark.index), style, at))

    def block_text(self, lines: Iterable[str], column: int, style: Style, at: int) -> str:
        """Lines as text to insert at `at`, each indented to `column`."""
        pad = " " * column
        body = "".join(f"{pad}{line}{style.newline}" if line else style.newline for line in lines)
        if at == 0 or self.text[at - 1] == "\n":
            return body
        # Inserting after a last line without a newline: keep the file without a final one.
        return style.newline + body[: -len(style.newline)]


def _shift(text: str, add: str | None, remove: int = 0) -> str:
    """`text` with `add` put before each non-empty line, or `remove` leading spaces taken from
    each (LayoutError where a line has fewer)."""
    out = []
    for line in text.splitlines(keepends=True):
        if not line.strip():
            out.append(line)
        elif add is not None:
            out.append(add + line)
        elif line[:remove].strip() or len(line) - len(line.lstrip(" ")) < remove:
            raise LayoutError("a line is indented less than the entries it belongs to")
        else:
            out.append(line[remove:])
    return "".join(out)


def _last_index(node: yaml.Node) -> int:
    """Index of the last character of `node`'s content."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return max(node.end_mark.index - 1, node.start_mark.index)
    children = node.value
    if not children:
        return node.start_mark.index
    if isinstance(node, yaml.MappingNode):
        return _last_index(children[-1][1])
    return _last_index(children[-1])


def detect_style(text: str, root: yaml.Node | None) -> Style:
    """Indentation step, sequence offset and dash gap of a document, from its first nested
    nodes."""
    newline = "\r\n" if "\r\n" in text else "\n"
    indent, offset, gap = None, None, None
    stack = [root] if root is not None else []
    while stack and (indent is None or offset is None or gap is None):
        node = stack.pop(0)
        if isinstance(node, yaml.MappingNode) and not node.flow_style:
            for key, value in node.value:
                key_col = key.start_mark.column
                if isinstance(value, yaml.MappingNode) and not value.flow_style and value.value \
                        and indent is None and value.start_mark.line > key.start_mark.line:
                    indent = value.value[0][0].start_mark.column - key_col
                if isinstance(value, yaml.SequenceNode) and not value.flow_style and value.value \
                        and value.start_mark.line > key.start_mark.line:
                    dash = _dash_column(text, value.value[0])
                    if offset is None:
                        offset = dash - key_col
                    first = value.value[0]
                    if gap is None and isinstance(first, yaml.MappingNode) and \
                            not first.flow_style and first.value and _on_dash_line(text, first):
                        gap = first.start_mark.column - dash
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    is_json = isinstance(root, yaml.MappingNode) and root.flow_style and bool(root.value) and \
        all(isinstance(k, yaml.ScalarNode) and k.style == '"' for k, _ in root.value)
    return Style(indent if indent and indent > 0 else 2,
                 offset if offset is not None and offset >= 0 else 0, newline,
                 gap if gap is not None and gap >= 2 else 2, is_json)


def _on_dash_line(text: str, item: yaml.Node) -> bool:
    """Whether `item` starts on the line of its dash (`- name: x`, not `-` alone above it)."""
    start = text.rfind("\n", 0, item.start_mark.index) + 1
    return text.rfind("-", start, item.start_mark.index) >= 0


def _dash_column(text: str, item: yaml.Node) -> int:
    start = text.rfind("\n", 0, item.start_mark.index) + 1
    dash = text.rfind("-", start, item.start_mark.index)
    return (dash - start) if dash >= 0 else item.start_mark.column
