"""What convert reads of one input file: its documents, each as the audit classifies it
(gpudra.sources.reading.documents), and of those the ones convert plans, as node trees.

One file at a time: the caller plans and edits a file before it reads the next, so a tree
holds the node trees of one file at once, not those of every GPU document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpudra.convert.openshift import objects_of
from gpudra.convert.records import WorkloadResult
from gpudra.k8s.devices import DEVICE_NAME_PATTERN
from gpudra.k8s.objects import PathT
from gpudra.results.model import InputError
from gpudra.printable import short_repr
from gpudra.sources import ScanStats
from gpudra.sources.documents import Chunk, ParseError
from gpudra.sources.discovery import STDIN, InputFile
from gpudra.sources.reading import ReadFile, documents
from gpudra.sources.prescan import CONVERT_NEEDLES
from gpudra.sources.text_requests import TextRequest, text_allocates, text_requests
from gpudra.yamledit.yaml_nodes import NodeDocument, compose_chunk
from gpudra.yamledit.ops import Op

_DEVICE = re.compile(DEVICE_NAME_PATTERN)


@dataclass
class Doc:
    chunk: Chunk
    nodes: NodeDocument | None = None
    ops: list[Op] = field(default_factory=list)
    new_objects: list[dict[str, Any]] = field(default_factory=list)
    results: list[WorkloadResult] = field(default_factory=list)
    outcomes: dict[PathT, WorkloadResult] = field(default_factory=dict)  # by object path
    loaded: list[WorkloadResult] = field(default_factory=list)  # found while reading it
    existing: Any = None  # the data of a document read but never edited (JSON)

    @property
    def data(self) -> Any:
        """What planning reads of the document: its objects' data (or a JSON document's)."""
        return self.nodes.data if self.nodes is not None else self.existing


@dataclass
class File:
    entry: InputFile
    raw: bytes
    json: bool = False  # a .json file of JSON: one document, which new objects cannot follow
    docs: list[Doc] = field(default_factory=list)

    @property
    def bom(self) -> bool:
        return self.raw.startswith(b"\xef\xbb\xbf")

    def release_nodes(self) -> None:
        """Let the node trees go once the file is edited; the data stays (for overlays)."""
        for doc in self.docs:
            if doc.nodes is not None:
                doc.nodes = NodeDocument(None, doc.nodes.data)


def load(read: ReadFile, stats: ScanStats, errors: list[InputError]) -> File | None:
    """A file's documents as convert plans them, read as the audit reads them: the documents
    audit calls broken are errors here too (and their file is left untouched), the ones it
    skips are skipped. Of the parsed ones, only those with a convert needle are planned."""
    entry = read.entry
    if read.text is None:
        # Nothing to convert: keep no bytes, except stdin's, which is echoed back unchanged.
        return File(entry, read.raw) if entry.label == STDIN else None
    f = File(entry, read.raw, json=read.json)
    broken = False
    not_objects: list[tuple[Doc, list[TextRequest]]] = []
    for document in documents(read, compose_chunk, stats):
        doc = Doc(document.chunk)
        f.docs.append(doc)
        text = document.chunk.text
        if document.error is not None:
            error = document.error
            errors.append(InputError(error.file, f"{error.message}; file left untouched",
                                     error.line))
            broken = True
        elif document.skipped is not None:
            # No Kubernetes object: read as text, as the audit reads it (GPU701), and never
            # planned, since a pod spec in it is another tool's to build pods from.
            requests = [r for r in text_requests(entry.label, text, document.chunk.first_line)
                        if r.allocates]
            if requests:
                not_objects.append((doc, requests))
        elif document.template is not None and text_allocates(entry.label, text):
            where = "" if entry.role != "manifest" else f" (line {document.chunk.first_line})"
            doc.loaded.append(WorkloadResult(
                entry.label, "", None, None, "blocked",
                "Helm chart file: change the chart's values/templates to render claims"
                if entry.role != "manifest" else
                "Go/Helm template: change the template or its values; gpudra never edits "
                f"templates{where}"))
        elif read.utf16:
            if document.parsed is not None and _DEVICE.search(text):
                doc.loaded.append(WorkloadResult(
                    entry.label, "", None, None, "blocked",
                    "UTF-16 manifest: convert writes UTF-8 only; save it as UTF-8 to convert "
                    "it"))
            elif document.parsed is not None:
                doc.existing = document.parsed.data  # its DRA objects' names stay taken
        elif document.parsed is not None and read.json and \
                not any(n in text for n in CONVERT_NEEDLES):
            doc.existing = document.parsed.data  # its DRA objects' names stay taken
        elif document.parsed is not None and any(n in text for n in CONVERT_NEEDLES):
            if read.json:
                # Read as JSON (json module) by the audit; edited as the YAML it also is,
                # its layout kept (docs/convert.md, JSON manifests).
                try:
                    doc.nodes = compose_chunk(document.chunk)
                except ParseError as exc:
                    doc.loaded.append(WorkloadResult(
                        entry.label, "", None, None, "blocked",
                        f"JSON that gpudra's editor cannot read ({exc.message}): convert it "
                        "by hand"))
                    continue
            else:
                # compose_chunk's node tree: only a JSON file's document is a ParsedDocument
                assert isinstance(document.parsed, NodeDocument)
                doc.nodes = document.parsed
            malformed = _malformed_metadata(doc.nodes.data) or (
                _malformed_affinity(doc.nodes.data) if "nodeSelectorTerms" in text else None)
            if malformed:
                errors.append(InputError(entry.label, f"{malformed}: the API server rejects such "
                                         "an object; file left untouched",
                                         document.chunk.first_line))
                broken = True
        elif document.parsed is None and document.template is None and \
                "ProvisioningRequest" in text:
            # Not edited, but read: a PodTemplate it names is planned differently
            # (gpudra.convert.provisioning).
            doc.existing = _data_or_none(document.chunk)
    if not_objects:
        # One workload per file, as the audit counts a file of text (AuditContext.note_template).
        found = [r for _, requests in not_objects for r in requests]
        shown = ", ".join(f"{r.shown} (line {r.line})" for r in found[:_SHOWN])
        more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
        not_objects[0][0].loaded.append(WorkloadResult(
            entry.label, "", None, None, "blocked",
            f"{NOT_AN_OBJECT_REASON}: it sets {shown}{more}; change them in this file, or in "
            "the tool that reads it (a job spec, values or config file), which passes them to "
            "its pods"))
    return None if broken else f


NOT_AN_OBJECT_REASON = "not a Kubernetes object (no apiVersion and kind), so gpudra never edits it"
_SHOWN = 5


def _data_or_none(chunk: Chunk) -> Any:
    """A document's data read only to look at (never edited): None when it does not parse
    (a document without a GPU is not convert's to report)."""
    try:
        return compose_chunk(chunk).data
    except ParseError:
        return None


def _malformed_metadata(data: Any) -> str | None:
    """What makes an object of the document unreadable to the planner: a `metadata` (its own,
    or its pod template's) that is not a mapping, or a name or namespace that is not a
    string."""
    for obj, _ in objects_of(data):
        kind = obj.get("kind") or "object"
        for where, value in (("metadata", obj.get("metadata")),
                             ("spec.template.metadata",
                              _get(_get(obj.get("spec"), "template"), "metadata"))):
            if value is not None and not isinstance(value, dict):
                shape = "a list" if isinstance(value, list) else f"the scalar {value!r}"
                return f"{kind} {where} is {shape}, not a mapping"
            for key in ("name", "generateName", "namespace"):
                field = _get(value, key)
                if field is not None and not isinstance(field, str):
                    return f"{kind} {where}.{key} is {field!r}, not a string"
    return None


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _malformed_affinity(data: Any) -> str | None:
    """A required node affinity of the wrong shape anywhere in the document's objects (a
    `values: 5`): the API server rejects it, and the planner (convert.placement) reads it."""
    for obj, _ in objects_of(data):
        stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
        while stack:
            node, where, depth = stack.pop()
            if depth > 64:  # deeper than any kind keeps a pod spec
                continue
            pairs = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in pairs:
                at = f"{where}.{key}" if isinstance(node, dict) else f"{where}[{key}]"
                if key == "nodeAffinity" and isinstance(node, dict):
                    problem = _affinity_shape(child, at.lstrip("."))
                    if problem:
                        return f"{obj.get('kind') or 'object'} {problem}"
                elif isinstance(child, (dict, list)):
                    stack.append((child, at, depth + 1))
    return None


def _affinity_shape(affinity: Any, at: str) -> str | None:
    required, required_at = _get(affinity, _REQUIRED), f"{at}.{_REQUIRED}"
    terms, terms_at = _get(required, "nodeSelectorTerms"), f"{required_at}.nodeSelectorTerms"
    problem = _shape(affinity, at, dict) or _shape(required, required_at, dict) or \
        _shape(terms, terms_at, list)
    if problem or not isinstance(terms, list):
        return problem
    for t, term in enumerate(terms):
        problem = _shape(term, f"{terms_at}[{t}]", dict)
        for name in ("matchExpressions", "matchFields"):
            expressions, field_at = _get(term, name), f"{terms_at}[{t}].{name}"
            problem = problem or _shape(expressions, field_at, list)
            for e, expression in enumerate(expressions if isinstance(expressions, list) else ()):
                problem = problem or _shape(expression, f"{field_at}[{e}]", dict) or \
                    _shape(_get(expression, "values"), f"{field_at}[{e}].values", list)
        if problem:
            return problem
    return None


def _shape(value: Any, where: str, expected: type) -> str | None:
    if value is None or isinstance(value, expected):
        return None
    shape = ("a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict)
             else f"the scalar {short_repr(value)}")
    return f"{where} is {shape}, not {'a list' if expected is list else 'a mapping'}"


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
