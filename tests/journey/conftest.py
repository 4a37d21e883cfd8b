"""The journey's cluster: a control plane of its own (the scheduling tests' nodes and pods stay
out of it) with kwok playing the kubelets of the nodes the journey annotates.

Like tests/controlplane: without Go the tests skip with the reason; in CI, or under
GPUDRA_REQUIRE_GO, a cluster that cannot be built or started is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.controlplane import build
from tests.controlplane.cluster import ControlPlane, Credentials, path_for
from tests.controlplane.nvidia import DEVICE_CLASSES
from tests.journey import kwok
from tests.journey.gpu_stack import DEVICE_PLUGIN, DRA_KUBELET_PLUGIN, NAMESPACE, GpuStack


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") or os.environ.get("GPUDRA_REQUIRE_GO"):
        pytest.fail(f"the journey's cluster is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def journey_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if os.environ.get("GPUDRA_SKIP_CONTROLPLANE") and not os.environ.get("CI"):
        pytest.skip("GPUDRA_SKIP_CONTROLPLANE is set")
    try:
        plane_binary, kwok_binary = build.binary(), kwok.binary()
    except build.Unavailable as error:
        _unavailable(str(error))
    workdir = tmp_path_factory.mktemp("journey")
    plane = ControlPlane(plane_binary, workdir)
    kubelets: kwok.Kwok | None = None
    try:
        plane.start()
        for device_class in DEVICE_CLASSES:
            plane.admin.create(path_for(device_class, "deviceclasses"), device_class)
        kubeconfig = plane.write_kubeconfig(workdir / "kwok.kubeconfig", Credentials(
            plane.pki / "admin.crt", plane.pki / "admin.key"))
        kubelets = kwok.Kwok(kwok_binary, kubeconfig, workdir)
        kubelets.start()
        yield plane
    finally:
        if kubelets is not None:
            kubelets.stop()
        plane.stop()


@pytest.fixture(scope="session")
def gpu_stack(journey_cluster: ControlPlane) -> Iterator[GpuStack]:
    """The device plugin and the DRA kubelet plugin as DaemonSets, and their effect on nodes
    played by GpuStack for the nodes a test adds to it."""
    plane = journey_cluster
    plane.ensure_namespace(NAMESPACE)
    for daemonset in (DEVICE_PLUGIN, DRA_KUBELET_PLUGIN):
        plane.admin.create(path_for(daemonset, "daemonsets"), daemonset)
    stack = GpuStack(plane.admin, {})
    stack.start()
    yield stack
    stack.stop()
