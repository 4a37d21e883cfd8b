"""Manifest files read in this process: read bytes, pre-scan, and parse only what can matter.

The walk is `discovery`'s, the reading of one file `file_bytes'`; `files` chooses between this
and worker processes (`files_pool`), which run this reading on their share of the files.

Most files in a real tree have nothing to do with GPUs. Reading bytes and looking for a few
needles first keeps a 10,000-file tree close to grep's speed; only documents that contain a
needle are parsed.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gpudra.errors import UnreadableInputError
from gpudra.k8s.objects import (
    LineIndex,
    ManifestObject,
    PathT,
    TemplateText,
    is_list,
    list_members,
    template_objects,
)
from gpudra.printable import may_hold_surrogates, replace_lone_surrogates
from gpudra.results.model import InputError, Skipped
from gpudra.sources import Item, ScanStats
from gpudra.sources.discovery import STDIN, InputFile
from gpudra.sources.documents import (
    NESTED_TOO_DEEPLY,
    Chunk,
    ParsedDocument,
    ParseError,
    parse_chunk,
    parse_data,
    split_documents,
)
from gpudra.sources.file_bytes import (
    UTF16_BOMS,
    WIDE_BOMS,
    decode,
    read_input,
    undecodable,
)
from gpudra.sources.json_lines import load_json
from gpudra.sources.prescan import AUDIT_NEEDLES, might_matter
from gpudra.sources.workers import parse_ahead, pool_allowed, pool_pays, usable_cpus

# The audit's pre-scan needles (gpudra.sources.prescan explains both lists).
NEEDLES = AUDIT_NEEDLES


TEXT_NEEDLES = tuple(needle.decode() for needle in NEEDLES)


# A YAML file at least this long (characters) has its documents parsed by worker processes:
# a 59 MB inventory of 100,000 devices takes a minute in one.
BIG_FILE = 4 << 20


EMPTY_STDIN = "stdin is empty (did the command before the pipe fail?)"


# Helm/Go template actions; Argo's `{{inputs.parameters.x}}` (no leading dot) is not one.
GO_TEMPLATE = re.compile(r"\{\{-?\s*(?:[.$]|/\*|(?:if|else|end|range|with|define|include|template|"
                         r"toYaml|tpl|printf|default|required|quote|nindent|indent)\b)")


@dataclass(frozen=True, slots=True)
class ReadFile:
    """One input as read: its bytes, and its text when a pre-scan needle says it can matter."""

    entry: InputFile
    raw: bytes
    text: str | None = None
    # What read_all's `after` made of the file in the worker process that read it.
    ahead: Any = None

    @property
    def utf16(self) -> bool:
        """Read as UTF-16 (kubectl reads it so; convert writes UTF-8 only)."""
        return self.raw.startswith(UTF16_BOMS)

    @property
    def json(self) -> bool:
        """A .json file that is JSON (a .json file of YAML is read as YAML, as kubectl does)."""
        return self.text is not None and self.entry.label.endswith(".json") and \
            self.text.lstrip().startswith(("{", "["))


def read_entries(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                 stdin: Callable[[], bytes] | None = None,
                 on_file: Callable[[str], None] | None = None
                 ) -> Generator[ReadFile | InputError, None, None]:
    """Every input file, read once: the one reading every command shares, so audit and convert
    agree on what was scanned and on what could not be read. A file counts as scanned once its
    bytes are read, whatever comes next; it is decoded only when it holds a needle
    (docs/exit-codes.md)."""
    for entry in entries:
        if isinstance(entry, InputError):
            yield entry
            continue
        if on_file is not None:
            on_file(entry.label)
        try:
            data = read_input(entry.path, stdin)
        except UnreadableInputError as exc:
            yield InputError(entry.label, str(exc))
            continue
        stats.files += 1
        if entry.label == STDIN and not data.strip():
            yield ReadFile(entry, data)
            yield InputError(STDIN, EMPTY_STDIN)
            continue
        # UTF-16 (and UTF-32) text holds no needle as bytes: decoded first, then searched.
        wide = data.startswith(WIDE_BOMS)
        if not wide and not might_matter(data, NEEDLES):
            yield ReadFile(entry, data)
            continue
        try:
            text = decode(data)
        except UnicodeDecodeError as exc:
            yield ReadFile(entry, data)
            yield InputError(entry.label, undecodable(exc))
            continue
        if wide and not any(needle in text for needle in TEXT_NEEDLES):
            yield ReadFile(entry, data)
            continue
        yield ReadFile(entry, data, text)


T = TypeVar("T")


NOT_AN_OBJECT = "not a Kubernetes object (no apiVersion and kind{})"


@dataclass(frozen=True, slots=True)
class Document(Generic[T]):
    """One document of a file and what reading it gave: nothing (no needle: never parsed),
    template text, a parsed Kubernetes object (or list), a skipped non-object, or an error."""

    chunk: Chunk
    relevant: bool = False
    template: str | None = None  # read as text: helm-template, helm-values or go-template
    parsed: T | ParsedDocument | None = None  # ParsedDocument for a JSON file
    skipped: str | None = None  # why it is no Kubernetes object (still read as text)
    error: InputError | None = None


def documents(read: ReadFile, parse: Callable[[Chunk], T], stats: ScanStats, *,
              ahead: Callable[[list[Chunk]], Callable[[Chunk], T]] | None = None,
              lines: bool = True) -> Iterator[Document[T]]:
    """The documents of a read file, every byte of it in order, each classified the same way
    for every command; `parse` turns a YAML document into what the command works on (audit:
    data and lines; convert: the node tree it edits) and raises ParseError. `ahead`, given
    the documents `parse` would be called for, returns the parse to use instead (one that
    parses them in advance, in worker processes: gpudra.sources.workers). `lines=False`:
    a JSON file is read without its line index, as `parse` is then for YAML."""
    if read.text is None:
        return
    label = read.entry.label
    if read.entry.role != "manifest":
        yield Document(Chunk(read.text, 1), True, template=read.entry.role)
        return
    if read.json:
        parse_json = _parse_json if lines else functools.partial(_parse_json, lines=False)
        yield _classified(Chunk(read.text, 1), parse_json, label, stats)
        return
    needles = TEXT_NEEDLES
    chunks = split_documents(read.text)
    # None: no needle; True: a Helm/Go template (even when it happens to parse, it is not the
    # final manifest); False: parsed.
    templates = [None if not any(n in chunk.text for n in needles)
                 else bool(GO_TEMPLATE.search(chunk.text)) for chunk in chunks]
    if ahead is not None:
        parse = ahead([c for c, t in zip(chunks, templates) if t is False])
    for chunk, template in zip(chunks, templates):
        if template is None:
            yield Document(chunk)
            continue
        if template:
            stats.documents += 1
            yield Document(chunk, True, template="go-template")
            continue
        yield _classified(chunk, parse, label, stats)


def _classified(chunk: Chunk, parse: Callable[[Chunk], Any], label: str,
                stats: ScanStats) -> Document[Any]:  # Document[T] of `parse`'s T
    # Counted as parsed unless it fails to parse (issue 36, item 5: "2 documents parsed" with
    # one of the two unreadable).
    stats.documents += 1
    try:
        parsed = parse(chunk)
    except ParseError as exc:
        if exc.not_an_object:
            return _skip(chunk, NOT_AN_OBJECT.format(f"; {exc.message}"), label, stats)
        if "{{" in chunk.text:
            return Document(chunk, True, template="go-template")
        stats.documents -= 1
        return Document(chunk, True, error=InputError(label, exc.message, exc.line))
    data = parsed.data
    if not (isinstance(data, dict) and "kind" in data and "apiVersion" in data) and \
            not isinstance(data, list):
        return _skip(chunk, NOT_AN_OBJECT.format(""), label, stats, parsed)
    return Document(chunk, True, parsed=parsed)


def _skip(chunk: Chunk, reason: str, label: str, stats: ScanStats,
          parsed: Any = None) -> Document[Any]:
    stats.skipped.append(Skipped(label, chunk.first_line, reason))
    return Document(chunk, True, parsed=parsed, skipped=reason)


def _parse_json(chunk: Chunk, *, lines: bool = True) -> ParsedDocument:
    """JSON through the json module (a YAML parse of a 30 MB List costs 30-100x as much);
    lines come from gpudra.sources.json_lines (`lines=False`: none, as parse_data). YAML is
    only the fallback for the rare .json file that is not JSON but is YAML (unquoted keys,
    comments), as kubectl reads those too."""
    try:
        index: LineIndex = {}  # lines=False: no line index
        if lines:
            data, index = load_json(chunk.text)
        else:
            data = json.loads(chunk.text)
    except (ValueError, RecursionError) as exc:
        try:
            return parse_chunk(chunk, lines=lines)
        except ParseError:
            if isinstance(exc, json.JSONDecodeError):
                raise ParseError(exc.msg, exc.lineno) from None
            if isinstance(exc, RecursionError):
                raise ParseError(NESTED_TOO_DEEPLY, 1) from None
            raise ParseError(f"cannot load document: {type(exc).__name__}", 1) from None
    if may_hold_surrogates(chunk.text):  # `"\ud800"`: U+FFFD, as kubectl decodes it
        replace_lone_surrogates(data)
    return ParsedDocument(data, index, chunk)


def load_items(read: ReadFile, stats: ScanStats, *, lines: bool = True) -> Iterator[Item]:
    """Turn one read file into objects, template texts and errors (`lines=False`: objects
    without a line index, see parse_chunk)."""
    label = read.entry.label
    ahead = None
    if read.text is not None and pool_pays(len(read.text), BIG_FILE):
        if pool_allowed():
            ahead = functools.partial(parse_ahead, lines=lines, workers=usable_cpus())
    for doc in documents(read, parse_chunk if lines else parse_data, stats, ahead=ahead,
                         lines=lines):
        if doc.error is not None:
            yield doc.error
        elif doc.template is not None:
            yield TemplateText(label, doc.chunk.text, doc.chunk.first_line, doc.template,
                               read.entry.chart if doc.template.startswith("helm") else None)
        elif doc.skipped is not None:
            # Values and config files: text rules read them, since their structure is unknown.
            yield TemplateText(label, doc.chunk.text, doc.chunk.first_line, "not-a-manifest")
        elif doc.parsed is not None:
            yield from objects_of(doc.parsed, label)


def objects_of(parsed: ParsedDocument, label: str) -> Iterator[ManifestObject]:
    """Objects in a parsed document. The document itself always comes first (text rules read
    it; non-object documents such as dashboards are kept); a List yields its items after it
    (the items of Lists inside it too, at any depth, as kubectl and kustomize flatten them), an
    OpenShift Template the objects `oc process` creates from it."""
    data = parsed.data
    chunk = parsed.chunk
    template = chunk.helm_source
    members: Iterator[tuple[Any, PathT]] | None = None
    if isinstance(data, list):
        members = list_members(data)
        data = {"items": data}
    elif is_list(data):
        members = list_members(data["items"], ("items",))
    elif (objects := template_objects(data)) is not None:
        members = ((item, ("objects", i)) for i, item in enumerate(objects)
                   if isinstance(item, dict))
    if not isinstance(data, dict):
        return
    yield ManifestObject(data, label, chunk.first_line, parsed.lines, chunk.text, (), template,
                         listing=members is not None)
    for item, base in members or ():
        line = parsed.lines.get(base) or chunk.first_line  # lines are 1-based: never 0
        yield ManifestObject(item, label, line, parsed.lines, chunk.text, base, template,
                             in_list=True)


def scan_entries(entries: Iterable[InputFile | InputError], *, stats: ScanStats,
                 stdin: Callable[[], bytes] | None = None,
                 on_file: Callable[[str], None] | None = None,
                 lines: bool = True) -> Iterator[Item]:
    """scan, in this process, for entries already discovered."""
    for read in read_entries(entries, stats=stats, stdin=stdin, on_file=on_file):
        if isinstance(read, InputError):
            yield read
        else:
            yield from load_items(read, stats, lines=lines)
