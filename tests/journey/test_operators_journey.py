"""Issue 32's fourth cluster, migrated with gpudra alone: workloads that operators own (a
LeaderWorkerSet, a JobSet, a RayCluster, two KServe InferenceServices) and workloads Helm and
Argo CD manage, with stand-ins of the operators making their children as the real ones do
(tests/journey/operators.py). In file order: the docs' export plans what the cluster plans;
then cutover's runbook is followed as written, wave by wave, and every workload must be running
again after each wave, the moved ones on claims on the pool they ran on; the InferenceService
convert cannot move stays on the device plugin with a node for it, and the gate says so."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.cluster import path_for
from tests.journey import runbook
from tests.journey.cluster import Cluster, journey_cluster_at
from tests.journey.fleet_operators import BLOCKED, CRD_TYPES, CRDS, OPERATORS
from tests.journey.fleets import node
from tests.journey.observe import PodView, gpu_pods
from tests.journey.operators import Operators, top_owner
from tests.journey.steps import gpudra, workload_rows

Key = tuple[str, str, str]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cutover.md"


def pods_now(cluster: Cluster) -> list[PodView]:
    return gpu_pods(cluster.plane.admin, OPERATORS.namespaces, top_owner)


def running(cluster: Cluster) -> dict[Key, int]:
    return dict(Counter((v.namespace, *v.owner) for v in pods_now(cluster)
                        if v.phase == "Running" and v.ready))


def where_they_run(cluster: Cluster) -> dict[Key, set[tuple[bool, str]]]:
    """Per workload, the (on claims, GPU product) of each of its pods Running and Ready (the
    two L4 pools are one product: a pod may come back on either)."""
    pools = {name: m.product.label for name, m in OPERATORS.machines().items()}
    out: dict[Key, set[tuple[bool, str]]] = {}
    for view in pods_now(cluster):
        if view.phase == "Running" and view.ready:
            out.setdefault((view.namespace, *view.owner), set()).add(
                (view.claims and not view.device_plugin, pools.get(view.node or "", "")))
    return out


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
    assert exported.exit_code == live.returncode == 1, exported.output  # blocked: summarize
    report = json.loads(live.stdout)
    from_export = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    assert _moved(from_export) == _moved(report)
    assert from_export["blocked"] == report["blocked"]


def test_the_runbook_runs_as_written_and_every_workload_runs_after_each_wave(
        fleet: Cluster, tmp_path: Path) -> None:
    """Every shell line of every wave exits 0 as written; after each wave every workload runs
    as many pods as before, those moved so far on claims and the others on the device plugin,
    each on the pool it ran on before. The Helm- and Argo CD-managed workloads are named with
    their manager in the wave that moves them; the InferenceService convert cannot move is
    never moved, and cutover names it (exit 1); the gate stays closed for it alone. Each wave
    that moves an operator's workload is also rolled back as written (all back on the device
    plugin, on the same GPU products) and done again; after every step verify says what the
    API server shows."""
    planned = gpudra(fleet, "cutover", "-o", "json")
    report = json.loads(planned.stdout)
    moved_in = {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
                for wave in report["waves"]}
    assert BLOCKED not in set().union(*moved_in.values())
    assert f"{'/'.join(BLOCKED)}: KServe picks" in report["blocked"]
    before = where_they_run(fleet)
    made = gpudra(fleet, "cutover", "--output-dir", str(tmp_path / "cutover"), "-o", "markdown")
    assert made.returncode == 1, made.stderr  # the plan is followed as far as it goes
    waves = runbook.parse(made.stdout)
    assert [wave.number for wave in waves] == sorted(moved_in)
    managed = {"embed": "managed by Helm release embed (namespace web)",
               "rerank": "managed by Argo CD application rerank"}
    for name, manager in managed.items():
        wave = next(n for n, keys in moved_in.items() if ("web", "Deployment", name) in keys)
        section = made.stdout.split(f"## Wave {wave}:")[1].split("## Wave")[0]
        assert f"web/Deployment/{name}" in section and manager in section, section
    bin_dir = runbook.tools(tmp_path / "bin", fleet.plane.binary)

    def follow(wave: runbook.Wave, steps: tuple[str, ...], what: str, now: set[Key]) -> None:
        runbook.run_all(steps, bin_dir=bin_dir, kubeconfig=fleet.kubeconfig, cwd=tmp_path,
                        what=f"wave {wave.number} {what}")
        expected = {key: {(key in now, product) for _, product in places}
                    for key, places in before.items()}
        try:
            fleet.plane.wait(f"every GPU workload running again after wave {wave.number} {what}",
                             lambda: running(fleet) == OPERATORS.running_before
                             and where_they_run(fleet) == expected, timeout=120)
        except TimeoutError:
            pytest.fail(f"after wave {wave.number} {what}: running {running(fleet)}, where "
                        f"{where_they_run(fleet)}, expected {expected}; pods "
                        f"{[(v.name, v.owner, v.node, v.phase) for v in pods_now(fleet)]}")
        # What verify says of each workload is what the API server shows.
        rows = workload_rows(json.loads(gpudra(fleet, "verify", "-o", "json").stdout))
        assert {key: (row["state"], row["pods_ready"]) for key, row in rows.items()} == {
            key: ("claims" if key in now else "device plugin", count)
            for key, count in running(fleet).items()}

    moved: set[Key] = set()
    for wave in waves:
        operators_moving = {key for key in moved_in[wave.number] if key[1] != "Deployment"}
        if operators_moving:  # an operator's wave once forward, rolled back, then again
            follow(wave, wave.steps, "steps", moved | moved_in[wave.number])
            follow(wave, wave.rollback, "rollback", moved)
        moved |= moved_in[wave.number]
        follow(wave, wave.steps, "steps", moved)
    # Everything moved but the InferenceService convert cannot move: the gate is closed, for
    # its pod and the node left on the device plugin for it.
    gate = json.loads(gpudra(fleet, "verify", "-o", "json").stdout)["decommission"]
    assert gate["safe"] is False and gate["judged"] is True
    left = [v for v in pods_now(fleet) if v.device_plugin]
    assert {(v.namespace, *v.owner) for v in left} == {BLOCKED}
    kept = {name for name, m in OPERATORS.machines().items()
            if "nvidia.com/gpu" in fleet.plane.admin.get(f"/api/v1/nodes/{name}")["status"][
                "capacity"]}
    switched = {node for wave in report["waves"] for node in wave["nodes"]}
    assert kept == set(OPERATORS.machines()) - switched and len(kept) == 1
    named = {blocker.split()[1] for blocker in gate["blockers"]}
    assert named == {f"{v.namespace}/{v.name}" for v in left} | kept, gate
