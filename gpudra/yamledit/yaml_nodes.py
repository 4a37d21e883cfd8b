"""A composed YAML document with a path -> node index, for locating edits.

Aliases are found here too: a node reachable by two paths (an anchor used by `*alias`) or a
mapping with a `<<` merge key cannot be edited in one place without changing the other, so the
planner refuses to edit through them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from gpudra.sources.documents import (
    Chunk,
    check_alias_budget,
    construct_data,
    parse_error,
    safe_load,
)
from gpudra.k8s.objects import PathT as PathT  # keys and list indexes; re-exported for ops
from gpudra.sources.documents import FastLoader as _Loader



@dataclass(frozen=True, slots=True)
class Located:
    """The nodes at one path: the key (None for sequence items and the root) and the value."""

    key: yaml.Node | None
    value: yaml.Node
    parent: yaml.Node | None


@dataclass
class NodeDocument:
    root: yaml.Node | None
    data: Any
    index: dict[PathT, Located] = field(default_factory=dict)
    shared: set[int] = field(default_factory=set)  # id() of nodes reachable by several paths
    merges: set[PathT] = field(default_factory=set)  # mappings that use `<<`
    complete: bool = False  # every path indexed (documents with anchors); else resolved lazily

    def at(self, path: PathT) -> Located | None:
        path = tuple(path)
        found = self.index.get(path)
        if found is not None or self.complete or self.root is None:
            return found
        # Without anchors every node has one path: follow it from the root, caching the way.
        located: Located | None = self.index.setdefault((), Located(None, self.root, None))
        for depth, part in enumerate(path, 1):
            assert located is not None  # the root, then each step found (else returned)
            located = self.index.get(path[:depth]) or _child(located.value, part)
            if located is None:
                return None
            self.index[path[:depth]] = located
        return located

    def editable(self, path: PathT) -> bool:
        """False when `path` or any ancestor is an alias target or uses a merge key."""
        for depth in range(len(path) + 1):
            prefix = tuple(path[:depth])
            located = self.at(prefix)
            if located is None:
                return depth == len(path)  # a key that does not exist yet
            if id(located.value) in self.shared or prefix in self.merges:
                return False
        return True


def _child(node: yaml.Node, part: Any) -> Located | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                return Located(key, value, node)
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return Located(None, node.value[part], node)
    return None


def compose(text: str) -> NodeDocument:
    """Parse one document. Raises yaml.YAMLError."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        doc = NodeDocument(root, None)
        if root is not None:
            if "&" in text:
                check_alias_budget(root)
            _check_unique_keys(root)
            if "&" in text or "<<" in text:
                # Anchors or merge keys: index every path now, before constructing the data
                # flattens `<<` out of the node tree, to know which nodes are shared.
                _walk(doc, root)
                doc.complete = True
            doc.data = construct_data(loader, root)
    finally:
        loader.dispose()
    return doc


def compose_chunk(chunk: Chunk) -> NodeDocument:
    """`compose` for one document of a file, failing as the audit's parse does: ParseError with
    the file line (so audit and convert call the same documents broken)."""
    try:
        return compose(chunk.text)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise parse_error(exc, chunk) from None


def _check_unique_keys(root: yaml.Node) -> None:
    """YAML forbids a key twice in one mapping. PyYAML keeps the last value while an edit is
    located at the first, so such a document is refused (raises yaml.MarkedYAMLError)."""
    seen: set[int] = set()  # aliased nodes are reached more than once
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.__class__ is yaml.MappingNode:
            pairs = node.value
            try:  # plain scalar keys, all different: a set says so at C speed
                plain = len({key.value for key, _ in pairs}) == len(pairs)
            except TypeError:  # a collection as a key: its value is a list
                plain = False
            if plain:
                stack += [value for _, value in pairs if value.__class__ is not yaml.ScalarNode]
            else:
                stack += _keys_checked(pairs)
        elif node.__class__ is yaml.SequenceNode:
            stack += [item for item in node.value if item.__class__ is not yaml.ScalarNode]


def _keys_checked(pairs: list[tuple[yaml.Node, yaml.Node]]) -> list[yaml.Node]:
    """The nodes below a mapping whose keys are not all plain and different: raises for a
    scalar key given twice (merge keys `<<` aside)."""
    keys: set[str] = set()
    below: list[yaml.Node] = []
    for key, value in pairs:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            if key.value in keys:
                raise yaml.MarkedYAMLError(problem=f"duplicate key {key.value!r}",
                                           problem_mark=key.start_mark)
            keys.add(key.value)
        below += (node for node in (key, value) if not isinstance(node, yaml.ScalarNode))
    return below


def _walk(doc: NodeDocument, root: yaml.Node) -> None:
    seen: dict[int, int] = {}
    stack: list[tuple[PathT, yaml.Node | None, yaml.Node, yaml.Node | None]] = [((), None, root, None)]
    while stack:
        path, key, node, parent = stack.pop()
        doc.index[path] = Located(key, node, parent)
        seen[id(node)] = seen.get(id(node), 0) + 1
        if seen[id(node)] > 1:
            doc.shared.add(id(node))
            continue
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.tag == "tag:yaml.org,2002:merge" or k.value == "<<":
                        doc.merges.add(path)
                    stack.append((path + (k.value,), k, v, node))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                stack.append((path + (i,), None, item, node))


def load(text: str) -> Any:
    """One document's plain data, as `yaml.load` with the C loader would give (the edits'
    read-back checks; gpudra.sources.documents.safe_load)."""
    return safe_load(text)
