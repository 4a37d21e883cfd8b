"""JSON manifests: parsed by the json module, with line numbers found without a YAML parse.

The json module is 30-100x faster than composing the same text as YAML, but gives no positions.
Lines are therefore found on demand, and only for the paths a finding asks about:

* a one-line file (``kubectl get -o json | jq -c``, API dumps) has every key on line 1: nothing
  is scanned at all;
* in a multi-line file the root object (and the ``items`` of a List, or a top-level array) is
  decoded member by member with the C decoder (``JSONDecoder.raw_decode``), which records where
  each member starts at the cost of the parse itself. Deeper containers are walked the same way
  the first time a path goes through them, and remembered; the offset of the last key on the
  path becomes its line through a coarse newline index.

So a line is exact (the line of the key, like the YAML path), and the extra cost is a decode of
the containers on the paths that have findings, not of the whole file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from gpudra.k8s.objects import PathT

Key = str | int
# A container's members: key or index -> (offset of the key or item, offset of its value).
Members = dict[Key, tuple[int, int]]
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_BLOCK = 1 << 16  # newline counts are kept per 64 KiB block: a lookup counts at most one block
_DECODER = json.JSONDecoder()


class OneLine:
    """Every path of a one-line document is on its first line."""

    def __init__(self, line: int = 1) -> None:
        self._line = line

    def get(self, path: PathT, default: int | None = None, /) -> int | None:
        return self._line


def load_json(text: str) -> tuple[Any, OneLine | JsonLines]:
    """The data of a JSON text and its line index. Raises json.JSONDecodeError."""
    end = len(text)
    while end and text[end - 1] in " \t\r\n":
        end -= 1
    if text.find("\n", 0, end) == -1:
        return json.loads(text), OneLine()
    index = JsonLines(text)
    try:
        return index.decode(), index
    except (ValueError, IndexError):
        # Invalid JSON: json.loads raises the error users know, with its line and column.
        # (Should it parse after all, the index still finds lines, just without the seed.)
        return json.loads(text), JsonLines(text)


class JsonLines:
    """1-based line of each key and list item of one multi-line JSON text, found on demand."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._root = _skip(text, 0)
        self._members: dict[int, Members] = {}
        self._blocks: list[int] | None = None

    def decode(self) -> Any:
        """The whole value, decoded root member by member so that their offsets (and those of
        a List's items) are known without a second pass."""
        text, root = self._text, self._root
        if text.startswith("{", root):
            value, end = self._container(root, self._root_member)
        elif text.startswith("[", root):
            value, end = self._container(root, self._value)
        else:
            value, end = _DECODER.raw_decode(text, root)
        if _skip(text, end) != len(text):
            raise ValueError("extra data")
        return value

    def get(self, path: PathT, default: int | None = None, /) -> int | None:
        offset = self._offset(path)
        return default if offset is None else self._line(offset)

    def _root_member(self, key: Key, offset: int) -> tuple[Any, int]:
        if key == "items" and self._text.startswith("[", offset):
            return self._container(offset, self._value)
        return self._value(key, offset)

    def _value(self, key: Key, offset: int) -> tuple[Any, int]:
        return _DECODER.raw_decode(self._text, offset)

    def _offset(self, path: PathT) -> int | None:
        """Offset of the key (or item) that `path` ends at; None when there is no such path."""
        at = self._root
        found = at
        for key in path:
            members = self._members.get(at)
            if members is None:
                if not self._text.startswith(("{", "["), at):
                    return None
                self._container(at, self._value)
                members = self._members[at]
            entry = members.get(key)
            if entry is None:
                return None
            found, at = entry
        return found

    def _container(self, start: int, read: Callable[[Key, int], tuple[Any, int]]
                   ) -> tuple[Any, int]:
        """Decode the object or array at `start` member by member with `read`, and remember
        where each member starts. Returns the value and the offset after it."""
        text = self._text
        members: Members = {}
        is_object = text[start] == "{"
        close = "}" if is_object else "]"
        value: Any = {} if is_object else []
        at = _skip(text, start + 1)
        if text[at] == close:
            self._members[start] = members
            return value, at + 1
        index = 0
        while True:
            if is_object:
                if text[at] != '"':
                    raise ValueError("expecting a property name")
                key_at = at
                key, at = _DECODER.raw_decode(text, at)
                at = _skip(text, at)
                if text[at] != ":":
                    raise ValueError("expecting ':'")
                at = _skip(text, at + 1)
                member, end = read(key, at)
                value[key] = member
                members[key] = (key_at, at)
            else:
                member, end = read(index, at)
                value.append(member)
                members[index] = (at, at)
                index += 1
            at = _skip(text, end)
            if text[at] == ",":
                at = _skip(text, at + 1)
            elif text[at] == close:
                self._members[start] = members
                return value, at + 1
            else:
                raise ValueError(f"expecting ',' or {close!r}")

    def _line(self, offset: int) -> int:
        text = self._text
        if self._blocks is None:
            # Lines before each block: one C-speed pass over the text, a few hundred entries.
            counts = [0]
            for start in range(0, len(text), _BLOCK):
                counts.append(counts[-1] + text.count("\n", start, start + _BLOCK))
            self._blocks = counts
        block = offset // _BLOCK
        return 1 + self._blocks[block] + text.count("\n", block * _BLOCK, offset)


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]
