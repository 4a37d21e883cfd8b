"""Issue 31, families 7 and 9: the objects plan, verify and cutover judge go through one typed
reader per kind (gpudra.sources.shapes), from a live cluster, `cutover --from` and `plan
--inventory` alike. A malformed object is an input error naming it and the field (exit 3), and
the others are still judged; a device count past what a node holds is refused instead of
becoming millions of predicted devices."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import gpudra.cluster
from gpudra.cluster.records import ServerVersion
from gpudra.cutover.run import CutoverRequest, run_cutover
from gpudra.errors import GpudraError
from gpudra.results.model import ExitCode, InputError
from gpudra.plan.run import PlanRequest, run_plan
from gpudra.sources.shapes import object_problem
from gpudra.verify.run import VerifyRequest, run_verify
from tests.memory_cluster import MemoryCluster
from tests.support.run import invoke, said
from tests.verify import fleet as f

NS = "ml"


class _Connected(MemoryCluster):
    """The in-memory cluster as `connect` gives a cluster: a context manager with /version."""

    def server_version(self) -> ServerVersion:
        return ServerVersion(1, 36, 1, "v1.36.1")

    def __enter__(self) -> _Connected:
        return self

    def __exit__(self, *_: Any) -> None:
        return None


def good_fleet() -> list[dict[str, Any]]:
    """A device-plugin node with a workload on it, a DRA node with its slice, and a workload
    on claims with its pod and allocated claim."""
    plugin = f.deployment(NS, "train", f.pod_spec(gpus=1), 1)
    claimed = f.deployment(NS, "serve", f.pod_spec(template_name="gpu"), 1)
    return [f.node("plugin-1", 4), f.node("dra-1", 2, dra=True), f.gpu_slice("dra-1", 2),
            f.device_class(), f.template(NS, "gpu"), plugin, f.replicaset(plugin), claimed,
            f.replicaset(claimed),
            f.pod(NS, "serve-0", f.pod_spec(template_name="gpu"),
                  owner=("ReplicaSet", f.replicaset(claimed)["metadata"]["name"]),
                  node_name="dra-1", claims={"gpu": "serve-0-gpu"}),
            f.claim(NS, "serve-0-gpu", devices=[("dra-1", "gpu-0")],
                    reserved=[("serve-0", "uid-serve-0")])]


def _pod(status: Any = None, metadata: Any = None, containers: Any = None) -> dict[str, Any]:
    pod = f.pod(NS, "bad-pod", f.pod_spec(gpus=1), node_name="plugin-1")
    # a GPU pod even without its containers (a file without nvidia/gpu is never parsed)
    pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    if status is not None:
        pod["status"]["resourceClaimStatuses"] = status
    if metadata is not None:
        pod["metadata"] = metadata
    if containers is not None:
        pod["spec"]["containers"] = containers
    return pod


def _template_with_list_namespace() -> dict[str, Any]:
    template = f.template(NS, "listed")
    template["metadata"]["namespace"] = ["a", "b"]
    return template


def _slice_with_infinite_capacity() -> dict[str, Any]:
    piece = f.gpu_slice("dra-2", 2)
    piece["spec"]["devices"][1]["capacity"]["memory"]["value"] = float("inf")
    return piece


def _node_counting(count: str) -> dict[str, Any]:
    node = f.node("big", 1)
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = count
    return node


# (bad object, what the error names)
BAD: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "pod-claim-statuses-true": (lambda: _pod(status=True),
                                "Pod ml/bad-pod: status.resourceClaimStatuses"),
    "pod-metadata-string": (lambda: _pod(metadata="x"), "Pod (no name): metadata"),
    "pod-containers-number": (lambda: _pod(containers=5), "Pod ml/bad-pod: spec.containers"),
    "template-list-namespace": (_template_with_list_namespace,
                                "ResourceClaimTemplate listed: metadata.namespace"),
    "slice-capacity-inf": (_slice_with_infinite_capacity,
                           "ResourceSlice dra-2-gpu.nvidia.com: "
                           "spec.devices[1].capacity[memory].value"),
    "node-count-10000000": (lambda: _node_counting("10000000"),
                            "Node big: metadata.labels[nvidia.com/gpu.count]: 10000000 devices"),
    "node-count-2**64": (lambda: _node_counting(str(2**64)),
                         "Node big: metadata.labels[nvidia.com/gpu.count]"),
}


def _live(monkeypatch: pytest.MonkeyPatch, objects: list[dict[str, Any]], command: str
          ) -> tuple[list[InputError], set[str], ExitCode]:
    """(errors, names of the workloads judged, exit code) of `command` on a live cluster."""
    cluster = _Connected(objects, page_size=3)
    monkeypatch.setattr(gpudra.cluster, "connect", lambda *_, **__: cluster)
    if command == "verify":
        result: Any = run_verify(VerifyRequest())
        judged = {v.workload.name for v in result.verdicts}
    elif command == "plan":
        result = run_plan(PlanRequest())
        judged = {w.name for w in result.report.workloads}
    else:
        result = run_cutover(CutoverRequest())
        judged = {w.name for w in result.fleet.workloads}
    return list(result.errors), judged, result.exit_code()


def _said(errors: list[InputError]) -> str:
    return "\n".join(f"{e.where}: {e.message}" for e in errors)


@pytest.mark.parametrize("command", ["verify", "plan", "cutover"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_live_object_is_an_input_error_and_the_rest_is_judged(
        monkeypatch: pytest.MonkeyPatch, command: str, case: str) -> None:
    make, named = BAD[case]
    started = time.monotonic()
    errors, judged, code = _live(monkeypatch, [*good_fleet(), make()], command)
    assert named in _said(errors), _said(errors)
    assert code == ExitCode.INPUT_ERROR
    assert "train" in judged, judged  # the well-formed workloads are still judged
    assert time.monotonic() - started < 20


def test_the_good_fleet_alone_reads_without_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for command in ("verify", "plan", "cutover"):
        errors, judged, _ = _live(monkeypatch, good_fleet(), command)
        assert not errors and {"train", "serve"} <= judged, (command, _said(errors), judged)


@pytest.mark.parametrize("case", sorted(BAD))
def test_cutover_from_a_malformed_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         case: str) -> None:
    make, named = BAD[case]
    monkeypatch.chdir(tmp_path)
    Path("fleet.yaml").write_text(yaml.safe_dump_all([*good_fleet(), make()]))
    result = invoke("cutover", "--from", "fleet.yaml", "-o", "json")
    assert "internal error" not in said(result), said(result)
    assert result.exit_code == 3 and "fleet.yaml:" in result.stderr, said(result)
    assert named in result.stderr, result.stderr
    assert '"train"' in result.stdout or "ml/Deployment/train" in result.stdout


@pytest.mark.parametrize("case", ["node-count-10000000", "node-count-2**64",
                                  "slice-capacity-inf"])
def test_plan_inventory_refuses_the_object_and_plans_with_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    make, named = BAD[case]
    monkeypatch.chdir(tmp_path)
    plugin = f.deployment(NS, "train", f.pod_spec(gpus=1), 1)
    Path("app.yaml").write_text(yaml.safe_dump(plugin))
    Path("inventory.yaml").write_text(yaml.safe_dump_all([f.node("plugin-1", 4), make()]))
    started = time.monotonic()
    result = invoke("plan", "app.yaml", "--inventory", "inventory.yaml", "-o", "json")
    assert time.monotonic() - started < 30
    assert "internal error" not in said(result), said(result)
    assert result.exit_code == 3 and named in result.stderr, said(result)
    assert '"satisfiable": true' in result.stdout, result.stdout


def test_many_nodes_at_the_ceiling_stop_at_the_predicted_devices_limit() -> None:
    from gpudra.plan.synthesis import synthesize

    nodes = [f.node(f"n{i}", 128) for i in range(40)]
    inventory = synthesize(nodes, limit=1_000)
    assert len(inventory.devices) == 896  # 7 nodes of 128; the 8th would pass 1,000
    assert inventory.problems and "33 nodes not predicted" in inventory.problems[0]


def test_a_node_at_the_ceiling_is_read() -> None:
    assert object_problem(_node_counting("128")) is None
    assert "more than a node holds" in (object_problem(_node_counting("129")) or "")
    # time-slicing: the device plugin advertises each GPU once per replica
    shared = f.node("shared", 8, labels={"nvidia.com/gpu.replicas": "48"})
    shared["status"]["allocatable"]["nvidia.com/gpu"] = "384"
    assert object_problem(shared) is None
    shared["status"]["allocatable"]["nvidia.com/gpu"] = "10000000"
    assert "at most 6144 (128 devices x 48 replicas)" in (object_problem(shared) or "")


@pytest.mark.parametrize("value", [True, "x", 2**64, float("nan")])
def test_wrong_types_anywhere_in_a_pod_name_the_field(value: Any) -> None:
    pod = f.pod(NS, "p", f.pod_spec(gpus=1), node_name="n")
    for path in (("spec", "containers"), ("status", "conditions"), ("metadata", "labels"),
                 ("spec", "containers", 0, "resources", "limits")):
        broken = copy.deepcopy(pod)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        problem = object_problem(broken)
        assert problem is not None and problem.startswith(".".join(
            str(p) for p in path[:2])), (path, value, problem)


def test_a_generated_object_never_raises() -> None:
    """The reader itself is total: whatever it is given, a string or None, never an
    exception (GpudraError included)."""
    for value in (None, 5, "x", [], {}, {"kind": 5}, {"kind": "Pod", "apiVersion": "v1",
                                                     "spec": {"containers": [None]}}):
        try:
            object_problem(value)
        except GpudraError as exc:  # pragma: no cover - the assertion says it
            pytest.fail(f"{value!r}: {exc}")


@pytest.mark.parametrize("count", ["10000000", str(2**40), "129"])
def test_convert_blocks_a_count_no_node_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              count: str) -> None:
    """Cut into claims of 32 devices, 10,000,000 GPUs were 312,500 claims: convert (and plan
    and cutover, which convert in memory) ran for minutes; now the workload is blocked."""
    monkeypatch.chdir(tmp_path)
    job = f.deployment(NS, "huge", f.pod_spec(gpus=1), 1)
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] = count
    Path("app.yaml").write_text(yaml.safe_dump(job))
    started = time.monotonic()
    result = invoke("convert", "--diff", "app.yaml")
    assert time.monotonic() - started < 20
    assert result.exit_code == 4, said(result)
    assert "more devices than a node holds (at most 128)" in said(result), said(result)


def test_synthesis_predicts_nothing_for_a_count_no_node_holds() -> None:
    """Whoever calls it (the typed readers refuse such nodes first): no millions of devices."""
    from gpudra.plan.synthesis import synthesize

    started = time.monotonic()
    for labels in ({"nvidia.com/gpu.count": "10000000"},
                   {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                    "nvidia.com/gpu.count": str(2**64)},
                   {"nvidia.com/mig-1g.5gb.count": "10000000"}):
        node = f.node("big", 1)
        node["metadata"]["labels"].update(labels)
        inventory = synthesize([node])
        assert not inventory.devices, labels
        assert any("more than a node holds" in n for n in inventory.notes), inventory.notes
    assert time.monotonic() - started < 10


def test_plan_of_a_tree_reads_the_cluster_inventory_through_the_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("app.yaml").write_text(yaml.safe_dump(f.deployment(NS, "train", f.pod_spec(gpus=1), 1)))
    cluster = _Connected([f.node("plugin-1", 4), _node_counting("10000000")])
    monkeypatch.setattr(gpudra.cluster, "connect", lambda *_, **__: cluster)
    started = time.monotonic()
    result = run_plan(PlanRequest(paths=("app.yaml",)))
    assert time.monotonic() - started < 20
    assert "Node big: metadata.labels[nvidia.com/gpu.count]" in _said(list(result.errors))
    assert result.exit_code() == ExitCode.INPUT_ERROR
    assert [w.name for w in result.report.workloads if w.satisfiable] == ["train"]


@pytest.mark.parametrize("command", ["audit", "verify"])
def test_a_uid_that_is_a_list_through_the_api_server(command: str) -> None:
    """The list reader keyed pages by uid (a list is unhashable: an internal error for every
    command); verify then leaves the pod out naming the field."""
    from tests.fakeapi import FakeCluster

    pod = _pod()
    pod["metadata"]["uid"] = ["x"]
    with FakeCluster(f.state(*good_fleet(), pod), tls=False) as cluster:
        result = invoke(command, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert "internal error" not in said(result), said(result)
    if command == "verify":
        assert result.exit_code == 3, said(result)
        assert "Pod ml/bad-pod: metadata.uid: expected `str`, got `array`" in result.stderr
