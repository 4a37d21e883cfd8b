"""The decommission gate's scope is decided once (gpudra.verify.gate.whole_cluster) and the gate
judged from it (gate_for): never from one namespace or a selection, never with objects unread."""

from __future__ import annotations

import pytest

from gpudra.results.model import InputError
from gpudra.verify.collect import ClusterState
from gpudra.verify.gate import NOT_JUDGED, NOT_JUDGED_UNREAD, SAFE, gate_for, whole_cluster


@pytest.mark.parametrize(("all_namespaces", "selected", "whole"), [
    (True, False, True),    # gpudra verify
    (False, False, False),  # -n ml
    (True, True, False),    # --selector app=x
    (False, True, False),   # both
])
def test_the_gate_reads_the_whole_cluster_or_is_not_judged(
        all_namespaces: bool, selected: bool, whole: bool) -> None:
    assert whole_cluster(all_namespaces, selected) is whole


UNREAD = [InputError(None, "cannot list pods", object="pods")]


@pytest.mark.parametrize(("whole", "errors", "judged", "message"), [
    (True, [], True, SAFE),                          # an empty cluster: nothing in the way
    (False, [], False, NOT_JUDGED),
    (True, UNREAD, False, NOT_JUDGED_UNREAD),
    (False, UNREAD, False, NOT_JUDGED),              # the scope is said first
])
def test_the_gate_is_judged_only_over_everything(whole: bool, errors: list[InputError],
                                                 judged: bool, message: str) -> None:
    gate = gate_for(ClusterState(errors=list(errors)), [], whole)
    assert (gate.judged, gate.message) == (judged, message)
