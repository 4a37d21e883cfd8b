"""The one connect-and-triage of every command that reads a cluster (gpudra.sources
.cluster_session): which cluster it connects to, what it records, how it sorts the items."""

from __future__ import annotations

from typing import Any

import pytest

import gpudra.cluster
from gpudra.cluster.options import ClusterOptions
from gpudra.cluster.records import ClusterTarget
from gpudra.results.model import InputError, NotRead
from gpudra.k8s.objects import ClusterObject
from gpudra.sources.live_session import cluster_session, triage

BROKEN = InputError(None, "cannot list pods", object="pods")
HIDDEN = NotRead("nodes", "a namespaced role cannot list nodes", "node labels")
KEPT = ClusterObject({"kind": "Pod", "metadata": {"name": "kept"}})
DROPPED = ClusterObject({"kind": "Pod", "metadata": {"name": "dropped"}})
UNREAD_AS_ERROR = InputError(None, HIDDEN.message, object=HIDDEN.object)


def _named(obj: Any) -> bool:
    return obj.data["metadata"]["name"] != "dropped"


# (items, unread_is_error) -> (objects kept, errors), each in the order the items came
CASES = {
    "objects and errors apart": ([KEPT, BROKEN, DROPPED], True, [KEPT], [BROKEN]),
    "what was not read is an error": ([HIDDEN, KEPT], True, [KEPT], [UNREAD_AS_ERROR]),
    "or passed over": ([HIDDEN, KEPT, BROKEN], False, [KEPT], [BROKEN]),
    "anything else passed over": (["a template's text", KEPT], True, [KEPT], []),
    "nothing": ([], True, [], []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_triage_sorts_what_a_cluster_source_yields(case: str) -> None:
    items, unread_is_error, objects, errors = CASES[case]
    found: list[InputError] = []
    assert list(triage(items, found, _named, unread_is_error)) == objects
    assert found == errors


class _Cluster:
    target = ClusterTarget("https://u:secret@api.example:6443", "prod", "default", True)

    def __enter__(self) -> _Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.mark.parametrize(("given", "connected"), [
    (None, ClusterOptions(all_namespaces=True)),  # every namespace of the current context
    (ClusterOptions(namespace="ml"), ClusterOptions(namespace="ml")),
])
def test_a_session_connects_where_told_and_records_the_cluster_read(
        monkeypatch: pytest.MonkeyPatch, given: ClusterOptions | None,
        connected: ClusterOptions) -> None:
    seen: list[ClusterOptions] = []

    def connect(options: ClusterOptions) -> _Cluster:
        seen.append(options)
        return _Cluster()

    monkeypatch.setattr(gpudra.cluster, "connect", connect)
    with cluster_session(given) as session:
        assert isinstance(session.cluster, _Cluster)
    assert seen == [connected]
    assert (session.read.context, session.read.server) == ("prod", "https://***@api.example:6443")
