"""Edits as data, and the two ways to apply them: to plain data and to the original text.

The planner describes a conversion as a list of operations on document paths. Applying them to
the parsed data gives the document convert *means* to write; applying them to the text gives
the document it *does* write. The converter re-parses the text result and requires the two to
be equal before anything reaches disk, so a layout the editor misreads can never slip through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import yaml

from gpudra.convert.nodes import NodeDocument, PathT
from gpudra.convert.render import block_entry, block_sequence, flow, scalar
from gpudra.convert.textedit import LayoutError, Style, TextDocument


@dataclass(frozen=True, slots=True)
class Delete:
    """Remove the mapping entry or sequence item at `path`."""

    path: PathT


@dataclass(frozen=True, slots=True)
class Append:
    """Add `key: value` at the end of the mapping at `mapping`."""

    mapping: PathT
    key: str
    value: Any


@dataclass(frozen=True, slots=True)
class InsertBefore:
    """Add `key: value` to the mapping at `mapping`, just before the existing key `before`."""

    mapping: PathT
    before: str
    key: str
    value: Any


@dataclass(frozen=True, slots=True)
class Extend:
    """Append `items` to the sequence at `sequence`."""

    sequence: PathT
    items: tuple[Any, ...]


Op = Union[Delete, Append, InsertBefore, Extend]


# --- data ----------------------------------------------------------------------------------

def apply_to_data(data: Any, ops: Sequence[Op]) -> Any:
    """The intended result, computed on a copy.

    Mapping keys are deleted first (so `tolerations: []` can be deleted and then written
    again), list items last and from the end (so every index refers to the original list).
    """
    out = _copy(data)
    deletions = [op.path for op in ops if isinstance(op, Delete)]
    for path in deletions:
        if not isinstance(path[-1], int):
            del _get(out, path[:-1])[path[-1]]
    for op in ops:
        if isinstance(op, Append):
            _get(out, op.mapping)[op.key] = _copy(op.value)
        elif isinstance(op, InsertBefore):
            mapping = _get(out, op.mapping)
            items = list(mapping.items())
            position = [k for k, _ in items].index(op.before)
            items.insert(position, (op.key, _copy(op.value)))
            mapping.clear()
            mapping.update(items)
        elif isinstance(op, Extend):
            _get(out, op.sequence).extend(_copy(list(op.items)))
    for path in sorted((p for p in deletions if isinstance(p[-1], int)), key=_deletion_order):
        del _get(out, path[:-1])[path[-1]]
    return out


def _copy(value: Any) -> Any:
    """Deep copy of parsed YAML data (dicts, lists, scalars), several times faster than
    copy.deepcopy. Shared sub-objects (aliases) become separate copies, which equality
    comparison does not distinguish."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _deletion_order(path: PathT) -> tuple:
    # Higher list indexes first, so deleting item 2 cannot shift item 3's index.
    return tuple((0, -p) if isinstance(p, int) else (1, p) for p in path)


def _get(data: Any, path: PathT) -> Any:
    for part in path:
        data = data[part]
    return data


# --- text ----------------------------------------------------------------------------------

def apply_to_text(text: str, doc: NodeDocument, ops: Sequence[Op], style: Style) -> str:
    """Apply `ops` to one document's text. Raises LayoutError for layouts it cannot edit."""
    editor = TextDocument(text)
    flow_roots: dict[PathT, None] = {}
    block_ops: list[Op] = []
    for op in ops:
        container = op.path[:-1] if isinstance(op, Delete) else _container(op)
        root = _flow_root(doc, container)
        if root is not None:
            flow_roots[root] = None
        else:
            block_ops.append(op)
    for op in block_ops:
        _apply_block(editor, doc, op, style)
    for root in flow_roots:
        located = doc.at(root)
        node = located.value
        editor.replace(node.start_mark.index, node.end_mark.index,
                       _regenerate(text, doc, root, node, ops))
    return editor.result()


def _container(op: Op) -> PathT:
    return op.sequence if isinstance(op, Extend) else op.mapping


def _flow_root(doc: NodeDocument, path: PathT) -> PathT | None:
    """The outermost flow-style collection at or above `path`, if any."""
    for depth in range(len(path) + 1):
        located = doc.at(path[:depth])
        if located is not None and getattr(located.value, "flow_style", False) and \
                isinstance(located.value, (yaml.MappingNode, yaml.SequenceNode)):
            return tuple(path[:depth])
    return None


def _apply_block(editor: TextDocument, doc: NodeDocument, op: Op, style: Style) -> None:
    if isinstance(op, Delete):
        located = _require(doc, op.path)
        if isinstance(located.parent, yaml.MappingNode):
            editor.remove_entry(located.parent, located.key)
        else:
            editor.remove_item(located.parent, located.value)
    elif isinstance(op, Append):
        node = _require(doc, op.mapping).value
        editor.append_block(node, block_entry(op.key, op.value, style), style)
    elif isinstance(op, InsertBefore):
        key = _require(doc, op.mapping + (op.before,)).key
        editor.insert_before_key(key, block_entry(op.key, op.value, style), style)
    elif isinstance(op, Extend):
        node = _require(doc, op.sequence).value
        if not node.value:
            raise LayoutError("cannot extend an empty sequence")
        last = node.value[-1]
        at = editor.last_content_end(last)
        dash_line = editor.line_start(node.value[0].start_mark.index)
        dash = editor.text.find("-", dash_line, node.value[0].start_mark.index)
        column = dash - dash_line if dash >= 0 else node.value[0].start_mark.column
        inner = Style(style.indent, 0, style.newline, style.item_gap)
        editor.insert(at, editor.block_text(block_sequence(list(op.items), inner), column, style, at))


def _require(doc: NodeDocument, path: PathT):
    located = doc.at(path)
    if located is None:
        raise LayoutError(f"nothing at {path}")
    return located


def _regenerate(text: str, doc: NodeDocument, path: PathT, node: yaml.Node,
                ops: Sequence[Op]) -> str:
    """Flow text for a flow collection: untouched entries keep their original text."""
    if not _touched(path, ops):
        return text[node.start_mark.index:node.end_mark.index]
    deleted = {op.path for op in ops if isinstance(op, Delete)}
    parts: list[str] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = path + (key.value,)
            if sub in deleted:
                continue
            inserts = [op for op in ops if isinstance(op, InsertBefore)
                       and op.mapping == path and op.before == key.value]
            parts += [f"{scalar(op.key)}: {flow(op.value)}" for op in inserts]
            key_text = text[key.start_mark.index:key.end_mark.index]
            parts.append(f"{key_text}: {_regenerate(text, doc, sub, value, ops)}")
        parts += [f"{scalar(op.key)}: {flow(op.value)}" for op in ops
                  if isinstance(op, Append) and op.mapping == path]
        return "{" + ", ".join(parts) + "}"
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            sub = path + (i,)
            if sub not in deleted:
                parts.append(_regenerate(text, doc, sub, item, ops))
        for op in ops:
            if isinstance(op, Extend) and op.sequence == path:
                parts += [flow(item) for item in op.items]
        return "[" + ", ".join(parts) + "]"
    return text[node.start_mark.index:node.end_mark.index]


def _touched(path: PathT, ops: Sequence[Op]) -> bool:
    for op in ops:
        target = op.path if isinstance(op, Delete) else _container(op)
        if tuple(target[: len(path)]) == path:
            return True
    return False
