"""The DRA objects of a tree as a planning pass leaves them, by kind, namespace and name: what
the overlay planner of a kustomize tree looks names up in (convert/treeview.py). Apart from
the tree view, so that a pass over a tree without kustomizations loads none of the overlay
machinery."""

from __future__ import annotations

from typing import Any

from gpudra.convert.openshift import objects_of
from gpudra.convert.reading import Doc, File
from gpudra.yamledit.ops import apply_to_data

ClaimKey = tuple[object, object, object]  # (kind, namespace or "default", name) as written


class ClaimIndex:
    """The DRA objects of the tree after a pass, by kind, namespace and name: the first one
    in file order, also when files are added out of order (a file that waited for quotas)."""

    def __init__(self) -> None:
        self._found: dict[ClaimKey, tuple[int, Any]] = {}

    def add(self, f: File, position: int) -> None:
        for doc in f.docs:
            found = [obj for obj, _ in objects_of(after_data(doc))] if doc.nodes is not None \
                else []
            for obj in found + doc.new_objects:
                key = claim_key(obj)
                if key is not None and (key not in self._found or
                                        position < self._found[key][0]):
                    self._found[key] = (position, obj)

    def objects(self) -> dict[ClaimKey, Any]:
        return {key: obj for key, (_, obj) in self._found.items()}


def claim_key(obj: Any) -> ClaimKey | None:
    if isinstance(obj, dict) and str(obj.get("apiVersion", "")).startswith("resource.k8s.io/"):
        meta = obj.get("metadata") or {}
        return (obj.get("kind"), meta.get("namespace") or "default", meta.get("name"))
    return None


def after_data(doc: Doc) -> Any:
    return apply_to_data(doc.data, doc.ops) if doc.ops else doc.data
