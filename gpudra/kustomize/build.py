"""Follow resources through a kustomize tree, as kustomize accumulates them, far enough to know
what each patch targets and what every object is called where the patch applies.

For each kustomization: its resources (files, and the output of kustomization directories),
then its components (their resources join, their patches and name transformers apply to
everything accumulated so far), then its own patches, then `namespace`, `namePrefix` and
`nameSuffix`. Patches match an object by any name it has had (kustomize keeps the original
id); `target:` fields are anchored regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpudra.kustomize.patches import Patch, PatchDoc
from gpudra.kustomize.tree import Kustomization, Tree
from gpudra.k8s.objects import PathT, as_mapping, plural

Located = tuple[int, PathT, Mapping[str, Any]]  # (document index, path in it, object)
ObjectsOf = Callable[[str], Iterable[Located]]


@dataclass(frozen=True)
class Resource:
    """One object as it travels up the tree. `(file, doc, base)` says where its text is."""

    file: str
    doc: int
    base: PathT
    api_version: str
    kind: str
    name: str
    namespace: str | None
    labels: tuple[tuple[str, str], ...] = ()
    prefix: str = ""
    suffix: str = ""
    current_namespace: str | None = None
    names: tuple[str, ...] = ()          # every name it has had, the original first
    via: tuple[str, ...] = ()            # kustomization files it came through, lowest first

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def current_name(self) -> str:
        return f"{self.prefix}{self.name}{self.suffix}"

    @property
    def origin(self) -> tuple[str, int, PathT]:
        return self.file, self.doc, self.base

    def named(self, name: str) -> str:
        """What an object that travelled with this one, originally `name`, is called now."""
        return f"{self.prefix}{name}{self.suffix}"


@dataclass(frozen=True)
class Application:
    """One patch document applied in one place (a component's patch, once per includer)."""

    patch: Patch
    doc: PatchDoc
    targets: tuple[Resource, ...]
    unresolved: str | None = None         # why no target could be named
    scope: tuple[Resource, ...] = ()      # everything the patch could have targeted


@dataclass
class Build:
    tree: Tree
    objects_of: ObjectsOf
    applications: list[Application] = field(default_factory=list)
    outputs: dict[str, list[Resource]] = field(default_factory=dict)
    _objects: dict[str, tuple[Located, ...]] = field(default_factory=dict)

    def objects(self, file: str) -> tuple[Located, ...]:
        """The objects of a resource file, read once per build."""
        if file not in self._objects:
            self._objects[file] = tuple(self.objects_of(file))
        return self._objects[file]

    def files(self) -> tuple[str, ...]:
        """The resource files read so far (all of them once `run` has run)."""
        return tuple(self._objects)

    def data(self, resource: Resource) -> Mapping[str, Any] | None:
        return next((d for doc, base, d in self.objects(resource.file)
                     if (doc, base) == (resource.doc, resource.base)), None)

    def run(self) -> None:
        for directory, k in self.tree.kustomizations.items():
            if not k.is_component:
                self.output(directory)

    def output(self, directory: str, trail: tuple[str, ...] = ()) -> list[Resource]:
        if directory in self.outputs:
            return self.outputs[directory]
        k = self.tree.kustomizations.get(directory)
        if k is None or directory in trail:  # unreadable, or a cycle (kustomize refuses it)
            return []
        acc = self._resources(k, trail + (directory,))
        acc = self._components(k, acc, trail + (directory,))
        acc = self._transform(k, acc)
        self.outputs[directory] = acc
        return acc

    def _resources(self, k: Kustomization, trail: tuple[str, ...]) -> list[Resource]:
        acc: list[Resource] = []
        for entry in k.resources:
            if entry in self.tree.kustomizations:
                acc += self.output(entry, trail)
            else:
                acc += [_resource(entry, doc, base, data)
                        for doc, base, data in self.objects(entry)]
        return acc

    def _components(self, k: Kustomization, acc: list[Resource],
                    trail: tuple[str, ...]) -> list[Resource]:
        for directory in k.components:
            component = self.tree.kustomizations.get(directory)
            if component is None or directory in trail:
                continue
            acc = acc + self._resources(component, trail + (directory,))
            acc = self._components(component, acc, trail + (directory,))
            acc = self._transform(component, acc)
        return acc

    def _transform(self, k: Kustomization, acc: list[Resource]) -> list[Resource]:
        for patch in k.patches:
            for doc in patch.docs:
                targets, why = select(patch, doc, acc)
                self.applications.append(Application(patch, doc, tuple(targets), why,
                                                     tuple(acc)))
        out = []
        for r in acc:
            ns = k.namespace if k.namespace is not None else r.current_namespace
            prefix, suffix = k.name_prefix + r.prefix, r.suffix + k.name_suffix
            renamed = replace(r, prefix=prefix, suffix=suffix, current_namespace=ns,
                              via=r.via + (k.file,))
            if renamed.current_name != r.current_name:
                renamed = replace(renamed, names=r.names + (renamed.current_name,))
            out.append(renamed)
        return out


def _resource(file: str, doc: int, base: PathT, data: Mapping[str, Any]) -> Resource:
    meta = as_mapping(data.get("metadata"))
    labels = as_mapping(meta.get("labels"))
    name = str(meta.get("name") or "")
    ns = str(meta["namespace"]) if meta.get("namespace") else None
    return Resource(file, doc, base, str(data.get("apiVersion") or ""), str(data.get("kind") or ""),
                    name, ns, tuple((str(k), str(v)) for k, v in labels.items()),
                    current_namespace=ns, names=(name,))


def select(patch: Patch, doc: PatchDoc, acc: list[Resource]) -> tuple[list[Resource], str | None]:
    """The objects `doc` applies to, or why they cannot be named."""
    if patch.target is not None:
        try:
            return [r for r in acc if _matches_target(patch.target, r)], None
        except _Unsupported as exc:
            return [], str(exc)
    if patch.json6902:
        return [], "a JSON6902 patch without a target"
    data = doc.data if isinstance(doc.data, Mapping) else {}
    meta = as_mapping(data.get("metadata"))
    kind, name = data.get("kind"), meta.get("name")
    if not kind or not name:
        return [], "a strategic-merge patch without kind and metadata.name"
    group = str(data.get("apiVersion") or "").rpartition("/")[0]
    ns = meta.get("namespace")
    found = [r for r in acc if r.kind == kind and r.group == group and name in r.names
             and (not ns or _same_namespace(ns, r.current_namespace))]
    if len(found) > 1:
        return [], (f"{kind} {name!r} matches {plural(len(found), 'object')} (kustomize "
                    "refuses this)")
    return found, None if found else f"no {kind} {name!r} among the resources"


class _Unsupported(Exception):
    pass


def _matches_target(target: Mapping[str, Any], r: Resource) -> bool:
    checks = [("group", [r.group]), ("version", [r.api_version.rpartition("/")[2]]),
              ("kind", [r.kind]), ("name", list(r.names)),
              ("namespace", [r.current_namespace or ""])]
    for key, values in checks:
        wanted = target.get(key)
        if wanted in (None, ""):
            continue
        if not any(_regex_match(str(wanted), v) for v in values):
            return False
    if target.get("annotationSelector"):
        raise _Unsupported("a target with annotationSelector (gpudra does not read annotations "
                           "for targets)")
    selector = target.get("labelSelector")
    if selector:
        labels = dict(r.labels)
        for term in str(selector).split(","):
            key, sep, value = term.partition("=")
            key, value = key.strip().rstrip("!="), value.strip().lstrip("=")
            if not sep or "!" in term or not re.fullmatch(r"[\w./-]+", key):
                raise _Unsupported(f"labelSelector {selector!r} (gpudra reads only k=v terms)")
            if labels.get(key) != value:
                return False
    return True


def _regex_match(pattern: str, value: str) -> bool:
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return pattern == value


def _same_namespace(a: str | None, b: str | None) -> bool:
    return (a or "default") == (b or "default")
