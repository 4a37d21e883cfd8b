"""What every journey test does to its cluster: bring a fleet up on the device plugin, run
gpudra as a user would (the cluster's kubeconfig, no colour, a clean environment), and read
where each workload's pods run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.controlplane.releases import NEWEST, Release
from tests.journey.cluster import Cluster, journey_cluster_at
from tests.journey.fleets import POOL_LABEL, Fleet, node
from tests.journey.observe import gpu_pods, running_by_owner

WorkloadKey = tuple[str, str, str]  # (namespace, top owner kind, name)


def gpudra(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    home = cluster.kubeconfig.parent
    return subprocess.run([sys.executable, "-m", "gpudra", *args, "--kubeconfig",
                           str(cluster.kubeconfig)], capture_output=True, text=True,
                          check=False, cwd=home, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": str(home)})


def bring_up(cluster: Cluster, fleet: Fleet) -> None:
    """The fleet's nodes (with their GPU stack), namespaces and objects, and a wait until its
    GPU workloads run on the device plugin as the fleet says they do before the migration."""
    plane = cluster.plane
    for name, machine in fleet.machines().items():
        cluster.stack.add(name, machine)
        plane.create_node(node(name, machine))
    for namespace in fleet.namespaces:
        plane.ensure_namespace(namespace)
    for obj in fleet.objects:
        plane.admin.create(plane.object_path(obj).rpartition("/")[0], obj)
    plane.wait("every GPU workload running on the device plugin", lambda: running_by_owner(
        gpu_pods(plane.admin, fleet.namespaces)) == fleet.running_before, timeout=120)


@contextmanager
def brought_up(workdir: Path, fleet: Fleet, release: Release = NEWEST) -> Iterator[Cluster]:
    """A journey's own cluster at `workdir`, started with the fleet's API server flags and
    brought up (bring_up): a module fixture's whole body, as each journey migrates its own."""
    with journey_cluster_at(workdir, fleet.apiserver_args, release) as cluster:
        bring_up(cluster, fleet)
        yield cluster


def workload_rows(report: dict[str, Any]) -> dict[WorkloadKey, dict[str, Any]]:
    """verify -o json's workload rows by (namespace, kind, name)."""
    return {(row["namespace"], row["kind"], row["name"]): row for row in report["workloads"]}


def running_now(cluster: Cluster, fleet: Fleet) -> dict[WorkloadKey, int]:
    return dict(running_by_owner(gpu_pods(cluster.plane.admin, fleet.namespaces)))


def moved_by_wave(cluster: Cluster) -> dict[int, set[WorkloadKey]]:
    """The workloads `gpudra cutover -o json` puts in each wave."""
    planned = gpudra(cluster, "cutover", "-o", "json")
    assert planned.returncode == 0, planned.stderr
    return {wave["wave"]: {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}
            for wave in json.loads(planned.stdout)["waves"]}


def where_they_run(cluster: Cluster, fleet: Fleet) -> dict[WorkloadKey, set[tuple[bool, str]]]:
    """Per workload, the (on claims, node pool) of each of its pods Running and Ready."""
    pools = {name: machine.labels[POOL_LABEL] for name, machine in fleet.machines().items()}
    out: dict[WorkloadKey, set[tuple[bool, str]]] = {}
    for view in gpu_pods(cluster.plane.admin, fleet.namespaces):
        if view.phase == "Running" and view.ready:
            on_claims = view.claims and not view.device_plugin
            out.setdefault((view.namespace, *view.owner), set()).add(
                (on_claims, pools.get(view.node or "", "")))
    return out
