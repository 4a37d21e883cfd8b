"""An export (`kubectl get ... -o yaml`) served as the cluster it was read from.

`cutover --from` must plan exactly what `cutover` plans on the live cluster, and the live
reader (gpudra.sources.live.ClusterSource) is what decides which objects are workloads: a
CronJob's Jobs, a JobSet's Jobs, a LeaderWorkerSet's StatefulSets (the worker ones controlled
by a leader pod), an InferenceService's Deployment are children whose pods count for their top
owner. Rather than a second owner resolution for files, the exported objects are listed to that
same reader through the reading interface it uses (`resource`, `list`, `get`, `discovery`).

A resource type is "served" when the export holds an object of its group and kind: a kind the
export lacks reads as a type the cluster does not serve (nothing to read, nothing wrong), as
live.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudra.k8s.objects import dig

if TYPE_CHECKING:
    from gpudra.cluster.discovery import Versions
    from gpudra.cluster.records import ResourceError

GroupKind = tuple[str, str]


@dataclass(frozen=True)
class ExportedType:
    """One resource type of the export: its group, plural and kind (the version is whatever
    each object was exported at)."""

    group: str
    name: str
    kind: str


class ExportedCluster:
    """The objects of an export, read as a cluster whose every list answers in one page."""

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        by_type: dict[GroupKind, list[Mapping[str, Any]]] = {}
        for obj in objects:
            by_type.setdefault(_group_kind(obj), []).append(obj)
        self._by_type = by_type

    # -- the reading interface of gpudra.cluster.Cluster that ClusterSource uses --

    def resource(self, group: str, name: str, version: Versions = None) -> ExportedType | None:
        for found_group, kind in self._by_type:
            if found_group == group and name in _plurals(kind):
                return ExportedType(group, name, kind)
        return None

    def list(self, resource: ExportedType, **_: Any) -> Iterator[list[dict[str, Any]]]:
        items = self._by_type.get((resource.group, resource.kind), [])
        if items:
            yield [dict(obj) for obj in items]

    def get(self, resource: ExportedType, name: str, namespace: str | None = None
            ) -> dict[str, Any] | None:
        for obj in self._by_type.get((resource.group, resource.kind), []):
            if dig(obj, "metadata", "name") == name and \
                    (dig(obj, "metadata", "namespace") or None) == (namespace or None):
                return dict(obj)
        return None

    @property
    def discovery(self) -> ExportedCluster:
        return self

    def groups(self) -> dict[str, None]:
        return {group: None for group, _ in self._by_type}

    def find_kind(self, group: str, kind: str, version: Versions = None) -> ExportedType | None:
        if (group, kind) not in self._by_type:
            return None
        return ExportedType(group, _plurals(kind)[0], kind)

    @property
    def errors(self) -> tuple[ResourceError, ...]:
        return ()  # a file read is complete: what could not be read was refused before


def _group_kind(obj: Mapping[str, Any]) -> GroupKind:
    return str(obj.get("apiVersion", "")).rpartition("/")[0], str(obj.get("kind", ""))


def _plurals(kind: str) -> tuple[str, ...]:
    """The plurals the API server may give `kind` (the regular English forms: `deviceclasses`,
    `policies`); the reads name builtin types by plural and CRDs by kind plus `s`."""
    lower = kind.lower()
    forms = [f"{lower}s", f"{lower}es"]
    if lower.endswith("y"):
        forms.append(f"{lower[:-1]}ies")
    return tuple(forms)
