"""What rules look at: Kubernetes objects with provenance, and template text that cannot be parsed."""

from __future__ import annotations

import re

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, overload

from gpudra.results.model import ClusterInfo

PathT = tuple[str | int, ...]  # keys (str) and list indexes (int)


class LineIndex(Protocol):
    """A document's line table: the 1-based file line of a path, if known. A dict for YAML;
    JSON computes lines on demand (gpudra.sources.json_lines)."""

    # Two overloads, as dict.get has them, so that a dict of lines is one.
    @overload
    def get(self, path: PathT, /) -> int | None: ...

    @overload
    def get(self, path: PathT, default: int, /) -> int | None: ...


class SourceObject:
    """A Kubernetes object as rules see it, wherever it came from (a file or the cluster).

    Subclasses hold `data` and say where the object is: `file`/`line_of` for manifests, `cluster`
    for live objects (their findings have no file and no line).
    """

    # Declared here, given by each subclass (as fields or class attributes).
    data: Mapping[str, Any]
    source: str          # "file" or "cluster"
    file: str | None
    text: str            # the document's text, for rules that read text; "" for live objects
    template: str | None
    listing: bool        # a List (or top-level array): object rules skip it, text rules read it
    in_list: bool        # an item of a List: text rules skip it (its List was read already)
    cluster: ClusterInfo | None

    @property
    def api_version(self) -> str:
        value = self.data.get("apiVersion")
        return value if isinstance(value, str) else ""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def kind(self) -> str:
        value = self.data.get("kind")
        return value if isinstance(value, str) else ""

    @property
    def metadata(self) -> Mapping[str, Any]:
        value = self.data.get("metadata")
        return value if isinstance(value, Mapping) else {}

    @property
    def name(self) -> str | None:
        value = self.metadata.get("name") or self.metadata.get("generateName")
        return str(value) if value is not None else None

    @property
    def namespace(self) -> str | None:
        value = self.metadata.get("namespace")
        return str(value) if value is not None else None

    @property
    def annotations(self) -> Mapping[str, Any]:
        value = self.metadata.get("annotations")
        return value if isinstance(value, Mapping) else {}

    @property
    def identity(self) -> tuple[object, ...]:
        """What tells this object from every other one in a run."""
        raise NotImplementedError

    def line_of(self, path: PathT) -> int | None:
        """The 1-based line of `path` in its file; None where the object has no file."""
        return None


@dataclass(frozen=True)
class ManifestObject(SourceObject):
    """One Kubernetes object from a manifest (a ``kind: List`` item is an object of its own).

    `base` is where the object sits inside its document (``("items", 3)`` for a List item);
    `lines` maps document paths to 1-based file lines.
    """

    data: Mapping[str, Any]
    file: str
    first_line: int
    lines: LineIndex
    text: str
    base: PathT = ()
    template: str | None = None
    listing: bool = False
    in_list: bool = False
    source = "file"
    cluster = None

    @property
    def identity(self) -> tuple[object, ...]:
        return (self.file, self.first_line, self.base)

    def line_of(self, path: PathT) -> int:
        """Line of the deepest recorded key on `path` (merge keys and aliases have no own line)."""
        full = self.base + tuple(path)
        while full:
            line = self.lines.get(full)
            if line is not None:
                return line
            full = full[:-1]
        return self.first_line


@dataclass(frozen=True)
class ClusterObject(SourceObject):
    """A live object read from the API server (a top-level controller, or a bare pod)."""

    data: Mapping[str, Any]
    cluster: ClusterInfo | None = None
    source = "cluster"
    file = None
    text = ""
    template = None
    listing = False
    in_list = False

    @property
    def identity(self) -> tuple[object, ...]:
        return ("cluster", self.group, self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class TemplateText:
    """Text that is not YAML until rendered (a Helm template) or not a manifest (values files).

    Rules scan it line by line; `chart` names the chart directory when known.
    """

    file: str
    text: str
    first_line: int
    reason: str
    chart: str | None = None

    def numbered_lines(self) -> Iterator[tuple[int, str]]:
        for offset, line in enumerate(self.text.splitlines()):
            yield self.first_line + offset, line


def dig(value: Any, *keys: Any) -> Any:
    """`value[k1][k2]...` through mappings (str keys) and lists (int indexes); None where the
    path does not exist or goes through something else. Manifests are untyped input."""
    for key in keys:
        if value.__class__ is dict or isinstance(value, Mapping):  # see PLAIN_CONTAINERS
            value = value.get(key)
        elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            return None
    return value


def template_objects(data: Any) -> list[Any] | None:
    """The `objects:` of an OpenShift Template (`template.openshift.io/v1`, or the older `v1`):
    what `oc process` creates; None for anything else."""
    if not isinstance(data, Mapping) or data.get("kind") != "Template":
        return None
    api_version = str(data.get("apiVersion", ""))
    objects = data.get("objects")
    if (api_version.startswith("template.openshift.io/") or api_version == "v1") and \
            isinstance(objects, list):
        return objects
    return None


def is_list(data: Any) -> bool:
    """A ``kind: List`` / ``*List`` object with its ``items``: what kubectl and kustomize
    replace by the objects it holds."""
    kind = data.get("kind") if isinstance(data, Mapping) else None
    return isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list)


def list_members(items: list[Any], at: PathT = ()) -> Iterator[tuple[Mapping[str, Any], PathT]]:
    """The objects of a List's `items` (found at `at`), each with its path in the document, in
    document order. Lists among them are replaced by their own items, at any depth: kubectl
    (cli-runtime's FlattenListVisitor) and kustomize (inlineAnyEmbeddedLists) set no limit, and
    each level costs the document bytes, so the parse bounds it. Iterative: no recursion limit."""
    stack: list[tuple[PathT, Any]] = [((*at, i), item)
                                      for i, item in reversed(list(enumerate(items)))]
    while stack:
        path, item = stack.pop()
        if not isinstance(item, Mapping):
            continue
        if is_list(item):
            inner = item["items"]
            stack += [((*path, "items", i), sub) for i, sub in reversed(list(enumerate(inner)))]
        else:
            yield item, path


def expand_lists(objects: Any) -> Iterator[tuple[Mapping[str, Any], Any]]:
    """Plain objects from `objects` (dicts, or records with ``.data``), each with its record,
    with ``kind: List`` / ``*List`` objects replaced by their items. Items of a typed list as
    the API server returns it (``ResourceSliceList``) carry no ``kind``/``apiVersion``; they
    get the list's (``ResourceSlice``, and the list's ``apiVersion``)."""
    for obj in objects:
        data = getattr(obj, "data", obj)
        if not isinstance(data, Mapping):
            continue
        kind = data.get("kind")
        items = data.get("items")
        if not (isinstance(items, list) and isinstance(kind, str) and kind.endswith("List")):
            yield data, obj
            continue
        item_kind = kind[: -len("List")] if kind != "List" else None
        for item in items:
            if not isinstance(item, Mapping):
                continue
            if item_kind and "kind" not in item:
                item = {"kind": item_kind, "apiVersion": data.get("apiVersion"), **item}
            yield from expand_lists([item])


# What parsed data is made of: `value.__class__ in PLAIN_CONTAINERS` decides most values before
# isinstance against Mapping, which runs a Python-level hook (the walks over 10,000 workloads
# make a million such checks).
PLAIN_CONTAINERS = (dict, list)


def as_mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one: for optional blocks of untyped input."""
    # A plain dict first (PLAIN_CONTAINERS says why).
    return value if value.__class__ is dict or isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty one: for optional lists of untyped input."""
    return value if isinstance(value, list) else []


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`1 file`, `2 files`: every count gpudra says in words goes through here (`many` for a
    plural that is not the noun and an s: `DeviceClass`, `DeviceClasses`)."""
    return f"{n} {noun_for(n, noun, many)}"


def noun_for(n: int, noun: str, many: str | None = None) -> str:
    """`key` for one, `keys` otherwise: for sentences whose count is a list, not a number."""
    return noun if n == 1 else many or f"{noun}s"


def format_path(path: PathT) -> str:
    """``("spec", "containers", 0, "resources")`` -> ``spec.containers[0].resources``."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif out:
            out.append(f".{part}" if _plain(part) else f"['{part}']")
        else:
            out.append(part if _plain(part) else f"['{part}']")
    return "".join(out)


def _plain(key: str) -> bool:
    return key.replace("_", "").replace("-", "").isalnum()


# Names as the API server validates them (apimachinery pkg/util/validation, docs/facts.md): what
# a file may claim for a node, namespace or label before gpudra puts it in a shell command.
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def is_dns_subdomain(name: object) -> TypeGuard[str]:
    """A node's or most objects' name: lower-case DNS subdomain, at most 253 characters."""
    return isinstance(name, str) and len(name) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(name))


def is_dns_label(name: object) -> TypeGuard[str]:
    """A namespace's name: a lower-case DNS label, at most 63 characters."""
    return isinstance(name, str) and bool(_DNS_LABEL.fullmatch(name))


def is_label(key: object, value: object) -> bool:
    """A label the API server accepts: `[prefix/]name` and its value."""
    if not (isinstance(key, str) and isinstance(value, str)):
        return False
    prefix, _, name = key.rpartition("/")
    return (not prefix or is_dns_subdomain(prefix)) and bool(_LABEL_NAME.fullmatch(name)) \
        and bool(_LABEL_VALUE.fullmatch(value))
