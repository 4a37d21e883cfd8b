"""Read a manifest tree for the manifests tier: its objects and the audit's findings, in one
scan: the audit's file source is wrapped so that the objects it yields are kept on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from gpudra.audit.engine import AuditRequest, audit
from gpudra.k8s.objects import ManifestObject
from gpudra.preflight.manifests.checks import ManifestInput
from gpudra.sources import FileTree, Item, ScanStats
from gpudra.sources.files import FileSource


@dataclass
class _Keeping:
    """A file source that also keeps every manifest object it yields."""

    inner: FileSource
    objects: list[ManifestObject] = field(default_factory=list)
    kind: str = "file"

    @property
    def stats(self) -> ScanStats:
        return self.inner.stats

    def items(self) -> Iterator[Item]:
        for item in self.inner.items():
            if isinstance(item, ManifestObject):
                self.objects.append(item)
            yield item

    @property
    def tree(self) -> FileTree:
        return self.inner.tree


def read_manifests(request: AuditRequest,
                   stdin: Callable[[], bytes] | None = None) -> ManifestInput:
    """Objects, findings and input errors of every path in `request`; never raises for input."""
    excludes = (*request.config.exclude, *request.excludes)
    source = _Keeping(FileSource(request.paths, excludes, stdin))
    report = audit(source, request.config, request.target)
    return ManifestInput(tuple(source.objects), report.findings, report.errors,
                         report.files_scanned)
