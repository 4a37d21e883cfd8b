"""`gpudra guard` on the real API servers (1.37.2, and 1.33.13, which serves
admissionregistration.k8s.io/v1 too): its output is applied with `kubectl apply -f -`, the
policy compiles (status.typeChecking has no warning), and each workload of STAGES is created
with kubectl: warned (the Warning header reaches kubectl's stderr), refused, or let through as
the stage says. Namespaces without gpudra.io/migrated=true are never touched.

The stages run in order on one cluster, as a user would: claims strategy with Warn, then Deny,
then the bridge strategy with Deny (applied as `-o json`, a List). Between stages the API server's policy informer takes a
moment to see the new objects: each stage waits until a probe pod (server-side dry-run) is
treated as the stage says, then creates every case once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.controlplane.cluster import ControlPlane

MIGRATED, PLAIN, RATCHET = "guard-migrated", "guard-plain", "guard-ratchet"
CREATED, WARNED, DENIED = "created", "warned", "denied"
GPU = {"nvidia.com/gpu": "1"}
MIG = {"nvidia.com/mig-1g.10gb": "1"}
SHARED = {"nvidia.com/gpu.shared": "1"}
CPU = {"cpu": "100m"}
CLAIM = "claim"  # a container that asks through a ResourceClaimTemplate (convert's output)
VAP = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/gpudra-guard"


def _container(name: str, limits: dict[str, str] | str) -> dict[str, Any]:
    if limits == CLAIM:
        return {"name": name, "image": "registry.k8s.io/pause:3.10",
                "resources": {"claims": [{"name": "gpu"}]}}
    return {"name": name, "image": "registry.k8s.io/pause:3.10",
            "resources": {"limits": dict(limits)}}


def _pod_spec(main: dict[str, str] | str, init: dict[str, str] | str | None,
              restart: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": restart, "containers": [_container("main", main)]}
    if init is not None:
        spec["initContainers"] = [_container("setup", init)]
    if CLAIM in (main, init):
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    return spec


def workload(kind: str, name: str, namespace: str, main: dict[str, str] | str,
             init: dict[str, str] | str | None = None) -> dict[str, Any]:
    """A minimal valid `kind` whose pod spec has container `main` (and init container `setup`)
    asking for `main` (`init`)."""
    labels = {"app": name}
    batch = kind in ("Job", "CronJob")
    spec = _pod_spec(main, init, "Never" if batch else "Always")
    template = {"metadata": {"labels": labels}, "spec": spec}
    meta = {"name": name, "namespace": namespace}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "PodTemplate":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "template": template}
    if kind == "ReplicationController":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta,
                "spec": {"replicas": 0, "selector": labels, "template": template}}
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                "spec": {"template": template}}
    if kind == "CronJob":
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {"spec": {"template": template}}}}
    selector = {"selector": {"matchLabels": labels}, "template": template}
    if kind == "DaemonSet":
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": selector}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"replicas": 0, **selector}}


@dataclass(frozen=True)
class Case:
    kind: str
    namespace: str
    main: dict[str, str] | str
    expected: str
    init: dict[str, str] | str | None = None

    def object(self, stage: str, index: int) -> dict[str, Any]:
        return workload(self.kind, f"{stage}-{index}-{self.kind.lower()}", self.namespace,
                        self.main, self.init)

    @property
    def named(self) -> list[str]:
        """What a warning or refusal must name: the container and the key it asks for."""
        if isinstance(self.init, dict) and self.init.keys() & {*MIG, *SHARED, *GPU}:
            return ["container setup", *self.init]
        return ["container main", *(self.main if isinstance(self.main, dict) else ())]


ALL_KINDS = ("Pod", "Deployment", "Job", "CronJob", "StatefulSet", "DaemonSet", "ReplicaSet",
             "ReplicationController", "PodTemplate")


@dataclass(frozen=True)
class Stage:
    name: str
    args: tuple[str, ...]        # gpudra guard's
    cases: tuple[Case, ...]
    probe: tuple[dict[str, str], str]  # a Pod's limits in MIGRATED, and what the stage does to it


STAGES = (
    Stage("warn", ("--action", "warn"), (
        Case("Deployment", MIGRATED, GPU, WARNED),
        Case("Pod", MIGRATED, MIG, WARNED),
        Case("Pod", PLAIN, GPU, CREATED),
        Case("Deployment", MIGRATED, CLAIM, CREATED),
    ), (GPU, WARNED)),
    Stage("deny", ("--action", "deny"), (
        *(Case(kind, MIGRATED, GPU, DENIED) for kind in ALL_KINDS),
        Case("Job", MIGRATED, CPU, DENIED, init=MIG),
        Case("Pod", MIGRATED, SHARED, DENIED),
        *(Case(kind, MIGRATED, CLAIM, CREATED) for kind in ("Deployment", "Job", "CronJob",
                                                            "Pod")),
        Case("Pod", MIGRATED, CPU, CREATED),
        *(Case(kind, PLAIN, GPU, CREATED) for kind in ("Deployment", "Job", "CronJob", "Pod")),
    ), (GPU, DENIED)),
    Stage("bridge", ("--strategy", "bridge", "--action", "deny", "-o", "json"), (
        Case("Pod", MIGRATED, GPU, CREATED),
        Case("Deployment", MIGRATED, GPU, CREATED),
        Case("Pod", MIGRATED, MIG, DENIED),
        Case("CronJob", MIGRATED, SHARED, DENIED),
        Case("Job", MIGRATED, GPU, DENIED, init=MIG),
        Case("Deployment", MIGRATED, CLAIM, CREATED),
    ), (GPU, CREATED)),
)


def outcome(result: subprocess.CompletedProcess[str]) -> str:
    if result.returncode != 0:
        return DENIED if "denied request" in result.stderr else f"error: {result.stderr}"
    return WARNED if "Warning: Validation failed" in result.stderr else CREATED


def kubectl_create(plane: ControlPlane, obj: dict[str, Any], *, dry_run: bool = False
                   ) -> subprocess.CompletedProcess[str]:
    extra = ("--dry-run=server",) if dry_run else ()
    return plane.kubectl("create", *extra, "-f", "-", stdin=json.dumps(obj))


def apply_guard(plane: ControlPlane, *args: str) -> None:
    """`gpudra guard ARGS | kubectl apply -f -`, and the policy type-checked without warning."""
    guard = subprocess.run([sys.executable, "-m", "gpudra", "guard", *args], capture_output=True,
                           text=True, check=True, timeout=120)
    applied = plane.kubectl("apply", "-f", "-", stdin=guard.stdout)
    assert applied.returncode == 0, applied.stderr

    def checked() -> dict[str, Any] | None:
        stored = plane.admin.get(VAP)
        status = stored.get("status") or {}
        generation = stored["metadata"]["generation"]
        return status if status.get("observedGeneration") == generation else None

    status = plane.wait("the guard policy type-checked", checked, 60)
    assert (status.get("typeChecking") or {}).get("expressionWarnings") is None, status


@pytest.fixture(scope="module", params=["1.37", "1.33"])
def plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    plane = request.getfixturevalue("control_plane" if request.param == "1.37"
                                    else "control_plane_1_33")
    plane.ensure_namespace(PLAIN)
    plane.ensure_namespace(RATCHET)
    # Made before its namespace is labelled, as a workload the migration left behind.
    old = workload("Deployment", "left-behind", RATCHET, GPU)
    assert kubectl_create(plane, old).returncode == 0
    plane.ensure_namespace(MIGRATED, {"gpudra.io/migrated": "true"})
    plane.ensure_namespace(RATCHET, {"gpudra.io/migrated": "true"})
    yield plane
    for path in (VAP, VAP.replace("policies/", "policybindings/")):
        plane.admin.delete(path)
    for namespace in (MIGRATED, PLAIN, RATCHET):
        plane.admin.delete(f"/api/v1/namespaces/{namespace}")


def test_guard_warns_then_denies_and_lets_converted_and_bridged_workloads_through(
        plane: ControlPlane) -> None:
    wrong: list[str] = []
    for stage in STAGES:
        apply_guard(plane, *stage.args)
        limits, expected = stage.probe
        probe = workload("Pod", f"probe-{stage.name}", MIGRATED, limits)
        plane.wait(f"the {stage.name} stage in force",
                   lambda probe=probe, expected=expected:
                   outcome(kubectl_create(plane, probe, dry_run=True)) == expected, 60)
        for index, case in enumerate(stage.cases):
            result = kubectl_create(plane, case.object(stage.name, index))
            got = outcome(result)
            where = f"{stage.name}: {case.kind} in {case.namespace} asking {case.main}" + (
                f" (init {case.init})" if case.init else "")
            if got != case.expected:
                wrong.append(f"{where}: {got}, expected {case.expected}")
            elif got in (WARNED, DENIED):
                missing = [w for w in [*case.named, "gpudra convert", case.namespace]
                           if w not in result.stderr]
                if missing:
                    wrong.append(f"{where}: the message lacks {missing}: {result.stderr}")
    assert wrong == []


def test_the_ratchet_lets_old_objects_be_updated_but_nothing_new_ask(plane: ControlPlane
                                                                     ) -> None:
    apply_guard(plane, "--action", "deny")
    probe = workload("Pod", "probe-ratchet", MIGRATED, GPU)
    plane.wait("the deny stage in force",
               lambda: outcome(kubectl_create(plane, probe, dry_run=True)) == DENIED, 60)
    # UPDATE of the object left behind, as it is: allowed (it asked before the label).
    relabel = plane.kubectl("label", "deployment/left-behind", "-n", RATCHET, "tier=old")
    assert relabel.returncode == 0, relabel.stderr
    # A converted workload given a device-plugin limit again: refused.
    converted = workload("Deployment", "converted", RATCHET, CLAIM)
    assert outcome(kubectl_create(plane, converted)) == CREATED
    regress = plane.kubectl("set", "resources", "deployment/converted", "-n", RATCHET,
                            "-c", "main", "--limits=nvidia.com/gpu=1")
    assert outcome(regress) == DENIED and "container main asks for nvidia.com/gpu" in \
        regress.stderr, regress.stderr
