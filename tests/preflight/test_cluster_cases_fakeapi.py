"""The cluster cases (tests/preflight/cluster_cases) end to end, through the fake API server.

Each case's snapshot becomes a fake cluster (tests/fakeapi) whose read gives that snapshot
back: the server version; the served API groups (resource.k8s.io versions through
`api_versions`, a CRD for each resource of a served custom group); the objects, with the
apiVersion and kind a stored object has (snapshot objects are list items, which have neither);
each `unavailable` reason as a 403 `deny` rule, a 5xx answer for /version, a 5xx or late
answer for discovery. gpudra then reads it as `gpudra preflight` does (gpudra.cluster.connect,
read_snapshot), the read is compared with the snapshot, and the checks must give what the case
expects.

Cases a real API server cannot produce are in NOT_THROUGH_THE_FAKE with the reason; they are
still judged on their snapshot by test_cluster_cases.py. The last tests keep that list honest
and make sure every (check, outcome) pair of the cases is seen through the fake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from gpudra.cluster import ClusterOptions as ConnectOptions
from gpudra.cluster import connect
from gpudra.preflight.cluster import CLUSTER_CHECKS, run_cluster_checks
from gpudra.preflight.cluster.nodes import slice_devices_by_node
from gpudra.preflight.cluster.read import KUEUE_NAMESPACE, read_snapshot
from gpudra.preflight.cluster.snapshot import (
    ALWAYS_SERVED_GROUPS,
    DISCOVERY,
    GPU_HOLDERS,
    KUEUE_CONFIG,
    PODS,
    RESOURCES,
    RESOURCESLICES,
    VERSION,
    ClusterSnapshot,
    ResourceRef,
)
from gpudra.sources.live import device_plugin_holding
from tests.fakeapi import FakeCluster
from tests.preflight.cluster_case_data import (
    Case,
    assert_expected,
    build_options,
    build_snapshot,
    load_cases,
)

USER = "auditor"  # the user the cases' 403 reasons name
BY_KEY = {ref.key: ref for ref in RESOURCES}
# Every server serves these; the fake adds batch, apiextensions.k8s.io and
# admissionregistration.k8s.io (verify's gate reads gpudra guard's objects), which no check reads.
BUILTIN_GROUPS = {group: ("v1",) for group in ALWAYS_SERVED_GROUPS}
OTHER_GROUPS = frozenset({"batch", "apiextensions.k8s.io", "admissionregistration.k8s.io"})
EVERY_TRY = 1000  # a fault `count` that outlasts the client's retries
# A discovery that times out: the client waits REQUEST_TIMEOUT seconds, the fake answers
# after SLOW_ANSWER. Generous, as every other request of that read has the same timeout.
REQUEST_TIMEOUT = 0.5
SLOW_ANSWER = 1.0
STATUS = re.compile(r"^(\d{3}): ")

# Cases no real API server can produce as written, and why.
NOT_THROUGH_THE_FAKE = {
    "CLUSTER001-version-unreadable":
        "a 401 on /version alone: a server that rejects the token rejects every request, and "
        "read_snapshot then stops with CredentialsRejectedError (exit 3), as it should",
    "CLUSTER009-version-unknown":
        "a 401 on /version alone (as CLUSTER001-version-unreadable)",
    "CLUSTER002-apiserver-version-unknown":
        "/version timing out: a timeout stops the whole read (ClusterTimeoutError, exit 3) by "
        "the cluster client's design, so no read has the version unavailable for that reason",
    "CLUSTER002-apiserver-version-unknown-but-a-target-is-given":
        "/version timing out (as CLUSTER002-apiserver-version-unknown)",
    "CLUSTER007-pods-read-elsewhere-falls-back-to-the-nodeselector":
        "its pods were read in another namespace than the device plugin's; read_snapshot always "
        "lists the pods of the device-plugin DaemonSet's own namespace",
}
# Listed for a wording no server has, not for what it reads: these translate.
WORDING_ONLY: frozenset[str] = frozenset()


class Unrepresentable(Exception):
    """The snapshot has something no API server answer leads to."""


@dataclass(frozen=True)
class FakeSetup:
    state: dict[str, Any]
    request_timeout: float | None = None

    @property
    def key(self) -> str:
        return json.dumps([self.state, self.request_timeout], sort_keys=True)

    def objects(self, key: str) -> list[dict[str, Any]]:
        """The state's objects of one snapshot key."""
        ref = BY_KEY[key]
        return [obj for obj in self.state["objects"] if obj["kind"] == ref.kind
                and obj["apiVersion"].rpartition("/")[0] == ref.group]


def fake_setup(snapshot: ClusterSnapshot) -> FakeSetup:
    """A fake cluster whose read gives `snapshot` (with the reader's own pod scope)."""
    if snapshot.scopes:
        raise Unrepresentable("scopes are the reader's, not the cluster's")
    state: dict[str, Any] = {"user": USER, "faults": {"errors": [], "delays": []}}
    if snapshot.server_version is None:
        _fail(state, "/version", snapshot.unavailable.get(VERSION, ""), timeout_ok=False)
        state["version"] = "1.34.2"
    else:
        state.update(_version(snapshot.server_version))
    request_timeout = None
    if snapshot.api_groups is None:
        if _fail(state, "/apis", snapshot.unavailable.get(DISCOVERY, ""), timeout_ok=True):
            request_timeout = REQUEST_TIMEOUT
        served = {**BUILTIN_GROUPS, "resource.k8s.io": ("v1",) if _minor(state) >= 34 else ()}
    else:
        served = _serve(state, snapshot.api_groups)
    state["objects"] = []
    for key, items in snapshot.objects.items():
        ref = BY_KEY[key]
        version = next((v for v in ref.versions if v in served.get(ref.group, ())), None)
        if version is None:
            continue  # not served, so no server lists it (the case kept its base's objects)
        api_version = f"{ref.group}/{version}" if ref.group else version
        state["objects"] += [{"apiVersion": api_version, "kind": ref.kind, **item}
                             for item in items]
    state["deny"] = [_deny(BY_KEY[key], reason) for key, reason in snapshot.unavailable.items()
                     if key not in (DISCOVERY, VERSION)]
    return FakeSetup(state, request_timeout)


def _version(git_version: str) -> dict[str, Any]:
    """The release is what the fake needs; /version's gitVersion says exactly what the case
    says (`v1.36.1-eks-4f3c1b2`, `weird-build`)."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", git_version)
    return {"version": ".".join(match.groups()) if match else "1.34.2",
            "version_info": {"gitVersion": git_version}}


def _minor(state: Mapping[str, Any]) -> int:
    return int(str(state["version"]).split(".")[1])


def _serve(state: dict[str, Any], groups: Mapping[str, tuple[str, ...]]
           ) -> dict[str, tuple[str, ...]]:
    """Make discovery serve `groups`; returns them with the built-in groups."""
    for group, versions in BUILTIN_GROUPS.items():
        if tuple(groups.get(group, ())) != versions:
            raise Unrepresentable(f"API group {group or 'core'!r} served as {groups.get(group)}")
    state["api_versions"] = {"resource.k8s.io": list(groups.get("resource.k8s.io", ()))}
    crds, covered = [], set()
    for ref in RESOURCES:
        versions = [v for v in groups.get(ref.group, ()) if v in ref.versions]
        if ref.custom and versions:
            # Spelled out in full: the catalogue has one version per CRD, cases serve several.
            crds.append({"group": ref.group, "versions": versions, "plural": ref.plural,
                         "kind": ref.kind, "namespaced": ref.namespaced})
            covered.update((ref.group, v) for v in versions)
    state["crds"] = crds
    for group, versions in groups.items():
        missing = [v for v in versions if (group, v) not in covered]
        if group not in (*BUILTIN_GROUPS, "resource.k8s.io") and missing:
            raise Unrepresentable(f"{group} {missing}: no resource the checks read is there")
    return {**BUILTIN_GROUPS, **{g: tuple(v) for g, v in groups.items() if v}}


def _fail(state: dict[str, Any], path: str, reason: str, *, timeout_ok: bool) -> bool:
    """Make every GET of `path` fail as `reason` says; True when it is a timeout."""
    status = STATUS.match(reason)
    if status and int(status.group(1)) >= 500:  # retried by the client, so on every try
        state["faults"]["errors"].append(
            {"path": path, "status": int(status.group(1)), "count": EVERY_TRY})
        return False
    if timeout_ok and "time" in reason:  # "timeout", "timed out"
        state["faults"]["delays"].append(
            {"path": path, "seconds": SLOW_ANSWER, "count": EVERY_TRY})
        return True
    raise Unrepresentable(f"{path} unreadable with {reason!r}")


def _deny(ref: ResourceRef, reason: str) -> dict[str, Any]:
    if not reason.startswith("403: "):
        raise Unrepresentable(f"{ref.key} unavailable with {reason!r}")
    if ref is KUEUE_CONFIG:  # read with get, in Kueue's namespace
        return {"verb": "get", "group": "", "resource": ref.plural, "namespace": KUEUE_NAMESPACE}
    return {"verb": "list", "group": ref.group, "resource": ref.plural}


# --- reading -------------------------------------------------------------------------------


class Reads:
    """One fake server and one read per distinct state, for the whole module."""

    def __init__(self) -> None:
        self._done: dict[str, tuple[ClusterSnapshot, set[str]]] = {}

    def read(self, setup: FakeSetup) -> tuple[ClusterSnapshot, set[str]]:
        """The snapshot, and the HTTP methods the server saw."""
        if setup.key not in self._done:
            with FakeCluster(setup.state, tls=False) as cluster:
                options = ConnectOptions(kubeconfig=str(cluster.kubeconfig), all_namespaces=True,
                                         request_timeout=setup.request_timeout)
                with connect(options, environ={}, sleep=lambda _seconds: None) as connection:
                    snapshot = read_snapshot(connection)
                self._done[setup.key] = (snapshot, {r.method for r in cluster.requests})
        return self._done[setup.key]


@pytest.fixture(scope="module")
def reads() -> Reads:
    return Reads()


def _through_the_fake() -> list[Case]:
    return [case for case in load_cases() if case.id not in NOT_THROUGH_THE_FAKE]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in _through_the_fake()])
def test_cluster_case_through_the_fake(case: Case, reads: Reads) -> None:
    wanted = build_snapshot(case.spec)
    setup = fake_setup(wanted)
    snapshot, methods = reads.read(setup)
    assert methods == {"GET"}
    assert_read_back(wanted, setup, snapshot)
    results = run_cluster_checks(snapshot, build_options(case.spec))
    assert [r.id for r in results] == [c.id for c in CLUSTER_CHECKS]
    assert_expected(next(r for r in results if r.id == case.check), case.spec["expect"])


def assert_read_back(wanted: ClusterSnapshot, setup: FakeSetup, got: ClusterSnapshot) -> None:
    """The read is the case's snapshot, as far as a real read can be: reasons carry the whole
    server message, objects carry kind and apiVersion, pods are read in the driver namespaces
    only, a missing Kueue ConfigMap is read as none (not as "not read"), and objects of an API
    that is not served are absent."""
    assert got.server_version == wanted.server_version
    if wanted.api_groups is None:
        assert got.api_groups is None
    else:
        assert got.api_groups is not None
        assert {g: v for g, v in got.api_groups.items() if g not in OTHER_GROUPS} == \
            {g: tuple(v) for g, v in wanted.api_groups.items() if v}
    assert set(got.unavailable) == set(wanted.unavailable), got.unavailable
    for key, reason in wanted.unavailable.items():
        read = got.unavailable[key]
        if reason.startswith("403: "):  # the case has the server's message, or its start
            assert read.startswith(reason), (key, read)
        else:  # same status (500, 503), or none (a timeout)
            assert _status(read) == _status(reason), (key, read)
    pod_namespaces = _scoped_namespaces(got.scopes.get(PODS.key, ""))
    for ref in RESOURCES:
        expected = setup.objects(ref.key)
        if ref.key not in got.objects:
            assert not expected or _why_not_read(ref, got), ref.key
            continue
        if ref.key == PODS.key:
            expected = [p for p in expected
                        if p["metadata"].get("namespace", "default") in pod_namespaces]
        if ref.key == GPU_HOLDERS.key:
            expected = _holders_on_publishing_nodes(expected, got)
        _assert_same_objects(ref, got.objects[ref.key], expected)


def _holders_on_publishing_nodes(pods: list[dict[str, Any]], got: ClusterSnapshot
                                 ) -> list[dict[str, Any]]:
    """The pods read for GPU_HOLDERS: those holding device-plugin GPUs on a node that publishes
    gpu.nvidia.com devices in the slices read."""
    publishing = {node for node, count in (slice_devices_by_node(
        got.objects.get(RESOURCESLICES.key, ())) or {}).items() if count}
    return [p for p in pods if (holding := device_plugin_holding(p)) is not None
            and holding[0] in publishing]


def _why_not_read(ref: ResourceRef, got: ClusterSnapshot) -> str | None:
    if ref.key in got.unavailable:
        return got.unavailable[ref.key]
    if got.api_groups is None and ref.group not in ALWAYS_SERVED_GROUPS:
        return "discovery could not tell whether it is served"
    if ref is PODS and "daemonsets" not in got.objects:
        return "pods are read in the namespaces of the DaemonSets read"
    if ref is GPU_HOLDERS and RESOURCESLICES.key not in got.objects:
        return "GPU holders are read only when the slices say which nodes publish"
    return None


def _status(reason: str) -> str | None:
    match = STATUS.match(reason)
    return match.group(1) if match else None


def _scoped_namespaces(scope: str) -> set[str]:
    return set(scope.removeprefix("namespaces ").split(", ")) \
        if scope.startswith("namespaces ") else set()


SERVER_FILLED = ("uid", "resourceVersion", "creationTimestamp")


def _assert_same_objects(ref: ResourceRef, read: Any, stored: list[dict[str, Any]]) -> None:
    """The objects read are those stored, but for the metadata the server fills in."""
    def identity(obj: Mapping[str, Any]) -> tuple[str, str]:
        namespace = obj["metadata"].get("namespace", "default") if ref.namespaced else ""
        return namespace, obj["metadata"]["name"]

    by_identity = {identity(obj): obj for obj in read}
    assert sorted(by_identity) == sorted(identity(obj) for obj in stored), ref.key
    for obj in stored:
        got = by_identity[identity(obj)]
        metadata = {k: v for k, v in got["metadata"].items()
                    if k in obj["metadata"] or k not in (*SERVER_FILLED, "namespace")}
        assert {**got, "metadata": metadata} == obj, (ref.key, identity(obj))


# --- the list above stays honest -----------------------------------------------------------


def test_cases_not_run_through_the_fake_exist() -> None:
    ids = {case.id for case in load_cases()}
    assert set(NOT_THROUGH_THE_FAKE) <= ids, set(NOT_THROUGH_THE_FAKE) - ids


@pytest.mark.parametrize("case_id", sorted(NOT_THROUGH_THE_FAKE))
def test_a_case_not_run_through_the_fake_cannot_be(case_id: str, reads: Reads) -> None:
    """The translation refuses what no server says. A case listed only for its wording does
    translate: its read gives the snapshot back and the check its outcome."""
    case = next(c for c in load_cases() if c.id == case_id)
    wanted = build_snapshot(case.spec)
    if case_id not in WORDING_ONLY:
        with pytest.raises(Unrepresentable):
            fake_setup(wanted)
        return
    setup = fake_setup(wanted)
    snapshot, _ = reads.read(setup)
    assert_read_back(wanted, setup, snapshot)
    got = next(r for r in run_cluster_checks(snapshot, build_options(case.spec))
               if r.id == case.check)
    assert got.outcome.value == case.outcome, got.message


def test_every_check_outcome_of_the_cases_is_seen_through_the_fake() -> None:
    every = {(case.check, case.outcome) for case in load_cases()}
    through = {(case.check, case.outcome) for case in _through_the_fake()}
    assert every == through, sorted(every - through)
    assert {check for check, _ in through} == {info.id for info in CLUSTER_CHECKS}
