"""Issue 32's fourth cluster, migrated with gpudra alone: workloads that operators own (a
LeaderWorkerSet, a JobSet, a RayCluster, two KServe InferenceServices) and workloads Helm and
Argo CD manage, with stand-ins of the operators making their children as the real ones do
(tests/journey/operators.py). In file order: the docs' export plans what the cluster plans;
then cutover's runbook is followed as written, wave by wave, and every workload must be running
again after each wave, the moved ones on claims on the pool they ran on. The InferenceService
convert cannot move (KServe reads the GPU limit) rides the extended-resource bridge unchanged on
this 1.37 cluster (gpudra.cutover.rides), and the gate opens, with the claims guard refusing
from the start everywhere but in the rider's namespace, which is never labelled; on a release
before 1.37 it stays blocked (tests/verify/test_cutover_rides.py)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cluster import path_for
from tests.controlplane.test_guard import (
    CREATED, DENIED, apply_guard, kubectl_create, outcome, workload,
)
from tests.journey import runbook
from tests.journey.bridged import BRIDGE, CLAIMS, DEVICE_PLUGIN, served
from tests.journey.cluster import Cluster, journey_cluster_at
from tests.journey.fleet_operators import BLOCKED, CRD_TYPES, CRDS, OPERATORS
from tests.journey.fleets import node
from tests.journey.observe import PodView, gpu_pods
from tests.journey.operators import Operators, top_owner
from tests.journey.record import Record
from tests.journey.steps import gpudra, workload_rows

Key = tuple[str, str, str]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cutover.md"


def pods_now(cluster: Cluster) -> list[PodView]:
    return gpu_pods(cluster.plane.admin, OPERATORS.namespaces, top_owner)


def running(cluster: Cluster) -> dict[Key, int]:
    return dict(Counter((v.namespace, *v.owner) for v in pods_now(cluster)
                        if v.phase == "Running" and v.ready))


def _established(cluster: Cluster) -> bool:
    for group, version, plural, _ in CRD_TYPES:
        listing = cluster.plane.admin.get(f"/apis/{group}/{version}")
        if plural not in {r["name"] for r in listing.get("resources", [])}:
            return False
    return True


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with journey_cluster_at(tmp_path_factory.mktemp("operators"),
                            OPERATORS.apiserver_args) as cluster:
        plane = cluster.plane
        for crd in CRDS:
            plane.admin.create(path_for(crd, "customresourcedefinitions"), crd)
        plane.wait("the operators' CRDs served", lambda: _try(_established, cluster),
                   timeout=60)
        stand_ins = Operators(plane.admin)
        stand_ins.start()
        try:
            for name, machine in OPERATORS.machines().items():
                cluster.stack.add(name, machine)
                plane.create_node(node(name, machine))
            for namespace in OPERATORS.namespaces:
                plane.ensure_namespace(namespace)
            for obj in OPERATORS.objects:
                plane.admin.create(plane.object_path(obj).rpartition("/")[0], obj)
            plane.wait("every GPU workload running on the device plugin",
                       lambda: running(cluster) == OPERATORS.running_before, timeout=180)
            yield cluster
        finally:
            stand_ins.stop()


def _try(check: Any, cluster: Cluster) -> bool:
    try:
        return check(cluster)
    except Exception:  # noqa: BLE001 - the API group may not be served yet
        return False


def _moved(report: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    return [(wave["nodes"], sorted("/".join((w["namespace"], w["kind"], w["name"]))
                                   for w in wave["workloads"])) for wave in report["waves"]]


def test_before_the_first_wave_verify_sees_what_the_api_server_shows(fleet: Cluster) -> None:
    result = gpudra(fleet, "verify", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = workload_rows(json.loads(result.stdout))
    assert {key for key, row in rows.items() if row["pods_ready"]} == set(
        OPERATORS.running_before)
    assert {key: row["pods_ready"] for key, row in rows.items() if row["pods_ready"]} == \
        running(fleet)
    assert {row["state"] for row in rows.values()} == {"device plugin"}


def test_the_docs_export_plans_what_the_cluster_plans(fleet: Cluster, tmp_path: Path) -> None:
    """docs/cutover.md's export lines run as written with kubectl, then its `cutover --from`
    line: the waves (nodes, workloads) and what blocks are the live cutover's."""
    text = DOCS.read_text(encoding="utf-8")
    lines = re.findall(r"^kubectl get \S+ -A -o yaml > \S+$", text, re.MULTILINE)
    plan_line = re.search(r"^gpudra cutover --from .*$", text, re.MULTILINE)
    assert len(lines) == 2 and plan_line is not None
    bin_dir = runbook.tools(tmp_path / "bin", fleet.plane.binary)
    for line in lines:
        done = runbook.run(line, bin_dir=bin_dir, kubeconfig=fleet.kubeconfig, cwd=tmp_path)
        assert done.exit_code == 0, f"{line}\n{done.output}"
    exported = runbook.run(f"{plan_line.group(0)} > plan.json", bin_dir=bin_dir,
                           kubeconfig=fleet.kubeconfig, cwd=tmp_path)
    live = gpudra(fleet, "cutover", "-o", "json")
    # complete: on 1.37 the InferenceService convert cannot move rides the bridge
    assert exported.exit_code == live.returncode == 0, exported.output
    report = json.loads(live.stdout)
    from_export = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    assert _moved(from_export) == _moved(report)
    assert from_export["blocked"] == report["blocked"]
    assert from_export["bridge"]["rides"] == report["bridge"]["rides"]


def test_the_runbook_runs_as_written_and_every_workload_runs_after_each_wave(
        fleet: Cluster, tmp_path: Path) -> None:
    """Every shell line of every wave exits 0 as written; after each wave every workload runs
    as many pods as before, each on the GPU product it ran on: those converted so far on
    claims; the others unchanged, through the bridge exactly when their node is switched.
    The Helm- and Argo CD-managed workloads are named with their manager in the wave that
    moves them. The InferenceService convert cannot move (KServe reads the limit) rides the
    bridge on this 1.37 cluster (gpudra.cutover.rides): cutover -o json says so, the runbook
    writes the mapping class, and it moves unchanged in the wave that switches the last node
    it may run on. Each wave that moves an operator's workload is also rolled back as written
    and done again; after every step verify says what the API server shows; then the gate
    opens."""
    # the claims guard, refusing, from before the first wave (what the runbook's one-time
    # steps apply): it must not refuse the rider's pods, whose namespace is never labelled
    apply_guard(fleet.plane, "--action", "deny")
    planned = gpudra(fleet, "cutover", "-o", "json")
    assert planned.returncode == 0, planned.stderr  # complete: nothing stays behind
    report = json.loads(planned.stdout)
    moved_in = {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
                for wave in report["waves"]}
    rides = {key for wave in report["waves"] for w in wave["workloads"] if w["bridged"]
             for key in [(w["namespace"], w["kind"], w["name"])]}
    assert rides == {BLOCKED} and not report["blocked"]
    assert (report["strategy"], [(r["namespace"], r["kind"], r["name"], r["note"]) for r in
                                 report["bridge"]["rides"]]) == (
        "rewrite", [(*BLOCKED, "KServe reads nvidia.com/gpu: left unchanged, served by DRA "
                     "through the bridge")])
    product = {name: machine.product.label for name, machine in OPERATORS.machines().items()}
    before = {key: {product[node] for _, node in places}
              for key, places in by_node(fleet).items()}
    out = tmp_path / "cutover"
    made = gpudra(fleet, "cutover", "--output-dir", str(out), "-o", "markdown")
    assert made.returncode == 0, made.stderr
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in)
    managed = {"embed": "managed by Helm release embed (namespace web)",
               "rerank": "managed by Argo CD application rerank"}
    for name, manager in managed.items():
        wave = next(n for n, keys in moved_in.items() if ("web", "Deployment", name) in keys)
        section = made.stdout.split(f"## Wave {wave}:")[1].split("## Wave")[0]
        assert f"web/Deployment/{name}" in section and manager in section, section
    bin_dir = runbook.tools(tmp_path / "bin", fleet.plane.binary)
    record = Record("operators-1.37", "claims", out)

    def settled(converted: set[Key], held: set[Key]) -> bool:
        """As the docstring says; `held`: the riders the waves so far moved, only through
        the bridge."""
        on_dra, now = switched(fleet), by_node(fleet)
        return (running(fleet) == OPERATORS.running_before
                and {key: {product[node] for _, node in places}
                     for key, places in now.items()} == before
                and all(stack == CLAIMS if key in converted else
                        (stack == BRIDGE) == (node in on_dra)
                        for key, places in now.items() for stack, node in places)
                and all(stack == BRIDGE for key in held for stack, _ in now.get(key, ())))

    def follow(wave: runbook.Wave, block: str, now: set[Key]) -> None:
        with record.timed(wave.number, block):
            runbook.run_all(wave.steps if block == "steps" else wave.rollback,
                            bin_dir=bin_dir, kubeconfig=fleet.kubeconfig, cwd=tmp_path,
                            what=f"wave {wave.number} {block}")
        converted, held = now - rides, now & rides
        try:
            fleet.plane.wait(f"every GPU workload running again after wave {wave.number} "
                             f"{block}", lambda: settled(converted, held), timeout=120)
        except TimeoutError:
            pytest.fail(f"after wave {wave.number} {block}: running {running(fleet)}, where "
                        f"{by_node(fleet)}, switched {switched(fleet)}, now {now}; pods "
                        f"{[(v.name, v.owner, v.node, v.phase) for v in pods_now(fleet)]}")
        # What verify says of each workload is what the API server shows.
        rows = workload_rows(json.loads(gpudra(fleet, "verify", "-o", "json").stdout))
        places = by_node(fleet)
        assert {key: (row["state"], row["pods_ready"]) for key, row in rows.items()} == {
            key: (CLAIMS if key in converted else
                  BRIDGE if all(stack == BRIDGE for stack, _ in places[key]) else
                  DEVICE_PLUGIN, count) for key, count in running(fleet).items()}

    moved: set[Key] = set()
    for wave in waves:
        operators_moving = {key for key in moved_in[wave.number] if key[1] != "Deployment"}
        if operators_moving:  # an operator's wave once forward, rolled back, then again
            follow(wave, "steps", moved | moved_in[wave.number])
            follow(wave, "rollback", moved)
        moved |= moved_in[wave.number]
        follow(wave, "steps", moved)
    # Everything moved, the rider through the bridge: no node keeps the device plugin, and
    # the gate opens.
    gate = json.loads(gpudra(fleet, "verify", "-o", "json").stdout)["decommission"]
    assert (gate["safe"], gate["judged"], gate["blockers"]) == (True, True, [])
    assert not [v for v in pods_now(fleet) if v.device_plugin
                and (v.namespace, *v.owner) not in rides]
    assert not [name for name in OPERATORS.machines() if "nvidia.com/gpu" in fleet.plane.admin.get(
        f"/api/v1/nodes/{name}")["status"]["capacity"]]
    # Every namespace but the rider's was labelled by its last wave and is guarded; the
    # rider's is not (its controller's pods ask nvidia.com/gpu), and the gate has no warning.
    assert gate["warnings"] == []
    for namespace in OPERATORS.namespaces:
        labels = fleet.plane.admin.get(f"/api/v1/namespaces/{namespace}")["metadata"]["labels"]
        assert (labels.get("gpudra.io/migrated") == "true") == (namespace != BLOCKED[0]), (
            namespace, labels)
        again = workload("Deployment", "again", namespace, {"nvidia.com/gpu": "1"})
        assert outcome(kubectl_create(fleet.plane, again)) == (
            CREATED if namespace == BLOCKED[0] else DENIED), namespace


def by_node(cluster: Cluster) -> dict[Key, set[tuple[str, str]]]:
    """(stack, node) of each pod Running and Ready, per workload (tests/journey/bridged.py)."""
    return served(cluster, OPERATORS, top_owner, lambda name, _: name)


def switched(cluster: Cluster) -> set[str]:
    return {name for name in OPERATORS.machines() if cluster.plane.admin.get(
        f"/api/v1/nodes/{name}")["metadata"]["labels"].get("gpudra.io/gpu-stack") == "dra"}
