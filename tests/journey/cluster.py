"""The journey's clusters: each a control plane of its own (the scheduling tests' nodes and pods,
and other clusters', stay out of it) with kwok playing the kubelets of the nodes the journey
annotates, and GpuStack playing the device plugin and the DRA driver on them.

Like tests/controlplane: without Go the tests skip with the reason; in CI, or under
GPUDRA_REQUIRE_GO, a cluster that cannot be built or started is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.controlplane import build
from tests.controlplane.cluster import ControlPlane, Credentials, path_for
from tests.controlplane.nvidia import DEVICE_CLASSES
from tests.controlplane.releases import NEWEST, Release
from tests.journey import kwok
from tests.journey.gpu_stack import DEVICE_PLUGIN, DRA_KUBELET_PLUGIN, NAMESPACE, GpuStack


@dataclass(frozen=True)
class Cluster:
    plane: ControlPlane
    stack: GpuStack
    kubeconfig: Path  # cluster-admin, for kubectl and gpudra


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") or os.environ.get("GPUDRA_REQUIRE_GO"):
        pytest.fail(f"the journey's cluster is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@contextmanager
def journey_cluster_at(workdir: Path, apiserver_args: tuple[str, ...] = (),
                       release: Release = NEWEST) -> Iterator[Cluster]:
    """A started cluster of `release`: control plane, DeviceClasses, kwok, the two GPU
    DaemonSets and the stack that plays them (nodes are added by the test)."""
    if os.environ.get("GPUDRA_SKIP_CONTROLPLANE") and not os.environ.get("CI"):
        pytest.skip("GPUDRA_SKIP_CONTROLPLANE is set")
    try:
        plane_binary, kwok_binary = build.binary(release), kwok.binary()
    except build.Unavailable as error:
        _unavailable(str(error))
    plane = ControlPlane(plane_binary, workdir, apiserver_args, release)
    kubelets: kwok.Kwok | None = None
    stack: GpuStack | None = None
    try:
        plane.start()
        for device_class in DEVICE_CLASSES:  # v1's shape, which v1beta2 shares
            served = {**device_class,
                      "apiVersion": f"resource.k8s.io/{release.resource_version}"}
            plane.admin.create(path_for(served, "deviceclasses"), served)
        kubeconfig = plane.write_kubeconfig(workdir / "admin.kubeconfig", Credentials(
            plane.pki / "admin.crt", plane.pki / "admin.key"))
        kubelets = kwok.Kwok(kwok_binary, kubeconfig, workdir)
        kubelets.start()
        plane.ensure_namespace(NAMESPACE)
        for daemonset in (DEVICE_PLUGIN, DRA_KUBELET_PLUGIN):
            plane.admin.create(path_for(daemonset, "daemonsets"), daemonset)
        stack = GpuStack(plane.admin, {}, resource_version=release.resource_version)
        stack.start()
        yield Cluster(plane, stack, kubeconfig)
    finally:
        if stack is not None:
            stack.stop()
        if kubelets is not None:
            kubelets.stop()
        plane.stop()
