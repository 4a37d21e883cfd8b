"""One connection to the cluster a command reads, and the one reading of its objects.

Every command that reads a live cluster did the same three things: connect (every namespace of
the current context unless told otherwise), note which cluster was read and when, and sort what
the cluster source yields into objects and input errors. `cluster_session` does the first two,
`ClusterSession.objects` the third; what a command does with the objects stays its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudra.results.model import ClusterRead, InputError, NotRead
from gpudra.k8s.objects import SourceObject

if TYPE_CHECKING:
    from gpudra.cluster import Cluster, ClusterOptions
    from gpudra.cluster.listing import ProgressHook
    from gpudra.sources import Item
    from gpudra.k8s.workloads import WorkloadTable


@dataclass(frozen=True)
class ObjectsRead:
    """The objects a command kept, the inputs it could not read, and how many objects the
    source read (kept or not); `notes_unread`: the refused reads it made only for notes."""

    objects: tuple[SourceObject, ...]
    errors: tuple[InputError, ...]
    count: int
    notes_unread: tuple[NotRead, ...] = ()


@dataclass(frozen=True)
class ClusterSession:
    """An open connection (`cluster`) and the record of which cluster was read, and when."""

    cluster: Cluster
    read: ClusterRead

    def objects(self, table: WorkloadTable, *, command: str,
                on_page: ProgressHook | None = None,
                keep: Callable[[SourceObject], bool] = lambda obj: True,
                unread_is_error: bool = True) -> ObjectsRead:
        """The cluster source's objects for `command` that `keep` keeps, sorted from its input
        errors as they come. `unread_is_error`: what the command's role may not read (a
        NotRead) is an input error too, for commands that need every object to be right."""
        from gpudra.sources.live import ClusterSource

        source = ClusterSource(self.cluster, table, on_page, command=command)
        errors: list[InputError] = []
        notes_unread: list[NotRead] = []
        kept = tuple(triage(source.items(), errors, keep, unread_is_error, notes_unread))
        return ObjectsRead(kept, tuple(errors), source.stats.objects, tuple(notes_unread))


def triage(items: Iterable[Item], errors: list[InputError],
           keep: Callable[[SourceObject], bool] = lambda obj: True,
           unread_is_error: bool = True, notes_unread: list[NotRead] | None = None
           ) -> Iterator[SourceObject]:
    """The objects among `items` that `keep` keeps, in order; input errors (and, when
    `unread_is_error`, what was not read) into `errors`; a refused read made only for notes
    into `notes_unread` (when given), never an error; anything else is passed over."""
    for item in items:
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, NotRead) and item.notes_only:
            if notes_unread is not None:
                notes_unread.append(item)
        elif isinstance(item, NotRead):
            if unread_is_error:
                errors.append(InputError(None, item.message, object=item.object))
        elif isinstance(item, SourceObject) and keep(item):
            yield item


@contextlib.contextmanager
def cluster_session(options: ClusterOptions | None) -> Iterator[ClusterSession]:
    """Connect to the cluster `options` point at (None: every namespace of the current kube
    context). Raises gpudra.cluster.ClusterError when it cannot be reached at all. The
    Kubernetes client loads here, never on import: commands on files need none of it."""
    from gpudra.cluster import ClusterOptions, connect
    from gpudra.cluster.records import cluster_read

    with connect(options or ClusterOptions(all_namespaces=True)) as cluster:
        yield ClusterSession(cluster, cluster_read(cluster.target))
