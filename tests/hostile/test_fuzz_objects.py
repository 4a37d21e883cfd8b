"""Fuzzing the typed readers of plan, verify and cutover (issue 31): well-formed fleets and
inventories with a few values replaced anywhere by wrong types, bombs and specials, read as
`plan --inventory` files, `cutover --from` exports and live cluster objects.

For every example: nothing is raised but GpudraError, every input error is one line, and the
run ends in bounded time. Bounded: a fixed number of derandomized examples per test
(GPUDRA_FUZZ_EXAMPLES runs a deeper search).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpudra.cluster
from gpudra.cutover.run import CutoverRequest, run_cutover
from gpudra.errors import GpudraError
from gpudra.plan.run import PlanRequest, run_plan
from gpudra.verify.run import VerifyRequest, run_verify
from tests.hostile.test_object_readers import NS, _Connected, good_fleet
from tests.verify import fleet as f

FIXTURES = Path(__file__).resolve().parents[1] / "plan" / "fixtures"
EXAMPLES = int(os.environ.get("GPUDRA_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                    report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Wrong types, the bombs of family 7 and the specials of family 9.
ODD = [5, -1, "x", "", [], {}, None, True, [1], {"a": 1}, [None], float("inf"), float("nan"),
       -5.5, 2**64, 10_000_000, "10000000", str(2**64), "1e999", ".inf", "１", [{"a": 1}]]


def _inventory_seeds() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in ("inventory-a100-h100.yaml", "inventory-mig.yaml", "inventory-consumable.yaml",
                 "inventory-partitionable.yaml", "nodes-gfd.yaml"):
        out += [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]
    return out


INVENTORY = _inventory_seeds()
# A switched node with the runbook's wave label, a time-sliced node with MIG slices and an
# OnDelete StatefulSet: the values cutover reads from them (issue 32) are fuzzed with the rest.
_SHARED = f.node("ts-1", 8, labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "2"})
for _key in ("capacity", "allocatable"):
    _SHARED["status"][_key]["nvidia.com/mig-1g.10gb"] = "2"
_ON_DELETE = f.deployment("ml", "ordered", f.pod_spec(gpus=1), replicas=2, kind="StatefulSet")
_ON_DELETE["spec"].update(updateStrategy={"type": "OnDelete"}, ordinals={"start": 1})
FLEET = good_fleet() + [f.node("gfd-1", 2, dra=True, plugin=False,
                               labels={"gpudra.io/cutover-wave": "3"}), _SHARED, _ON_DELETE]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@st.composite
def mutated(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = copy.deepcopy(seeds)
    for _ in range(draw(st.integers(1, 3))):
        target = objects[draw(st.integers(0, len(objects) - 1))]
        paths = _paths(target)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        parent = target
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(ODD)))
    return objects


def _one_line_errors(errors: Any) -> None:
    for error in errors:
        assert "\n" not in error.message, error.message


def _bounded(run: Any) -> Any:
    started = time.monotonic()
    try:
        result = run()
    except GpudraError as exc:
        assert "\n" not in str(exc), str(exc)
        return None
    assert time.monotonic() - started < 30
    _one_line_errors(result.errors)
    return result


def _dump(objects: list[dict[str, Any]], path: Path, as_json: bool) -> None:
    if as_json:  # JSON has no .inf or .nan: written as the API would never send them
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    else:
        path.write_text(yaml.safe_dump_all(objects))


@SETTINGS
@given(mutated(INVENTORY), st.booleans())
def test_plan_inventory(objects: list[dict[str, Any]], as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        inventory = Path(tmp) / ("inventory.json" if as_json else "inventory.yaml")
        _dump(objects, inventory, as_json)
        _bounded(lambda: run_plan(PlanRequest(paths=(str(FIXTURES / "workloads-gpu.yaml"),),
                                              inventory=(str(inventory),))))


@SETTINGS
@given(mutated(FLEET), st.booleans())
def test_cutover_from(objects: list[dict[str, Any]], as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / ("fleet.json" if as_json else "fleet.yaml")
        _dump(objects, export, as_json)
        result = _bounded(lambda: run_cutover(CutoverRequest(sources=(str(export),))))
    if result is not None:  # the runbook's steps are written from the same values
        from gpudra.cutover.runbook import as_json as runbook_json
        runbook = runbook_json(result.plan, "out", result.pools, result.context)
        lines = [s for w in runbook["waves"] for s in w["steps"] + w["rollback"]]
        assert all("\n" not in line for line in lines)


def _around_the_pods() -> list[dict[str, Any]]:
    """What cutover's notes per wave rest on (gpudra.cutover.bridge_context): Kueue, a
    cluster-autoscaler scaling a node group from zero, Karpenter and its NodePool, a quota on
    requests.nvidia.com/gpu and a ClusterPolicy. Each controller names a GPU, so the file
    pre-scan parses it."""
    from tests.verify.test_bridge_context import (
        autoscaler,
        capi_node,
        cluster_policy,
        flavor,
        flavored_queue,
        karpenter,
        kueue,
        machine_group,
        machineset,
        quota,
    )

    controllers = kueue() + autoscaler("--nodes=0:4:plugin", "--node-group-auto-discovery=x") \
        + karpenter()
    # Cluster API node groups (a node names its MachineSet, which names its deployment) and
    # Kueue's flavors: each names a GPU, so the file pre-scan parses it
    groups = [capi_node("capi-1", "a", "MachineSet", "gpu-a-7f9c"), machineset(),
              machine_group("MachineDeployment", "gpu-a", "0", driver="gpu.nvidia.com"),
              machine_group("MachinePool", "gpu-pool", "0"),
              flavor("gpus", {"nvidia.com/gpu.present": "true"}),
              flavored_queue("team", "gpus")]
    for obj in controllers:
        obj["metadata"]["labels"] = {"serves": "nvidia.com-gpu"}
    return good_fleet() + controllers + groups + quota(NS) + cluster_policy()


AROUND = _around_the_pods()


@SETTINGS
@given(mutated(AROUND), st.booleans())
def test_cutover_around_the_pods(objects: list[dict[str, Any]], live: bool) -> None:
    """ClusterQueues and ResourceFlavors, NodePools, Cluster API node groups and the nodes
    that name them, ClusterPolicies, controllers' Deployments and quotas with odd values
    anywhere, from an export or listed live: refused or said, never a crash."""
    if live:
        with mock.patch.object(gpudra.cluster, "connect",
                               lambda *_, **__: _Connected(objects, page_size=4)):
            _bounded(lambda: run_cutover(CutoverRequest()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "fleet.yaml"
        _dump(objects, export, False)
        result = _bounded(lambda: run_cutover(CutoverRequest(sources=(str(export),))))
    if result is not None:
        assert all("\n" not in note for notes in result.context.notes.values()
                   for note in notes)


@SETTINGS
@given(st.data(), st.booleans())
def test_cutover_from_an_operators_export(data: st.DataObject, as_json: bool) -> None:
    """An export of operators and their children (owner chains through pods, StatefulSets,
    Jobs, ReplicaSets) goes through the live reader (gpudra.sources.exported): odd values in
    any field, owner references included, are refused or planned, never a crash."""
    from tests.verify.test_cutover_export import operators_cluster

    objects = data.draw(mutated(operators_cluster()))
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / ("fleet.json" if as_json else "fleet.yaml")
        _dump(objects, export, as_json)
        _bounded(lambda: run_cutover(CutoverRequest(sources=(str(export),))))


@SETTINGS
@given(mutated(FLEET), st.sampled_from(["verify", "plan", "cutover"]))
def test_live_cluster_objects(objects: list[dict[str, Any]], command: str) -> None:
    cluster = _Connected(objects, page_size=4)
    run = {"verify": lambda: run_verify(VerifyRequest()),
           "plan": lambda: run_plan(PlanRequest()),
           "cutover": lambda: run_cutover(CutoverRequest())}[command]
    with mock.patch.object(gpudra.cluster, "connect", lambda *_, **__: cluster):
        _bounded(run)
