"""`cutover --from` on an export plans what `cutover` plans on the cluster it was exported from
(issue 32, item 9). The cluster is the journey's operators fleet as its controllers leave it:
a JobSet's Jobs and their pods, a LeaderWorkerSet's leader StatefulSet, leader pod and the
worker StatefulSet that pod controls, a RayCluster's pods, an InferenceService's predictor
Deployment with its ReplicaSet, every Deployment's ReplicaSet. Served live by the fake API
server, then exported with the `kubectl get` lines docs/cutover.md prescribes (each file what
its line lists) and planned with the docs' `cutover --from` line: both must give the same
waves, each workload once at its top owner."""

from __future__ import annotations

import copy
import json
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane.nvidia import device_plugin_capacity
from tests.fakeapi import FakeCluster
from tests.journey import fleet_operators as ops
from tests.journey.fleets import node as fleet_node
from tests.verify import fleet as f

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cutover.md"
_EXPORT = re.compile(r"^kubectl get (\S+) -A -o yaml > (\S+)$", re.MULTILINE)
_PLAN = re.compile(r"^gpudra cutover --from .*$", re.MULTILINE)


def docs_export(objects: list[dict[str, Any]], directory: Path) -> list[str]:
    """The docs' export, written: each `kubectl get` line's file holds the objects of the
    resource types it lists, as a List; then the docs' `cutover --from` arguments."""
    text = DOCS.read_text(encoding="utf-8")
    for plurals, target in _EXPORT.findall(text):
        wanted = set(plurals.split(","))
        items = [o for o in objects if {f"{o['kind'].lower()}s", f"{o['kind'].lower()}es"}
                 & wanted]
        (directory / target).write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    line = _PLAN.search(text)
    assert line is not None, "docs/cutover.md has no `gpudra cutover --from` line"
    args = shlex.split(line.group(0))[2:]
    return [str(directory / a) if (directory / a).exists() else a for a in args]


def _uid(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["uid"] = f"uid-{obj['kind']}-{obj['metadata']['name']}"
    return obj


def _pods(owner: dict[str, Any], count: int, template: dict[str, Any], node: str,
          names: list[str] | None = None) -> list[dict[str, Any]]:
    """Running pods of `owner`'s template on `node`, as its controller and the kubelet leave
    them."""
    pods = []
    for index in range(count):
        name = names[index] if names else f"{owner['metadata']['name']}-{index}"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": owner["metadata"]["namespace"],
                            "labels": dict(template.get("metadata", {}).get("labels", {})),
                            "ownerReferences": [ops.owner_reference(owner)]},
               "spec": {**copy.deepcopy(template["spec"]), "nodeName": node},
               "status": {"phase": "Running",
                          "conditions": [{"type": "Ready", "status": "True"}]}}
        pods.append(_uid(pod))
    return pods


def _replicaset(deploy: dict[str, Any], node: str) -> list[dict[str, Any]]:
    rs = _uid({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": f"{deploy['metadata']['name']}-7c9d",
                            "namespace": deploy["metadata"]["namespace"],
                            "ownerReferences": [ops.owner_reference(deploy)]},
               "spec": copy.deepcopy(deploy["spec"])})
    return [rs, *_pods(rs, deploy["spec"]["replicas"], deploy["spec"]["template"], node,
                       [f"{rs['metadata']['name']}-x{i}" for i in range(
                           deploy["spec"]["replicas"])])]


def operators_cluster() -> list[dict[str, Any]]:
    """The operators fleet with everything its controllers (and Kubernetes') made of it."""
    fleet = ops.OPERATORS
    by_product: dict[str, str] = {}
    objects: list[dict[str, Any]] = []
    for name, machine in fleet.machines().items():
        obj = fleet_node(name, machine)
        obj["status"]["capacity"] = obj["status"]["allocatable"] = {
            "cpu": "64", "memory": "512Gi", **device_plugin_capacity(machine)}
        by_product.setdefault(machine.product.label, name)
        objects.append(obj)

    def node_for(template: dict[str, Any]) -> str:
        return by_product[template["spec"]["nodeSelector"]["nvidia.com/gpu.product"]]

    for parent in map(_uid, copy.deepcopy(list(fleet.objects))):
        objects.append(parent)
        kind = parent["kind"]
        if kind == "Deployment":
            objects += _replicaset(parent, node_for(parent["spec"]["template"]))
        elif kind == "JobSet":
            for job in map(_uid, ops.jobset_jobs(parent)):
                objects += [job, *_pods(job, 1, job["spec"]["template"],
                                        node_for(job["spec"]["template"]))]
        elif kind == "LeaderWorkerSet":
            leaders = _uid(ops.lws_leader_statefulset(parent))
            objects.append(leaders)
            for leader in _pods(leaders, leaders["spec"]["replicas"],
                                leaders["spec"]["template"],
                                node_for(leaders["spec"]["template"])):
                workers = _uid(ops.lws_worker_statefulset(parent, leader))
                objects += [leader, workers]
                objects += _pods(workers, workers["spec"]["replicas"],
                                 workers["spec"]["template"],
                                 node_for(workers["spec"]["template"]),
                                 [f"{workers['metadata']['name']}-{i + 1}"
                                  for i in range(workers["spec"]["replicas"])])
        elif kind == "RayCluster":
            for index, (prefix, group, template) in enumerate(ops.ray_pod_specs(parent)):
                pod = ops.ray_pod(parent, prefix, group, template)
                pod["metadata"]["name"] = f"{prefix}{index:05d}"
                pod["spec"]["nodeName"] = node_for(template) if group != "headgroup" \
                    else next(iter(by_product.values()))
                pod["status"] = {"phase": "Running"}
                objects.append(_uid(pod))
        elif kind == "InferenceService":
            predictor = _uid(ops.kserve_predictor_deployment(parent))
            objects += [predictor, *_replicaset(predictor,
                                                node_for(predictor["spec"]["template"]))]
    return [*objects, f.device_class()]


def _cutover(*args: str) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", *args, "-o", "json"],
                         check=False, capture_output=True, text=True, timeout=180)
    assert run.stdout.startswith("{"), run.stderr
    return json.loads(run.stdout)


def _waves(report: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    return [(wave["nodes"], sorted(f"{w['namespace']}/{w['kind']}/{w['name']}"
                                   for w in wave["workloads"])) for wave in report["waves"]]


def _reports(version: str, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live cutover of a fake cluster of this release, and the one of its export (planned
    for the same release)."""
    objects = operators_cluster()
    crds = [f"{plural}.{group}" for group, _, plural, _ in ops.CRD_TYPES]
    with FakeCluster(f.state(*objects, version=version, crds=crds), tls=False) as cluster:
        live = _cutover("--kubeconfig", str(cluster.kubeconfig))
    minor = ".".join(version.split(".")[:2])
    return live, _cutover(*docs_export(objects, tmp_path_factory.mktemp("export")),
                          "--target-version", minor)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    return _reports("1.37.2", tmp_path_factory)


@pytest.fixture(scope="module")
def reports_1_36(tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    return _reports("1.36.4", tmp_path_factory)


def test_an_export_gives_the_waves_the_live_cluster_gives(
        reports: tuple[dict[str, Any], dict[str, Any]]) -> None:
    live, exported = reports
    assert _waves(exported) == _waves(live)
    assert exported["blocked"] == live["blocked"]


def test_each_workload_moves_once_at_its_top_owner(
        reports: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """No child of an operator moves as a workload of its own, the RayCluster is not dropped,
    and the InferenceService KServe would run differently without its GPU limit moves on 1.37
    only through the bridge (gpudra.cutover.rides), unchanged."""
    _, exported = reports
    moved = sorted(label for _, labels in _waves(exported) for label in labels)
    assert moved == ["batch/JobSet/pretrain", "research/RayCluster/ray",
                     "serving/InferenceService/chat", "serving/InferenceService/summarize",
                     "serving/LeaderWorkerSet/llm", "web/Deployment/embed",
                     "web/Deployment/rerank"]
    assert [f"{w['namespace']}/{w['kind']}/{w['name']}" for wave in exported["waves"]
            for w in wave["workloads"] if w["bridged"]] == ["/".join(ops.BLOCKED)]


def test_on_1_37_the_workload_convert_cannot_move_rides_the_bridge_live_as_from_the_export(
        reports: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Every L4 node switches (none is kept for the summarizer), the plan is complete, and
    the live plan and the export's say the same of the rider."""
    live, exported = reports
    l4_nodes = {name for name, machine in ops.OPERATORS.machines().items()
                if machine.product.label == "NVIDIA-L4"}
    for report in reports:
        assert report["complete"] is True and report["blocked"] is None
        assert l4_nodes <= {node for wave in report["waves"] for node in wave["nodes"]}
    assert live["bridge"] == exported["bridge"]


def test_a_workload_convert_cannot_move_keeps_its_nodes_and_cutover_says_why(
        reports_1_36: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """KServe picks the summarizer's image by its GPU limit, so convert blocks it: before
    1.37 (no GA bridge) no wave moves it, no wave switches the last node it may run on, and
    cutover (exit 1) names it, its reason and what to do, live as from the export."""
    live, exported = reports_1_36
    assert _waves(exported) == _waves(live)
    for report in reports_1_36:
        assert report["complete"] is False
        switched = {node for wave in report["waves"] for node in wave["nodes"]}
        l4_nodes = {name for name, machine in ops.OPERATORS.machines().items()
                    if machine.product.label == "NVIDIA-L4"}
        assert len(l4_nodes - switched) == 1  # one L4 node stays for it
        assert report["blocked"].startswith(
            f"l4-spare (1 node) stays on the device plugin for 1 workload convert cannot "
            f"move: {'/'.join(ops.BLOCKED)}: KServe picks the "
            "huggingfaceserver image by the GPU limit")
        assert report["blocked"].endswith("migrate them by hand (docs/convert.md), then run "
                                          "cutover again")


def _busy_fleet(nodes: int, workloads: int, seed: int = 1) -> list[dict[str, Any]]:
    """Ten pools, 70% busy, one workload in five pinned to a pool: tight enough that where
    the plan engine places each pod depends on the order it meets them."""
    rng = random.Random(seed)
    pools = [f"pool-{i}" for i in range(10)]
    objects = [f.node(f"gpu-{i:04d}", 8, pool=pools[i % len(pools)]) for i in range(nodes)]
    for index in range(workloads):
        kind = rng.choice(["Job", "Deployment", "Deployment", "StatefulSet"])
        replicas = rng.choice([1, 1, 2]) if kind != "Job" else 1
        selector = {f.POOL_LABEL: rng.choice(pools)} if index % 5 == 0 else None
        obj = f.deployment(f"team-{index % 20}", f"w-{index:04d}",
                           f.pod_spec(gpus=rng.choice([1, 1, 1, 2]), node_selector=selector),
                           replicas, kind="Job" if kind == "Job" else "Deployment")
        if kind == "StatefulSet":
            obj["kind"] = "StatefulSet"
        objects.append(obj)
    return objects


@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_the_order_objects_are_listed_in_does_not_change_the_plan(tmp_path: Path,
                                                                  order: str) -> None:
    """The cluster lists kind by kind, an export in whatever order it was written: the waves
    are the same (the plan engine places greedily, in the order it is given)."""
    objects = _busy_fleet(100, 400)
    listed = list(reversed(objects)) if order == "reversed" else \
        random.Random(7).sample(objects, len(objects))
    reports = []
    for name, items in (("as-written", objects), (order, listed)):
        source = tmp_path / f"{name}.json"
        source.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
                          encoding="utf-8")
        reports.append(_cutover("--from", str(source)))
    assert _waves(reports[1]) == _waves(reports[0])
