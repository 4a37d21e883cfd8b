"""Where audited objects come from. Every source yields the same items behind one interface.

A source yields `SourceObject`s (manifest objects with file and line, or live cluster objects),
`TemplateText` (text that is not a manifest until rendered) and `InputError`s (an input that
could not be read; the run goes on), and counts what it read in its `stats`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from gpudra.results.model import InputError, NotRead, Skipped
from gpudra.k8s.objects import SourceObject, TemplateText

Item = SourceObject | TemplateText | InputError | NotRead


@dataclass
class ScanStats:
    """What a source read: files and documents (manifests), or objects (a cluster)."""

    files: int = 0
    documents: int = 0
    objects: int = 0
    skipped: list[Skipped] = field(default_factory=list)  # read, but no Kubernetes objects

    def add(self, part: ScanStats) -> None:
        """Count what another reading of some of the same inputs counted (a worker's)."""
        self.files += part.files
        self.documents += part.documents
        self.objects += part.objects
        self.skipped += part.skipped


class Source(Protocol):
    kind: str        # "file" or "cluster": what findings' `source` says

    @property
    def stats(self) -> ScanStats: ...  # read by the audit, never replaced

    def items(self) -> Iterator[Item]: ...


@dataclass(frozen=True)
class FileTree:
    """What a file source was given (`paths`) and every file it read (`files`), for checks
    that need the whole tree (Kustomize overlays); known once its items are all read."""

    paths: tuple[str, ...]
    files: tuple[str, ...]
