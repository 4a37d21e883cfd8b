"""Names convert hands out: DRA object names per namespace, request and pod-claim names.

Object names must be unique per kind and namespace once applied. A manifest without a namespace
is applied into the current one, in practice usually `default`, so an unset namespace and
`default` are one namespace here: two workloads named `web`, one with `namespace: default` and
one without, must not both get a template called `web-gpu`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gpudra.dra import emit
from gpudra.k8s.objects import PathT, dig
from gpudra.k8s.workloads import POD_NESTING_KEYS

DEFAULT_NAMESPACE = "default"
# A parameter filled in before the object is applied: OpenShift Templates (`oc process`) and
# envsubst both write `${NAME}`. Names built from one keep it, so each instance gets its own.
_PARAMETER = re.compile(r"(\$\{[A-Za-z_][A-Za-z0-9_]*\})")
_INVALID = re.compile(r"[^a-z0-9.-]+")
_SUFFIXES = {"headGroupSpec": "head", "leaderTemplate": "leader", "workerTemplate": "worker",
             "submitterPodTemplate": "submitter", "predictor": "predictor",
             "transformer": "transformer", "explainer": "explainer"}
_STRUCTURAL = POD_NESTING_KEYS


class ObjectNames:
    """Unique DRA object names per namespace: `name`, then `name-2`, `name-3`, ..."""

    def __init__(self) -> None:
        self._registry = emit.NameRegistry(_object_name)
        self._handed: set[tuple[str, str]] = set()

    def reserve(self, namespace: str | None, name: str) -> None:
        """A name that already exists in the tree is never handed out again."""
        self._registry.reserve(name, namespace or DEFAULT_NAMESPACE)

    def reserve_all(self, names: Iterable[tuple[str | None, str]]
                    ) -> list[tuple[str | None, str, bool]]:
        """`reserve` each (namespace, name); each comes back with whether `unique` had already
        handed it out."""
        reserved = []
        for namespace, name in names:
            reserved.append((namespace, name, self.handed_out(namespace, name)))
            self.reserve(namespace, name)
        return reserved

    def taken(self, namespace: str | None, name: str) -> bool:
        """Whether `name` is reserved or was handed out."""
        return self._registry.taken(name, namespace or DEFAULT_NAMESPACE)

    def handed_out(self, namespace: str | None, name: str) -> bool:
        """Whether `unique` gave out `name` (an existing object's name found too late)."""
        return (namespace or DEFAULT_NAMESPACE, name) in self._handed

    def unique(self, text: str, namespace: str | None) -> str:
        name = self._registry.unique(text, namespace or DEFAULT_NAMESPACE)
        self._handed.add((namespace or DEFAULT_NAMESPACE, name))
        return name


def dra_names(objects: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str | None, str]]:
    """(namespace, name) of each named resource.k8s.io object among `objects`."""
    for obj in objects:
        if str(obj.get("apiVersion", "")).startswith("resource.k8s.io/"):
            meta = obj.get("metadata") or {}
            if meta.get("name"):
                yield meta.get("namespace"), str(meta["name"])


def _object_name(text: str, max_len: int) -> str:
    """A DNS subdomain from `text`; `${PARAM}`s are kept as they are and the text around them
    is cleaned without trimming, since the parameter's value joins it."""
    if not _PARAMETER.search(text):
        return emit.dns_subdomain(text, max_len)
    parts = _PARAMETER.split(text)
    joined = "".join(part if i % 2 else _INVALID.sub("-", part.lower())
                     for i, part in enumerate(parts))
    return joined.strip("-.")


def free_name(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`, ... whichever is not in `taken`."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def workload_name(data: Mapping[str, Any]) -> str:
    metadata = data.get("metadata") or {}
    name = metadata.get("name") or str(metadata.get("generateName") or "").rstrip("-")
    return str(name or str(data.get("kind", "workload")).lower())


def namespace_of(data: Mapping[str, Any]) -> str | None:
    value = (data.get("metadata") or {}).get("namespace")
    return str(value) if value else None


def pod_suffix(data: Mapping[str, Any], path: PathT) -> str:
    """What tells one pod spec of a workload from its others: a replica type, a group name."""
    for i in range(len(path) - 1, -1, -1):
        part = path[i]
        if isinstance(part, int):
            item = dig(data, *path[: i + 1])
            if isinstance(item, Mapping):
                named = item.get("name") or item.get("groupName")
                if named:
                    return emit.dns_label(str(named))
            return str(part)
        if part in _STRUCTURAL:
            continue
        return emit.dns_label(_SUFFIXES.get(part, part))
    return ""
