"""The controller registry, read once from registry.yaml and validated as it is read.

The file ships with gpudra: a mistake in it is gpudra's bug, so the loader raises
RegistryError (and tests/controllers loads it, so the suite fails first). Rows are looked up by
API group, version and kind; an object whose kind has no row is "unchecked": nobody has read its
controller, so convert blocks it unless `.gpudra.yaml` vouches for the kind
(gpudra.results.vouches).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import yaml

from gpudra.errors import GpudraError

Action = Literal["safe", "writes", "native", "blocks"]
ACTIONS: tuple[Action, ...] = ("safe", "writes", "native", "blocks")
# Actions whose outcome depends on the object: a module of gpudra.convert acts for the row.
NEEDS_HANDLER = frozenset({"writes", "native"})
_KEYS = frozenset({"group", "versions", "kinds", "podSpecs", "containers", "controller",
                   "readsGpuLimit", "convert", "handler", "does", "reason", "source"})
_REQUIRED = _KEYS - {"containers", "handler"}
_SOURCE_KEYS = frozenset({"repo", "commit", "files"})


class RegistryError(GpudraError):
    """registry.yaml is not what the loader expects (a bug of gpudra's, caught by its tests)."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a row was checked: a repository, a commit (or tag) and the files read there."""

    repo: str
    commit: str
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ControllerRow:
    """One controller's kinds in one API group, and what convert does with them."""

    group: str
    versions: tuple[str, ...]
    kinds: tuple[str, ...]
    pod_specs: tuple[str, ...]
    containers: tuple[str, ...]
    controller: str
    reads_gpu_limit: bool
    convert: Action
    handler: str | None
    does: str
    reason: str
    source: Source

    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{v}" if self.group else v for v in self.versions)


@dataclass(frozen=True)
class Registry:
    rows: tuple[ControllerRow, ...]
    # (group, version, kind) -> row: audit asks once per GPU workload of a large cluster.
    _index: dict[tuple[str, str, str], ControllerRow] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for row in self.rows:
            for version in row.versions:
                for kind in row.kinds:
                    self._index.setdefault((row.group, version, kind), row)

    def row_for(self, api_version: str, kind: str) -> ControllerRow | None:
        """The row of this exact group, version and kind; None: unchecked."""
        group, _, version = api_version.rpartition("/")
        return self._index.get((group, version, kind))

    def is_unchecked(self, api_version: str, kind: str) -> bool:
        """An object of a custom resource (its group has a dot) that no row covers. Kinds of
        Kubernetes' own groups without a row carry no pod template (ConfigMap, Service)."""
        group = api_version.rpartition("/")[0]
        return bool(kind) and "." in group and self.row_for(api_version, kind) is None


def unchecked_reason(api_version: str, kind: str) -> str:
    """Why convert leaves an unchecked kind alone, and the one line of .gpudra.yaml that lets
    it through."""
    return (f"gpudra has not checked whether {kind}'s controller reads nvidia.com/gpu "
            f"({api_version} is not in its controller registry, docs/controllers.md); if it "
            "does not, vouch for the kind in .gpudra.yaml: "
            f"`vouch: [{{kind: {kind}, apiVersion: {api_version}, owner: <team>, "
            "reason: <why its controller does not read the limit>}]`")


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """The registry that ships with gpudra (read once: it is package data, never input)."""
    text = resources.files("gpudra.controllers").joinpath("registry.yaml").read_text("utf-8")
    return parse_registry(yaml.safe_load(text))


def parse_registry(raw: Any) -> Registry:
    if not isinstance(raw, list) or not raw:
        raise RegistryError("registry.yaml: expected a list of rows")
    rows = tuple(_row(i, entry) for i, entry in enumerate(raw))
    seen: dict[tuple[str, str, str], int] = {}
    for i, row in enumerate(rows):
        for version in row.versions:
            for kind in row.kinds:
                key = (row.group, version, kind)
                if key in seen:
                    raise RegistryError(f"registry.yaml: rows {seen[key]} and {i} both cover "
                                        f"{kind} ({row.api_versions()[0]})")
                seen[key] = i
    return Registry(rows)


def _row(index: int, raw: Any) -> ControllerRow:
    where = f"registry.yaml row {index}"
    if not isinstance(raw, Mapping):
        raise RegistryError(f"{where}: expected a mapping")
    keys = set(map(str, raw))
    if keys - _KEYS or _REQUIRED - keys:
        raise RegistryError(f"{where}: unknown keys {sorted(keys - _KEYS)}, missing "
                            f"{sorted(_REQUIRED - keys)}")
    convert = raw["convert"]
    if convert not in ACTIONS:
        raise RegistryError(f"{where}: convert must be one of {', '.join(ACTIONS)}")
    handler = raw.get("handler")
    if convert in NEEDS_HANDLER and not handler:
        raise RegistryError(f"{where}: convert: {convert} needs the handler that acts")
    if not isinstance(raw["readsGpuLimit"], bool):
        raise RegistryError(f"{where}: readsGpuLimit must be true or false")
    return ControllerRow(
        group=_text(where, "group", raw["group"], empty=True),
        versions=_texts(where, "versions", raw["versions"]),
        kinds=_texts(where, "kinds", raw["kinds"]),
        pod_specs=_texts(where, "podSpecs", raw["podSpecs"], empty=True),
        containers=_texts(where, "containers", raw.get("containers") or [], empty=True),
        controller=_text(where, "controller", raw["controller"]),
        reads_gpu_limit=raw["readsGpuLimit"],
        convert=convert,
        handler=_text(where, "handler", handler) if handler is not None else None,
        does=_text(where, "does", raw["does"]),
        reason=_text(where, "reason", raw["reason"]),
        source=_source(where, raw["source"]),
    )


def _source(where: str, raw: Any) -> Source:
    if not isinstance(raw, Mapping) or set(map(str, raw)) != _SOURCE_KEYS:
        raise RegistryError(f"{where}: source needs exactly repo, commit and files")
    return Source(_text(where, "source.repo", raw["repo"]),
                  _text(where, "source.commit", str(raw["commit"])),
                  _texts(where, "source.files", raw["files"]))


def _text(where: str, key: str, value: Any, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value.strip() and not empty):
        raise RegistryError(f"{where}: {key} must be a non-empty string")
    return " ".join(value.split())


def _texts(where: str, key: str, value: Any, *, empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or (not value and not empty):
        raise RegistryError(f"{where}: {key} must be a list of strings")
    return tuple(_text(where, key, v) for v in value)
