"""OpenShift Templates: `oc process` creates the objects listed under `objects:`.

A Template is one document whose objects only exist once processed, with `${PARAM}` values
filled in. Convert treats each object as a workload of its own, and puts the claim templates it
needs into the same `objects:` list, so `oc process` creates them together, in the namespace
the objects name (`${NAMESPACE}` stays a parameter). A claim template next to the Template
document would instead be created once, in the Template's own namespace (`openshift`), where
no pod of the processed objects can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.kustomize.resource_files import objects_in
from gpudra.k8s.objects import PathT, template_objects
from gpudra.yamledit.ops import Extend, Op

OBJECTS = "objects"


def objects_of(data: Any) -> list[tuple[Mapping[str, Any], PathT]]:
    """The objects convert plans in a document: a Template's objects, a List's items, or the
    document itself."""
    objects = template_objects(data)
    if objects is not None:
        return [(obj, (OBJECTS, i)) for i, obj in enumerate(objects) if isinstance(obj, dict)]
    return objects_in(data)


def into_objects(data: Any, new_objects: list[dict[str, Any]]) -> list[Op]:
    """Operations that add `new_objects` to a Template's `objects:`; [] for other documents
    (their new objects become documents of their own)."""
    if not new_objects or template_objects(data) is None:
        return []
    return [Extend((OBJECTS,), tuple(new_objects))]
