"""Split YAML text into documents and parse one document with line numbers.

Splitting happens on column-0 ``---`` / ``...`` markers, which YAML forbids inside content, so
each chunk can be parsed (or skipped) on its own. Parsing uses PyYAML's C loader: audit never
needs a round-trip library, and compose marks give each key its line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from gpudra.k8s.objects import LineIndex, PathT, noun_for

try:  # the C loader is 10-30x faster; fall back so a libyaml-less install still works
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]


@functools.lru_cache(maxsize=8192)
def _resolve_scalar(value: str, implicit: tuple[bool, bool]) -> str:
    return _BaseLoader.resolve(_RESOLVER, yaml.ScalarNode, value, implicit)


class FastLoader(_BaseLoader):
    """The safe loader with memoised tag resolution for short scalars.

    Even the C parser resolves every scalar's tag in Python (a regex per candidate type), and
    manifests repeat the same keys and values endlessly. Without path resolvers (the safe
    loader has none) the result depends only on the value and the implicit flags.
    """

    def resolve(self, kind, value, implicit):  # noqa: ANN001 - PyYAML's signature
        if kind is yaml.ScalarNode and len(value) <= 64:
            return _resolve_scalar(value, tuple(implicit))
        return super().resolve(kind, value, implicit)


_RESOLVER = _BaseLoader("")
_Loader = FastLoader

_DIRECTIVE_OR_BLANK = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?\r?\n|%[^\n]*\n)*[ \t]*(?:#[^\n]*)?\Z")
_SOURCE_COMMENT = re.compile(r"^# Source: (\S.*?)\s*$", re.MULTILINE)

Path_ = PathT  # a path inside a document: keys (str) and list indexes (int)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One document's text and the 1-based file line it starts on."""

    text: str
    first_line: int

    @property
    def helm_source(self) -> str | None:
        """The template named by a ``# Source:`` comment that ``helm template`` writes."""
        if "# Source: " not in self.text:  # a substring search is 20x cheaper than the regex
            return None
        match = _SOURCE_COMMENT.search(self.text)
        return match.group(1) if match else None


def split_documents(text: str) -> list[Chunk]:
    """Cut text at document markers; a comment- or directive-only head joins the next chunk."""
    starts = _marker_starts(text)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = list(zip(starts, starts[1:] + [len(text)]))
    if len(bounds) > 1 and _DIRECTIVE_OR_BLANK.match(text[: bounds[0][1]]):
        # `%YAML 1.2` or a licence header before the first `---` belongs to that document.
        bounds[1] = (0, bounds[1][1])
        del bounds[0]
    chunks: list[Chunk] = []
    line = 1
    for start, end in bounds:
        piece = text[start:end]
        chunks.append(Chunk(piece, line))
        line += piece.count("\n")
    return chunks


def _marker_starts(text: str) -> list[int]:
    """Where a line is a document marker (`---` or `...` then a blank, a line end or the end):
    str.find over the text, several times faster than a multi-line regex on an inventory of
    tens of MB."""
    found: list[int] = []
    for marker in ("---", "..."):
        at = 0 if text.startswith(marker) else _line_start(text, "\n" + marker, 0)
        while at != -1:
            end = at + len(marker)
            if end == len(text) or text[end] in " \t\r\n":
                found.append(at)
            at = _line_start(text, "\n" + marker, end)
    found.sort()
    return found


def _line_start(text: str, needle: str, start: int) -> int:
    """The line that `needle` (a newline, then a marker) opens, from `start` on; -1: none."""
    at = text.find(needle, start)
    return -1 if at == -1 else at + 1


# go-yaml's alias budget (decode.go; kubectl and kube-apiserver read YAML with it through
# sigs.k8s.io/yaml): a document may owe at most this share of its nodes to alias expansion,
# 99% up to 400,000 nodes, tapering to 10% at 4,000,000, with small documents exempt. So
# gpudra refuses exactly the "excessive aliasing" Kubernetes refuses, and anything it accepts
# is at most ~400,000 nodes beyond what the file spells out.
ALIAS_FREE_NODES = 1000
ALIAS_FREE_ALIASED = 100
ALIAS_RATIO_LOW, ALIAS_RATIO_HIGH = 400_000, 4_000_000


class AliasBudgetError(yaml.YAMLError):
    """A document whose aliases expand past the budget, or that contains itself."""


def check_alias_budget(root: yaml.Node | None) -> None:
    """Raise AliasBudgetError when expanding `root`'s aliases would exceed go-yaml's budget.
    Linear in the composed nodes: each node's expanded size is computed once."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the path from the root to the node being sized
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise AliasBudgetError("an alias refers to a node that contains it (the document "
                                   "would be infinite)")
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        open_nodes.add(key)
        stack.append((node, True))
        stack += [(child, False) for child in _children(node)]
    expanded = sizes[id(root)]
    aliased = expanded - len(sizes)
    if aliased > ALIAS_FREE_ALIASED and expanded > ALIAS_FREE_NODES and \
            aliased / expanded > _allowed_alias_ratio(expanded):
        raise AliasBudgetError(f"excessive aliasing: its aliases expand {len(sizes):,} "
                               f"{noun_for(len(sizes), 'node')} to {expanded:,} (kubectl "
                               "refuses it too)")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _allowed_alias_ratio(nodes: int) -> float:
    if nodes <= ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


def safe_load(text: str) -> Any:
    """yaml.safe_load of one document, within the alias budget (raises yaml.YAMLError): from
    the parser's events where they suffice (no anchor), else from the composed nodes."""
    data = _data_without_nodes(text)
    if data is not _COMPOSE:
        return data
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        check_alias_budget(node)
        return construct_plain(loader, node) if node is not None else None
    finally:
        loader.dispose()


# What a document nested past the parser's reach is told (kubectl reads deeper: this is gpudra
# saying it could not read it, never passing it over).
NESTED_TOO_DEEPLY = ("nested too deeply for gpudra to read (a few hundred levels of lists, "
                     "about 990 of mappings)")


class ParseError(Exception):
    """A chunk is not valid YAML. `line` is 1-based in the file. `not_an_object`: it is YAML,
    but with a tag no constructor knows (GitLab's `!reference`) in a document that is no
    Kubernetes object: such a document is skipped, not an input error."""

    def __init__(self, message: str, line: int | None, not_an_object: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.not_an_object = not_an_object


class NotAnObject(yaml.MarkedYAMLError):
    """Construction failed (an unknown tag) in a document that is not a Kubernetes object."""


def looks_like_object(node: yaml.Node | None) -> bool:
    """A Kubernetes object (a mapping with `apiVersion` and `kind`), or a list of them: what
    gpudra reads as manifests. Anything else is a values, CI or tool configuration file."""
    if isinstance(node, yaml.SequenceNode):
        return True
    keys = {k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)} \
        if isinstance(node, yaml.MappingNode) else set()
    return {"apiVersion", "kind"} <= keys


def construct_data(loader: Any, node: yaml.Node) -> Any:
    """construct_plain; a tag no constructor knows is NotAnObject outside Kubernetes objects
    (which kubectl would read, and gpudra must not guess about: there it stays an error)."""
    try:
        return construct_plain(loader, node)
    except yaml.constructor.ConstructorError as exc:
        if looks_like_object(node):
            raise
        raise NotAnObject(exc.context, exc.context_mark, exc.problem, exc.problem_mark) \
            from None


def parse_error(exc: Exception, chunk: Chunk) -> ParseError:
    """A YAML (or constructor) failure of `chunk` as a ParseError with its file line."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = chunk.first_line + mark.line if mark is not None else chunk.first_line
        return ParseError(_one_line(exc), line, isinstance(exc, NotAnObject))
    if isinstance(exc, yaml.YAMLError):
        return ParseError(_one_line(exc), chunk.first_line)
    if isinstance(exc, RecursionError):
        return ParseError(NESTED_TOO_DEEPLY, chunk.first_line)
    # PyYAML's constructors raise these for e.g. unhashable keys or huge alias fan-out.
    return ParseError(f"cannot load document: {exc}", chunk.first_line)


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A parsed document: plain data and the 1-based file line of every key and list item."""

    data: Any
    lines: LineIndex  # a dict for YAML; computed on demand for JSON (sources/json_lines.py)
    chunk: Chunk


def parse_chunk(chunk: Chunk, *, lines: bool = True) -> ParsedDocument:
    """Parse one document. Trailing tabs/spaces (which kubectl tolerates) are retried without.
    `lines=False`: no line index (empty), for data nothing points into, such as an inventory
    of 100,000 devices (the index is a fifth of its parse)."""
    try:
        return _parse(chunk, lines=lines)
    except ParseError as first:
        if "\t" not in chunk.text:
            raise
        stripped = "\n".join(ln.rstrip(" \t\r") for ln in chunk.text.split("\n"))
        try:
            return _parse(Chunk(stripped, chunk.first_line), keep=chunk, lines=lines)
        except ParseError:
            raise first from None


def parse_data(chunk: Chunk) -> ParsedDocument:
    """parse_chunk without the line index."""
    return parse_chunk(chunk, lines=False)


def _parse(chunk: Chunk, keep: Chunk | None = None, lines: bool = True) -> ParsedDocument:
    if not lines:
        data = _data_without_nodes(chunk.text)
        if data is not _COMPOSE:
            no_lines: dict[Path_, int] = {}
            return ParsedDocument(data, no_lines, keep or chunk)
    loader = _Loader(chunk.text)
    try:
        node = loader.get_single_node()
        if "&" in chunk.text:  # no anchor, no alias
            check_alias_budget(node)
        data = construct_data(loader, node) if node is not None else None
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise parse_error(exc, chunk) from None
    finally:
        loader.dispose()
    index: dict[Path_, int] = {}
    if node is not None and lines:
        _index(node, (), chunk.first_line, index)
    return ParsedDocument(data, index, keep or chunk)


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BOOL_VALUES = yaml.constructor.SafeConstructor.bool_values


class _Unusual(Exception):
    """A node the fast path does not handle (merge keys, complex keys, !!set...)."""


def construct_plain(loader: Any, node: yaml.Node) -> Any:
    """construct_document's result for the plain str/int/bool/null maps and lists that
    manifests are made of, without PyYAML's generic (and slow) constructor machinery. Any other
    tag is built by the loader's own constructor; documents with merge keys or complex keys
    are handed to construct_document whole."""
    memo: dict[int, Any] = {}  # aliases share one object, as with construct_document
    # Equal strings of a document become one object: a ResourceSlice repeats its keys and
    # values per device, and one object each is what pickling (workers send documents back),
    # memory and freeing 100,000 devices' worth of them cost.
    strings: dict[str, str] = {}
    shared = strings.setdefault

    def build(n: yaml.Node) -> Any:
        tag = n.tag
        cls = n.__class__
        if cls is yaml.ScalarNode:
            simple = _simple_scalar(tag, n.value, shared)
            return simple if simple is not _NOT_SIMPLE else loader.construct_object(n, deep=True)
        done = memo.get(id(n))
        if done is not None:
            return done
        if cls is yaml.MappingNode and tag == _MAP:
            mapping: dict[Any, Any] = {}
            memo[id(n)] = mapping
            for key_node, value_node in n.value:
                if key_node.__class__ is not yaml.ScalarNode or key_node.tag == "tag:yaml.org,2002:merge":
                    raise _Unusual
                mapping[build(key_node)] = build(value_node)
            return mapping
        if cls is yaml.SequenceNode and tag == _SEQ:
            items: list[Any] = []
            memo[id(n)] = items
            items.extend(build(item) for item in n.value)
            return items
        raise _Unusual

    try:
        return build(node)
    except _Unusual:
        return loader.construct_document(node)


def data_from_events(text: str) -> Any:
    """construct_plain's result for one document without an anchor, built from the parser's
    events: no node tree is composed, which is most of what the C loader spends on a document
    when no line index is wanted. Raises _Unusual for what only the composed path handles (a
    tag, an anchor or alias, a complex or merge key, more than one document) and the parser's
    yaml.YAMLError for broken text; the caller then parses it that way."""
    loader = _Loader(text)
    next_event = loader.get_event
    try:
        next_event()  # the stream's start
        if next_event().__class__ is yaml.StreamEndEvent:
            return None  # comments only: no document
        strings: dict[str, str] = {}
        shared = strings.setdefault
        plain: dict[str, Any] = {}
        # The open collections, innermost last: (collection, is a mapping, its pending key).
        above: list[tuple[Any, bool, Any]] = []
        current: Any = None
        in_mapping = False
        key: Any = _NO_KEY
        root: Any = None
        while True:
            # Any: the events are told apart by their class, which the checker cannot follow.
            event: Any = next_event()
            cls = event.__class__
            if cls is yaml.ScalarEvent:
                if event.anchor is not None or event.tag not in (None, "!"):
                    raise _Unusual
                value = event.value
                item: Any
                if not event.implicit[0]:  # quoted, a block or `!`: a string whatever it says
                    item = shared(value, value)
                else:  # a document repeats its plain scalars: each is resolved once
                    item = plain.get(value, _UNSEEN)
                    if item is _UNSEEN:
                        item = plain[value] = _plain_scalar(loader, event, shared)
            elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
                if event.anchor is not None or event.tag not in (None, "!") or \
                        (in_mapping and key is _NO_KEY):  # a collection as a key
                    raise _Unusual
                item = {} if cls is yaml.MappingStartEvent else []
                if current is None:
                    root = item
                elif in_mapping:
                    current[key] = item
                else:
                    current.append(item)
                above.append((current, in_mapping, key))
                current, in_mapping, key = item, cls is yaml.MappingStartEvent, _NO_KEY
                continue
            elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
                current, in_mapping, key = above.pop()
                if current is None:
                    break
                key = _NO_KEY
                continue
            else:  # an alias
                raise _Unusual
            if current is None:  # a document that is one scalar
                root = item
                break
            if not in_mapping:
                current.append(item)
            elif key is _NO_KEY:
                key = item
            else:
                current[key] = item
                key = _NO_KEY
        next_event()  # the document's end
        if next_event().__class__ is not yaml.StreamEndEvent:
            raise _Unusual  # a second document: the composer's error says so
        return root
    finally:
        loader.dispose()


def _data_without_nodes(text: str) -> Any:
    """data_from_events(text), or _COMPOSE where the composed path must build it: a document
    with an anchor (so with aliases and an alias budget), one data_from_events leaves to it,
    and broken text (whose error that path reports with its position)."""
    if "&" in text:
        return _COMPOSE
    try:
        return data_from_events(text)
    except (_Unusual, yaml.YAMLError):
        return _COMPOSE


def _plain_scalar(loader: Any, event: yaml.ScalarEvent, shared: Callable[[str, str], str]
                  ) -> Any:
    """What construct_plain makes of a plain scalar: its tag resolved, then constructed."""
    value = event.value
    tag = _resolve_scalar(value, event.implicit) if len(value) <= 64 else \
        loader.resolve(yaml.ScalarNode, value, event.implicit)
    simple = _simple_scalar(tag, value, shared)
    if simple is not _NOT_SIMPLE:
        return simple
    if tag == _MERGE:
        raise _Unusual
    # A float, a timestamp, an int in another base: the loader's constructor (all immutable,
    # so one object may stand for every occurrence).
    # types-PyYAML: the C parser's Mark is a class of its own, which ScalarNode keeps all the same.
    node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark,  # type: ignore[arg-type]
                           event.style)
    return loader.construct_object(node, deep=True)


def _simple_scalar(tag: str, value: str, shared: Callable[[str, str], str]) -> Any:
    """A str, decimal int, bool or null scalar's value, without PyYAML's constructor machinery
    (one object per distinct string of a document, through `shared`); _NOT_SIMPLE for any
    other tag."""
    if tag == _STR:
        return shared(value, value)
    if tag == _INT and value.isdigit() and (value[0] != "0" or value == "0"):
        return int(value)
    if tag == _BOOL:
        return _BOOL_VALUES[value.lower()]
    if tag == _NULL:
        return None
    return _NOT_SIMPLE


_MERGE = "tag:yaml.org,2002:merge"
_UNSEEN = object()
_NOT_SIMPLE = object()
_COMPOSE = object()  # _data_without_nodes: the composed path builds this document
_NO_KEY = object()  # a mapping waiting for its next key (None is a valid key: `~: x`)


def _index(node: yaml.Node, path: Path_, offset: int, out: dict[Path_, int]) -> None:
    # Iterative: deep documents must not hit the recursion limit. An alias back to an
    # ancestor (`a: &x [*x]`) is not followed again, so recursive documents terminate.
    stack: list[tuple[yaml.Node, Path_, tuple[int, ...]]] = [(node, path, ())]
    while stack:
        current, here, above = stack.pop()
        if isinstance(current, yaml.MappingNode):
            if id(current) in above:
                continue
            above = (*above, id(current))
            for key_node, value_node in current.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                sub = here + (key_node.value,)
                out.setdefault(sub, offset + key_node.start_mark.line)
                stack.append((value_node, sub, above))
        elif isinstance(current, yaml.SequenceNode):
            if id(current) in above:
                continue
            above = (*above, id(current))
            for i, item in enumerate(current.value):
                sub = here + (i,)
                out.setdefault(sub, offset + item.start_mark.line)
                stack.append((item, sub, above))


def _one_line(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        mark = exc.problem_mark
        where = f" (column {mark.column + 1})" if mark is not None else ""
        return "; ".join(parts) + where if parts else str(exc).splitlines()[0]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
