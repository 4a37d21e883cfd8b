"""Edits as data, and the two ways to apply them: to plain data and to the original text.

The planner describes a conversion as a list of operations on document paths. Applying them to
the parsed data gives the document convert *means* to write; applying them to the text gives
the document it *does* write. The converter re-parses the text result and requires the two to
be equal before anything reaches disk, so a layout the editor misreads can never slip through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from gpudra.yamledit.render import block_entry, block_sequence, flow, scalar
from gpudra.yamledit.textedit import LayoutError, Style, TextDocument
from gpudra.yamledit.yaml_nodes import Located, NodeDocument, PathT


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


@dataclass(frozen=True, slots=True)
class Replace:
    """Give the scalar at `path` a new value (its key and position stay)."""

    path: PathT
    value: Any


@dataclass(frozen=True, slots=True)
class Wrap:
    """Move the entries `keys` of the mapping at `mapping` under a new key `key`, placed where
    the first of them was (`count: 1` -> `exactly: {count: 1}`), their text kept."""

    mapping: PathT
    keys: tuple[str, ...]
    key: str


@dataclass(frozen=True, slots=True)
class Unwrap:
    """Replace the entry `key` of the mapping at `mapping` by the entries of its value
    (`source: {resourceClaimName: x}` -> `resourceClaimName: x`), their text kept."""

    mapping: PathT
    key: str


Op = Delete | Append | InsertBefore | Extend | Replace | Wrap | Unwrap


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
        elif isinstance(op, Replace):
            _get(out, op.path[:-1])[op.path[-1]] = _copy(op.value)
        elif isinstance(op, Wrap):
            mapping = _get(out, op.mapping)
            items = list(mapping.items())
            first = next(i for i, (k, _) in enumerate(items) if k in op.keys)
            inner = {k: v for k, v in items if k in op.keys}
            kept = [*items[:first], (op.key, inner),
                    *((k, v) for k, v in items[first:] if k not in op.keys)]
            mapping.clear()
            mapping.update(kept)
        elif isinstance(op, Unwrap):
            mapping = _get(out, op.mapping)
            items = []
            for k, v in mapping.items():
                items += list(v.items()) if k == op.key else [(k, v)]
            mapping.clear()
            mapping.update(items)
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


def _deletion_order(path: PathT) -> tuple[tuple[int, int | str], ...]:
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
        root = _flow_root(doc, container_of(op))
        if root is not None:
            flow_roots[root] = None
        else:
            block_ops.append(op)
    carried = _carried_comments(editor, doc, block_ops)
    # Flow collections first, then block edits in order: an edit that moves text (Wrap,
    # Unwrap) carries the edits already made inside it along.
    for root in flow_roots:
        located = doc.at(root)
        assert located is not None  # a flow root is a node found in this document
        node = located.value
        editor.replace(node.start_mark.index, node.end_mark.index,
                       _regenerate(text, doc, root, node, ops, _json_style(node)))
    for op in block_ops:
        _apply_block(editor, doc, op, style, carried.get(id(op), ()))
    return editor.result()


def _carried_comments(editor: TextDocument, doc: NodeDocument,
                      ops: Sequence[Op]) -> dict[int, tuple[str, ...]]:
    """Inline comments of the lines a deletion removes (`nvidia.com/gpu: 4  # one node,
    NVLink`), by the op that adds what replaces them: the addition into the deleted entry's
    own mapping, else into its parent's (the `claims:` that replaces a `limits:` entry). A
    comment with no such addition goes with its line, as before."""
    additions = {container_of(op): op for op in ops
                 if isinstance(op, (Append, InsertBefore, Extend))}
    out: dict[int, list[str]] = {}
    for op in ops:
        if not isinstance(op, Delete):
            continue
        target = additions.get(op.path[:-1]) or additions.get(op.path[:-2])
        located = doc.at(op.path)
        if target is None or located is None or not isinstance(located.parent, yaml.MappingNode):
            continue
        assert located.key is not None  # an entry of a mapping has its key node
        carried = out.setdefault(id(target), [])
        carried += [c for c in _inline_comments(editor, located.key, located.value)
                    if c not in carried]
    return {key: tuple(value) for key, value in out.items()}


def _inline_comments(editor: TextDocument, key: yaml.Node, value: yaml.Node) -> list[str]:
    """The `# ...` comments that end lines of the entry `key: value`, in order."""
    found: list[str] = []
    if "#" not in editor.text[key.start_mark.index:editor.last_content_end(value)]:
        return found  # the usual case: nothing to look for
    stack: list[yaml.Node] = [value]
    ends = [key.end_mark.index]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
            ends.append(node.end_mark.index)
        elif isinstance(node, yaml.MappingNode):
            for k, v in reversed(node.value):
                ends.append(k.end_mark.index)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    for end in sorted(set(ends)):
        rest = editor.text[end:editor.line_end(end)].strip().removeprefix(":").strip()
        if rest.startswith("#") and rest not in found:
            found.append(rest)
    return found


def container_of(op: Op) -> PathT:
    """The mapping or sequence an operation changes (a deletion: the one it deletes from)."""
    if isinstance(op, (Delete, Replace)):
        return op.path[:-1]
    return op.sequence if isinstance(op, Extend) else op.mapping


def _flow_root(doc: NodeDocument, path: PathT) -> PathT | None:
    """The outermost flow-style collection at or above `path`, if any."""
    for depth in range(len(path) + 1):
        located = doc.at(path[:depth])
        if located is not None and getattr(located.value, "flow_style", False) and \
                isinstance(located.value, (yaml.MappingNode, yaml.SequenceNode)):
            return tuple(path[:depth])
    return None


def _apply_block(editor: TextDocument, doc: NodeDocument, op: Op, style: Style,
                 comments: Sequence[str] = ()) -> None:
    def commented(lines: list[str]) -> list[str]:
        """The first added line carries the comments of the lines it replaces."""
        return [f"{lines[0]}  {'  '.join(comments)}", *lines[1:]] if comments else lines

    if isinstance(op, Delete):
        located = _require(doc, op.path)
        if isinstance(located.parent, yaml.MappingNode):
            editor.remove_entry(located.parent, _key(located, op.path))
        else:
            editor.remove_item(_node(located.parent, yaml.SequenceNode, op.path[:-1]),
                               located.value)
    elif isinstance(op, Append):
        mapping = _node(_require(doc, op.mapping).value, yaml.MappingNode, op.mapping)
        editor.append_block(mapping, commented(block_entry(op.key, op.value, style)), style)
    elif isinstance(op, InsertBefore):
        before = op.mapping + (op.before,)
        key = _key(_require(doc, before), before)
        editor.insert_before_key(key, commented(block_entry(op.key, op.value, style)), style)
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
        lines = commented(block_sequence(list(op.items), inner))
        editor.insert(at, editor.block_text(lines, column, style, at))
    elif isinstance(op, Replace):
        editor.replace_scalar(_require(doc, op.path).value, scalar(op.value), op.value, style)
    elif isinstance(op, Wrap):
        node = _require(doc, op.mapping).value
        pairs = [(k, v) for k, v in node.value if k.value in op.keys]
        editor.move_under(pairs, f"{scalar(op.key)}:", style)
    elif isinstance(op, Unwrap):
        wrapper = op.mapping + (op.key,)
        located = _require(doc, wrapper)
        editor.lift_out(_key(located, wrapper), located.value, style)


def _require(doc: NodeDocument, path: PathT) -> Located:
    located = doc.at(path)
    if located is None:
        raise LayoutError(f"nothing at {path}")
    return located


# An operation's path comes from the document it edits, so what is there has the shape the
# operation needs; these say so to the checker, and fail as any other layout problem if not.
_NodeT = TypeVar("_NodeT", bound=yaml.Node)


def _node(node: yaml.Node | None, kind: type[_NodeT], path: PathT) -> _NodeT:
    if not isinstance(node, kind):
        raise LayoutError(f"no {kind.__name__} at {path}")
    return node


def _key(located: Located, path: PathT) -> yaml.Node:
    if located.key is None:
        raise LayoutError(f"no mapping key at {path}")
    return located.key


def _regenerate_scalar(text: str, path: PathT, node: yaml.Node, ops: Sequence[Op],
                       as_json: bool) -> str:
    """A scalar inside flow text: its original text unless an op replaces it."""
    replaced = [op for op in ops if isinstance(op, Replace) and op.path == path]
    if replaced:
        return json.dumps(replaced[-1].value, ensure_ascii=False) if as_json else \
            scalar(replaced[-1].value, in_flow=True)
    return text[node.start_mark.index:node.end_mark.index]


def _added_entries(path: PathT, ops: Sequence[Op], render_key: Callable[[Any], str],
                   render_value: Callable[[Any], str]) -> list[str]:
    """The entries ops append to the flow mapping or sequence at `path`, rendered."""
    added: list[str] = []
    for op in ops:
        if isinstance(op, Append) and op.mapping == path:
            added.append(f"{render_key(op.key)}: {render_value(op.value)}")
        elif isinstance(op, Extend) and op.sequence == path:
            added += [render_value(item) for item in op.items]
    return added


def _regenerate(text: str, doc: NodeDocument, path: PathT, node: yaml.Node,
                ops: Sequence[Op], as_json: bool = False) -> str:
    """Flow text for a flow collection: untouched entries keep their original text, and every
    entry keeps the whitespace before it, so a multi-line JSON or flow document changes only
    in the lines that change. New entries take the spacing of their neighbours and, in a
    JSON document, JSON's quoting."""
    if not _touched(path, ops):
        return text[node.start_mark.index:node.end_mark.index]
    deleted = {op.path for op in ops if isinstance(op, Delete)}
    render_key: Callable[[Any], str] = json.dumps if as_json else scalar
    render_value: Callable[[Any], str] = (lambda v: json.dumps(v, ensure_ascii=False)) \
        if as_json else flow
    if isinstance(node, yaml.MappingNode):
        originals = [(key, value, path + (key.value,)) for key, value in node.value]
    elif isinstance(node, yaml.SequenceNode):
        originals = [(item, item, path + (i,)) for i, item in enumerate(node.value)]
    else:
        return _regenerate_scalar(text, path, node, ops, as_json)
    wraps = [op for op in ops if isinstance(op, Wrap) and op.mapping == path]
    unwraps = {op.key for op in ops if isinstance(op, Unwrap) and op.mapping == path}

    def entry(key: yaml.Node, value: yaml.Node, sub: PathT) -> str:
        return text[key.start_mark.index:value.start_mark.index] + \
            _regenerate(text, doc, sub, value, ops, as_json)
    leads, tail = _flow_spacing(text, node, [(first, last) for first, last, _ in originals])
    between = leads[1] if len(leads) > 1 else (leads[0] if leads and "\n" in leads[0] else " ")
    parts: list[tuple[str | None, str]] = []  # (the entry's own lead, if it keeps one; text)
    for index, (first, last, sub) in enumerate(originals):
        if isinstance(node, yaml.MappingNode):
            parts += [(None, f"{render_key(op.key)}: {render_value(op.value)}") for op in ops
                      if isinstance(op, InsertBefore) and op.mapping == path
                      and op.before == first.value]
        if sub in deleted:
            continue
        if isinstance(node, yaml.MappingNode):
            wrap = next((op for op in wraps if first.value in op.keys), None)
            if wrap is not None:
                if first.value != next(k.value for k, _ in node.value if k.value in wrap.keys):
                    continue  # moved into the wrapper written at the first of its keys
                inner = ", ".join(entry(k, v, path + (k.value,)) for k, v in node.value
                                  if k.value in wrap.keys)
                parts.append((leads[index] if index else None,
                              f"{render_key(wrap.key)}: {{{inner}}}"))
                continue
            if first.value in unwraps and isinstance(last, yaml.MappingNode) and last.value:
                parts += [(leads[index] if index and j == 0 else None,
                           entry(k, v, sub + (k.value,))) for j, (k, v) in enumerate(last.value)]
                continue
            body = entry(first, last, sub)
        else:
            body = _regenerate(text, doc, sub, first, ops, as_json)
        parts.append((leads[index] if index else None, body))
    parts += [(None, added) for added in _added_entries(path, ops, render_key, render_value)]
    first_lead = leads[0] if leads else ""
    pieces = [(first_lead if i == 0 else (lead if lead is not None else between)) + body
              for i, (lead, body) in enumerate(parts)]
    opening, closing = text[node.start_mark.index], text[node.end_mark.index - 1]
    return opening + ",".join(pieces) + (tail if pieces else "") + closing


def _flow_spacing(text: str, node: yaml.Node, items: list[tuple[yaml.Node, yaml.Node]]
                  ) -> tuple[list[str], str]:
    """The whitespace before each entry of a flow collection (after the separating comma),
    and what follows the last entry up to the closing bracket."""
    leads = []
    at = node.start_mark.index + 1
    for first, last in items:
        gap = text[at:first.start_mark.index]
        leads.append(gap[gap.rfind(",") + 1:] if "," in gap else gap)
        at = last.end_mark.index
    tail = text[at:node.end_mark.index - 1]
    return leads, tail


def _json_style(node: yaml.Node) -> bool:
    """A JSON document (every key of the outermost flow mapping double-quoted): what convert
    adds to it is written as JSON too."""
    return isinstance(node, yaml.MappingNode) and bool(node.value) and all(
        isinstance(key, yaml.ScalarNode) and key.style == '"' for key, _ in node.value)


def _touched(path: PathT, ops: Sequence[Op]) -> bool:
    for op in ops:
        target = op.path if isinstance(op, (Delete, Replace)) else container_of(op)
        if tuple(target[: len(path)]) == path:
            return True
    return False
