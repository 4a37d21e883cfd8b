"""The session's control plane: built once (cached), started once, shared by every test here.

Without Go the tests skip with the reason; in CI (CI set) a control plane that cannot be built
or started is a failure, never a skip (so is it under GPUDRA_REQUIRE_GO, which .ci/run sets). GPUDRA_SKIP_CONTROLPLANE=1 skips them on a developer
machine that has Go but not the quarter of an hour a cold build takes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controlplane import build, progress
from tests.controlplane.cluster import ControlPlane, path_for
from tests.controlplane.nvidia import DEVICE_CLASSES, RUNTIME_CLASS
from tests.controlplane.releases import NEWEST, V1_33, Release
from tests.support.toolchain import terminal


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") or os.environ.get("GPUDRA_REQUIRE_GO"):
        pytest.fail(f"the control plane is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory,
                  request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    plane = started_plane(NEWEST, tmp_path_factory.mktemp("controlplane"),
                          terminal(request.config))
    yield plane
    plane.stop()


@pytest.fixture(scope="session")
def control_plane_1_33(tmp_path_factory: pytest.TempPathFactory,
                       request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A Kubernetes 1.33 control plane (releases.V1_33: DRA on, resource.k8s.io v1beta1 and
    v1beta2), started only by the tests that ask for it."""
    plane = started_plane(V1_33, tmp_path_factory.mktemp("controlplane-1.33"),
                          terminal(request.config))
    yield plane
    plane.stop()


def started_plane(release: Release, workdir: Path,
                  say: progress.Say = progress.to_stderr) -> ControlPlane:
    """A started control plane of `release` with the NVIDIA DeviceClasses (in the release's
    resource.k8s.io version) and RuntimeClass; the caller stops it. A build it must do first
    reports to `say` (the terminal, when a fixture passes it)."""
    if os.environ.get("GPUDRA_SKIP_CONTROLPLANE") and not os.environ.get("CI"):
        pytest.skip("GPUDRA_SKIP_CONTROLPLANE is set")
    try:
        binary = build.binary(release, say)
    except build.Unavailable as error:
        _unavailable(str(error))
    plane = ControlPlane(binary, workdir, release=release)
    try:
        plane.start()
        for device_class in DEVICE_CLASSES:  # v1's shape, which v1beta2 shares
            served = {**device_class,
                      "apiVersion": f"resource.k8s.io/{release.resource_version}"}
            plane.admin.create(path_for(served, "deviceclasses"), served)
        plane.admin.create(path_for(RUNTIME_CLASS, "runtimeclasses"), RUNTIME_CLASS)
    except BaseException:
        plane.stop()
        raise
    return plane
