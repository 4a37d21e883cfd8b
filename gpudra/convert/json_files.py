"""JSON manifest files (`.json`): converted in place like YAML, every line convert does not edit
kept as it was. A JSON file is one JSON value, so the objects convert creates cannot follow the
edited object as a document of their own (`---` is not JSON):

- a `kind: List` (or a top-level array) gets them as items at its end;
- a single object, or a typed list (`PodList`, as `kubectl get -o json` writes), gets them in
  a new file beside it, `<name>-gpu-claims.json` (one object, or a `List` of several), written
  before the edited file, and listed next to the JSON file in every kustomization that lists
  it. Where that file already exists, the workloads are blocked: convert never writes over a
  file it did not create.

The new file's name is the JSON file's with a fixed suffix, in the same directory: nothing read
from a file chooses where convert writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gpudra.convert.assembly import FileChange, blocked_result, kustomization_listing
from gpudra.convert.reading import File
from gpudra.kustomize.tree import Tree
from gpudra.k8s.objects import is_list
from gpudra.yamledit.ops import Extend, Op

SUFFIX = "-gpu-claims.json"


def into_items(data: Any, new_objects: list[dict[str, Any]]) -> list[Op]:
    """Operations that add `new_objects` to a JSON List's items (or a top-level array); []
    for a single object, whose new objects go to its claims file."""
    if not new_objects:
        return []
    if isinstance(data, list):
        return [Extend((), tuple(new_objects))]
    if is_list(data) and data.get("kind") == "List":  # a PodList holds pods: not there
        return [Extend(("items",), tuple(new_objects))]
    return []


def claims_path(f: File) -> Path | None:
    if f.entry.path is None:
        return None
    path = Path(f.entry.path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def refuse_taken(f: File) -> None:
    """Block the workloads of `f` whose new objects would go to a claims file that exists."""
    target = claims_path(f)
    if target is None or not any(doc.new_objects for doc in f.docs) or \
            not os.path.lexists(target):
        return
    for doc in f.docs:
        if doc.new_objects:
            doc.results[:] = [blocked_result(r, f"a JSON file cannot hold the new "
                                             f"ResourceClaimTemplates, and {target.name} "
                                             "(where convert puts them) already exists: move it, "
                                             "or convert with --claims-file")
                              for r in doc.results]
            doc.ops.clear()
            doc.new_objects.clear()


def claims_changes(f: File, tree: Tree | None, pending: list[FileChange]) -> list[FileChange]:
    """The new claims file of an edited single-object JSON file, and the kustomizations that
    list the JSON file, now listing it too."""
    target = claims_path(f)
    objects = [o for doc in f.docs if doc.nodes is not None for o in doc.new_objects]
    if target is None or not objects:
        return []
    newline = "\r\n" if b"\r\n" in f.raw else "\n"
    value: Any = objects[0] if len(objects) == 1 else \
        {"apiVersion": "v1", "kind": "List", "items": objects}
    text = newline.join(json.dumps(value, indent=2, ensure_ascii=False).split("\n")) + newline
    changes = [FileChange(str(target), target, b"", text.encode("utf-8"), created=True)]
    return changes + kustomization_listing(tree, f.entry.path or "", str(target),
                                           pending + changes)
