"""The tree as a planning pass leaves it, for the overlay planner (convert/overlays.py).

The pass keeps only what the overlays can ask about: the files the kustomize build reads
(their objects' data before and after, and what the pass did with them), and the DRA objects
of the whole tree by name. Every other file is let go once it is edited.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpudra.convert.assembly import FileChange
from gpudra.convert.claim_index import ClaimKey, after_data, claim_key
from gpudra.convert.overlay_records import ObjectState, OverlayPlan, Origin
from gpudra.convert.reading import Doc, File
from gpudra.errors import UnreadableInputError
from gpudra.k8s.objects import PathT
from gpudra.kustomize.build import Build
from gpudra.kustomize.tree import inside, real_roots
from gpudra.sources.discovery import InputFile
from gpudra.sources.file_bytes import read_regular


class TreeView:
    """The tree as this planning pass leaves it, for the overlay planner. `members`: the files
    the build reads, by normalised path, as the pass left them; `read`: every file the pass
    read text of; `claims`: the tree's DRA objects after the pass (ClaimIndex)."""

    def __init__(self, members: dict[str, File], read: set[str], claims: dict[ClaimKey, Any],
                 paths: list[str], changes: list[FileChange], build: Build) -> None:
        self._build = build  # reads each file of the tree once, for every pass
        self._files = members
        self._read = read
        self._roots = real_roots(paths)
        self._pending = {os.path.normpath(c.label): c.new for c in changes}
        self._after: dict[int, Any] = {}
        self._claims = dict(claims)
        self._outside_read = False

    def state(self, origin: Origin) -> ObjectState | None:
        file, index, base = origin
        f = self._files.get(os.path.normpath(file))
        doc = f.docs[index] if f is not None and index < len(f.docs) else None
        if doc is None or doc.nodes is None:
            data = next((d for i, b, d in self._build.objects(file) if (i, b) == (index, base)),
                        None)
            return ObjectState(data, data, False) if data is not None else None
        before = _at(doc.nodes.data, base)
        after = _at(self._after_data(doc), base)
        outcome = doc.outcomes.get(base)
        strategy = outcome.strategy if outcome is not None else None
        return ObjectState(before, after, strategy in ("rewrite", "quota"),
                           outcome.reason if outcome is not None and strategy == "blocked"
                           else None,
                           outcome.claims if outcome is not None else ())

    def _after_data(self, doc: Doc) -> Any:
        if id(doc) not in self._after:
            self._after[id(doc)] = after_data(doc)
        return self._after[id(doc)]

    def writable(self, file: str) -> bool:
        return inside(file, self._roots)

    def read(self, path: str) -> bytes:
        pending = self._pending.get(os.path.normpath(path))
        if pending is not None:
            return pending
        # A regular file up to the input cap: a FIFO or device a patch names is refused.
        try:
            return read_regular(path)
        except UnreadableInputError as exc:
            raise UnreadableInputError(f"{path}: cannot read: {exc}") from None

    def claim_object(self, namespace: str | None, name: str, kind: str) -> Any:
        found = self._claims.get((kind, namespace or "default", name))
        if found is None and not self._outside_read:
            # A base outside the paths, converted in an earlier run: its files are indexed
            # once (indexing keeps the first object per name, so again would add nothing).
            self._outside_read = True
            for file in self._outside_files():
                for _, _, obj in self._build.objects(file):
                    key = claim_key(obj)
                    if key is not None:
                        self._claims.setdefault(key, obj)
            found = self._claims.get((kind, namespace or "default", name))
        return found

    def _outside_files(self) -> list[str]:
        listed = {r for k in self._build.tree.kustomizations.values() for r in k.resources
                  if os.path.isfile(r)}
        return [p for p in sorted(listed) if os.path.normpath(p) not in self._read]


def _at(data: Any, base: PathT) -> Any:
    for part in base:
        data = data[part]
    return data


def labels_of(inputs: list[InputFile]) -> dict[str, str]:
    return {os.path.normpath(e.path): e.label for e in inputs if e.path is not None}


def label_in(labels: dict[str, str], path: str) -> str:
    """How the file scanner names `path`; a file it did not list is named like its
    directory's files (`./overlays/prod/Kustomization`, a new file)."""
    key = os.path.normpath(path)
    if key in labels:
        return labels[key]
    directory = os.path.dirname(key)
    for known, label in labels.items():
        if os.path.dirname(known) == directory:
            return os.path.join(os.path.dirname(label), os.path.basename(key))
    return path


def with_overlay(changes: list[FileChange], overlay: OverlayPlan,
                 labels: dict[str, str]) -> list[FileChange]:
    """The pass's changes with the overlay planner's edits on top (an edit of a file that
    already changes was made from that change's content)."""
    by_path = {os.path.normpath(c.label): c for c in changes}
    for edit in overlay.edits:
        key = os.path.normpath(edit.path)
        earlier = by_path.get(key)
        if earlier is not None:
            by_path[key] = FileChange(earlier.label, earlier.path, earlier.old, edit.new,
                                      earlier.created)
        else:
            exists = os.path.exists(edit.path)
            by_path[key] = FileChange(label_in(labels, edit.path), Path(edit.path), edit.old,
                                      edit.new, not exists)
    return list(by_path.values())


