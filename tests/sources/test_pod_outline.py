"""The outline reader of pods that hold no GPU (gpudra.sources.shapes.PodOutline, issue 32:
verify at most 1.1x the audit on 100,000 pods).

A pod with no device-plugin GPU and no claims, counted for a controller gpudra reads, has only
the outline's fields checked. The contract: nothing plan, verify or cutover does reads a field
of such a pod that the outline did not check. Every pod is wrapped in a recorder that logs each
field a consumer looks up (the typed decoding reads the dicts in C and is not logged); the
paths logged for outlined pods must all be declared by PodOutline. A GPU pod, read by more
consumers, shows the recorder sees reads beyond the outline (the test can fail).

Hostile values: in an outlined field they give the error the whole Pod check gives (the same
line and exit code as before the outline); in a field the outline skips they are never read,
and the pod counts for its controller as a well-formed one does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from unittest import mock

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpudra.cluster
import gpudra.sources.shapes as shapes
from gpudra.k8s.workloads import WorkloadTable
from gpudra.results.model import ExitCode
from gpudra.sources.live import ClusterSource
from gpudra.verify.collect import read_cluster
from gpudra.cutover.run import CutoverRequest, run_cutover
from gpudra.plan.run import PlanRequest, run_plan
from gpudra.verify.run import VerifyRequest, run_verify
from tests.hostile.test_fuzz_objects import SETTINGS, mutated
from tests.hostile.test_object_readers import NS, _Connected, good_fleet
from tests.memory_cluster import MemoryCluster
from tests.verify import fleet as f

Path = tuple[str, ...]
ANY_KEY, ITEM = "*", "[]"


# --- what the outline declares ---------------------------------------------------------------

def _declared(info: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path PodOutline checks: `*` a mapping's keys, `[]` a list's items."""
    if isinstance(info, msgspec.inspect.UnionType):
        for member in info.types:
            yield from _declared(member, prefix)
    elif isinstance(info, msgspec.inspect.StructType):
        for field in info.fields:
            yield (*prefix, field.encode_name)
            yield from _declared(field.type, (*prefix, field.encode_name))
    elif isinstance(info, msgspec.inspect.ListType):
        yield (*prefix, ITEM)
        yield from _declared(info.item_type, (*prefix, ITEM))
    elif isinstance(info, msgspec.inspect.DictType):
        yield (*prefix, ANY_KEY)
        yield from _declared(info.value_type, (*prefix, ANY_KEY))


# kind and apiVersion: checked as "Pod" and "v1" before the outline is decoded
DECLARED = {("kind",), ("apiVersion",), *_declared(msgspec.inspect.type_info(shapes.PodOutline))}


def _covered(path: Path) -> bool:
    return any(len(d) == len(path) and all(a == b or a == ANY_KEY for a, b in zip(d, path))
               for d in DECLARED)


# --- the recorder ----------------------------------------------------------------------------

class _Dict(dict):  # type: ignore[type-arg]
    """A dict that logs the path of each key looked up and of each walk over its keys."""

    def __init__(self, data: dict[str, Any], path: Path, log: set[Path]) -> None:
        super().__init__(data)
        self._path, self._log = path, log

    def _wrap(self, key: Any, value: Any) -> Any:
        return _recorded(value, (*self._path, str(key)), self._log)

    def get(self, key: Any, default: Any = None) -> Any:
        self._log.add((*self._path, str(key)))
        return self._wrap(key, super().get(key, default))

    def __getitem__(self, key: Any) -> Any:
        self._log.add((*self._path, str(key)))
        return self._wrap(key, super().__getitem__(key))

    def __contains__(self, key: object) -> bool:
        self._log.add((*self._path, str(key)))
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._log.add((*self._path, ANY_KEY))
        return super().__iter__()

    def keys(self) -> Any:
        self._log.add((*self._path, ANY_KEY))
        return super().keys()

    def items(self) -> Any:
        self._log.add((*self._path, ANY_KEY))
        return [(k, self._wrap(k, v)) for k, v in super().items()]

    def values(self) -> Any:
        self._log.add((*self._path, ANY_KEY))
        return [self._wrap(k, v) for k, v in super().items()]


class _List(list):  # type: ignore[type-arg]
    def __init__(self, data: list[Any], path: Path, log: set[Path]) -> None:
        super().__init__(data)
        self._path, self._log = path, log

    def __iter__(self) -> Iterator[Any]:
        self._log.add((*self._path, ITEM))
        return (_recorded(v, (*self._path, ITEM), self._log) for v in super().__iter__())

    def __getitem__(self, index: Any) -> Any:
        self._log.add((*self._path, ITEM))
        return _recorded(super().__getitem__(index), (*self._path, ITEM), self._log)


def _recorded(value: Any, path: Path, log: set[Path]) -> Any:
    if value.__class__ is dict:
        return _Dict(value, path, log)
    if value.__class__ is list:
        return _List(value, path, log)
    return value


# --- the pods --------------------------------------------------------------------------------

def _cpu_spec(**extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "web", "image": "nginx:1", "env": [{"name": "A",
                                                                         "value": "1"}],
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                          "requests": {"cpu": "500m"}}}],
            "initContainers": [{"name": "init", "resources": {"limits": {"cpu": "1"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {}}, "nodeSelector": {"zone": "a"}, **extra}


def _labelled(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"].update(labels={"app": "x"}, annotations={"a": "b"},
                           generateName="x-")
    return pod


WEB = f.deployment(NS, "web", _cpu_spec(), 2)
AGENT = f.deployment(NS, "agent", _cpu_spec(), 1, kind="DaemonSet")
BATCH = f.deployment(NS, "batch", _cpu_spec(), 1, kind="Job")
CONTROLLERS = [WEB, f.replicaset(WEB), AGENT, BATCH]

# case -> pod: pods that hold no GPU and have no claims, counted for a controller that is read
OUTLINED: dict[str, dict[str, Any]] = {
    "replicaset-running": _labelled(f.pod(NS, "web-1", _cpu_spec(), node_name="plugin-1",
                                          owner=("ReplicaSet", "web-rs"))),
    "replicaset-pending": f.pod(NS, "web-2", _cpu_spec(), phase="Pending",
                                owner=("ReplicaSet", "web-rs")),
    "daemonset-on-a-node": _labelled(f.pod(NS, "agent-x", _cpu_spec(), node_name="dra-1",
                                           owner=("DaemonSet", "agent"))),
    "job-succeeded": f.pod(NS, "batch-1", _cpu_spec(resourceClaims=[]), phase="Succeeded",
                           node_name="plugin-1", owner=("Job", "batch")),
    "no-resources": f.pod(NS, "web-3", {"containers": [{"name": "c"}]},
                          owner=("ReplicaSet", "web-rs")),
    "other-nvidia-keys": f.pod(NS, "web-4", _cpu_spec(containers=[
        {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "0", "cpu": "1"}}}]),
        owner=("ReplicaSet", "web-rs")),
}
OUTLINED["daemonset-on-a-node"]["status"]["extendedResourceClaimStatus"] = {"x": "y"}
OUTLINED["replicaset-running"]["status"]["resourceClaimStatuses"] = [{"name": "gpu"}]


def _fleet() -> list[dict[str, Any]]:
    return [*good_fleet(), *copy.deepcopy(CONTROLLERS),
            *copy.deepcopy(list(OUTLINED.values()))]


def _recording(objects: list[dict[str, Any]]) -> tuple[list[Any], dict[str, set[Path]]]:
    """The objects with every pod wrapped in a recorder, and each pod's log by name (by its
    place in `objects`, `#N`, when it has no name)."""
    logs: dict[str, set[Path]] = {}
    out: list[Any] = []
    for index, obj in enumerate(objects):
        if obj.get("kind") == "Pod":
            meta = obj.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            log = logs.setdefault(name if isinstance(name, str) else f"#{index}", set())
            obj = _Dict(obj, (), log)
        out.append(obj)
    return out, logs


def _consume(command: str, objects: list[Any]) -> None:
    table = WorkloadTable()
    if command == "verify":
        read_cluster(MemoryCluster(objects, page_size=3), table)  # type: ignore[arg-type]
    else:
        list(ClusterSource(MemoryCluster(objects, page_size=3), table, command=command).items())


@pytest.mark.parametrize("command", ["verify", "plan", "cutover"])
def test_nothing_reads_a_field_of_an_outlined_pod_that_the_outline_did_not_check(
        command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    checked_whole: list[str] = []
    original = shapes.decoded_pod

    def whole(obj: Any, *args: Any) -> Any:
        checked_whole.append(str(dict.get(dict.get(obj, "metadata") or {}, "name")))
        return original(obj, *args)
    monkeypatch.setattr(shapes, "decoded_pod", whole)
    objects, logs = _recording(_fleet())
    _consume(command, objects)
    outlined = {pod["metadata"]["name"] for pod in OUTLINED.values()}
    assert not outlined & set(checked_whole)  # the outline was all they were checked for
    for name in sorted(outlined):
        assert logs[name], name  # read by the consumers (else the recorder saw nothing)
        unchecked = sorted(p for p in logs[name] if not _covered(p))
        assert not unchecked, f"{command} reads {unchecked} of pod {name}"
    # The GPU pods get the whole check and their consumers read more: the recorder sees it.
    assert {"serve-0"} <= set(checked_whole)
    if command == "verify":
        assert any(not _covered(p) for p in logs["serve-0"]), logs["serve-0"]


# --- hostile values --------------------------------------------------------------------------

def _set(pod: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    target = pod
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return pod


BASE = OUTLINED["replicaset-running"]
# Fields the outline checks: the error is the whole Pod check's, as before the outline
READ = {
    "name-number": (("metadata", "name"), 5),
    "namespace-list": (("metadata", "namespace"), ["a"]),
    "owners-string": (("metadata", "ownerReferences"), "x"),
    "owner-controller-string": (("metadata", "ownerReferences", 0, "controller"), "yes"),
    "owner-kind-number": (("metadata", "ownerReferences", 0, "kind"), 5),
    "containers-number": (("spec", "containers"), 5),
    "resources-string": (("spec", "containers", 0, "resources"), "x"),
    "limit-list": (("spec", "containers", 0, "resources", "limits", "cpu"), [1]),
    "limit-infinite": (("spec", "containers", 0, "resources", "limits", "memory"),
                       float("inf")),
    "limit-past-int64": (("spec", "containers", 0, "resources", "limits", "cpu"), 2**64),
    "init-containers-mapping": (("spec", "initContainers"), {}),
    "claims-string": (("spec", "resourceClaims"), "x"),
    "node-name-number": (("spec", "nodeName"), 5),
    "phase-list": (("status", "phase"), []),
    "spec-string": (("spec",), "x"),
    "status-number": (("status",), 5),
}
# Fields it skips: never read, so the pod is judged as a well-formed one
SKIPPED = {
    "labels-number": (("metadata", "labels"), 5),
    "annotations-list": (("metadata", "annotations"), [1]),
    "uid-list": (("metadata", "uid"), ["x"]),
    "owner-uid-number": (("metadata", "ownerReferences", 0, "uid"), 5),
    "image-number": (("spec", "containers", 0, "image"), 5),
    "env-string": (("spec", "containers", 0, "env"), "x"),
    "requests-number": (("spec", "containers", 0, "resources", "requests"), 5),
    "container-claims-string": (("spec", "containers", 0, "resources", "claims"), "x"),
    "affinity-string": (("spec", "affinity"), "x"),
    "tolerations-mapping": (("spec", "tolerations"), {}),
    "node-selector-number": (("spec", "nodeSelector"), 5),
    "conditions-number": (("status", "conditions"), 5),
    "claim-statuses-true": (("status", "resourceClaimStatuses"), True),
    "bridge-status-string": (("status", "extendedResourceClaimStatus"), "x"),
}


def _verify(monkeypatch: pytest.MonkeyPatch, pod: dict[str, Any]) -> tuple[list[str], ExitCode]:
    """(input errors, exit code) of verify on the fleet with `pod` in it."""
    objects = [o for o in _fleet() if o["metadata"].get("name") != BASE["metadata"]["name"]]
    cluster = _Connected([*objects, pod], page_size=3)
    monkeypatch.setattr(gpudra.cluster, "connect", lambda *_, **__: cluster)
    result = run_verify(VerifyRequest())
    return [f"{e.object}: {e.message}" for e in result.errors], result.exit_code()


@pytest.mark.parametrize("case", sorted(READ))
def test_a_hostile_value_in_an_outlined_field_is_refused_as_before(
        monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    path, value = READ[case]
    pod = _set(BASE, path, value)
    assert shapes.outlined_pod(pod) is None
    problem = shapes.object_problem(pod, WorkloadTable())  # the whole check's words
    assert problem is not None
    expected = shapes.refusal(pod, problem)
    errors, code = _verify(monkeypatch, pod)
    assert f"{expected.object}: {expected.message}" in errors, errors
    assert code == ExitCode.INPUT_ERROR


@pytest.mark.parametrize("case", sorted(SKIPPED))
def test_a_hostile_value_in_a_skipped_field_is_never_read(
        monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    path, value = SKIPPED[case]
    pod = _set(BASE, path, value)
    assert shapes.outlined_pod(pod) is not None
    errors, code = _verify(monkeypatch, pod)
    clean_errors, clean_code = _verify(monkeypatch, copy.deepcopy(BASE))
    assert (errors, code) == (clean_errors, clean_code)
    log: set[Path] = set()
    objects = [o for o in _fleet() if o["metadata"].get("name") != BASE["metadata"]["name"]]
    _consume("verify", [*objects, _Dict(pod, (), log)])
    assert tuple(ITEM if isinstance(k, int) else k for k in path) not in log
    assert all(_covered(p) for p in log), sorted(p for p in log if not _covered(p))


# --- fuzzed ----------------------------------------------------------------------------------

@SETTINGS
@given(st.data(), st.sampled_from(["verify", "plan", "cutover"]))
def test_fuzzed_outlined_pods(data: st.DataObject, command: str) -> None:
    """Odd values anywhere in pods that hold no GPU (tests/hostile/test_fuzz_objects.py's
    values): nothing is raised; a pod whose outlined fields are wrong, or that is checked whole
    and fails it, is left out in the whole check's words; a pod only its outline checked is
    not refused, and nothing reads a field of it beyond the outline."""
    from tests.hostile.test_fuzz_objects import _bounded

    pods = data.draw(mutated(copy.deepcopy(list(OUTLINED.values()))))
    fleet = [*good_fleet(), *copy.deepcopy(CONTROLLERS)]
    objects, logs = _recording([*fleet, *pods])
    checked_whole: set[str] = set()
    original = shapes.decoded_pod

    def whole(obj: Any, *args: Any) -> Any:
        checked_whole.add(str(dict.get(obj, "metadata")))
        return original(obj, *args)

    cluster = _Connected(objects, page_size=3)
    run = {"verify": lambda: run_verify(VerifyRequest()),
           "plan": lambda: run_plan(PlanRequest()),
           "cutover": lambda: run_cutover(CutoverRequest())}[command]
    with mock.patch.object(gpudra.cluster, "connect", lambda *_, **__: cluster), \
            mock.patch.object(shapes, "decoded_pod", whole):
        result = _bounded(run)
    if result is None:
        return
    said = {f"{e.object}: {e.message}" for e in result.errors}
    names = [p["metadata"]["name"] for p in OUTLINED.values()]
    for index, pod in enumerate(pods):
        if (pod.get("kind"), pod.get("apiVersion")) != ("Pod", "v1"):
            continue  # not listed as a pod
        problem = shapes.object_problem(pod, WorkloadTable())
        refused = None if problem is None else shapes.refusal(pod, problem)
        line = None if refused is None else f"{refused.object}: {refused.message}"
        meta = pod.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if shapes.outlined_pod(pod) is None:  # what the outline reads is wrong
            assert line in said, (said, problem)
        elif str(meta) in checked_whole:  # more than its outline is read: as before
            assert (line in said) == (problem is not None), (said, problem)
        elif name == names[index] and names.count(name) == 1:
            assert not [e for e in said if e.startswith(f"Pod {NS}/{name}:")], said
            log = logs[name]
            assert all(_covered(p) for p in log), sorted(p for p in log if not _covered(p))
