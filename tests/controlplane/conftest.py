"""The session's control plane: built once (cached), started once, shared by every test here.

Without Go the tests skip with the reason; in CI (CI set) a control plane that cannot be built
or started is a failure, never a skip (so is it under GPUDRA_REQUIRE_GO, which .ci/run sets). GPUDRA_SKIP_CONTROLPLANE=1 skips them on a developer
machine that has Go but not the quarter of an hour a cold build takes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.controlplane import build
from tests.controlplane.cluster import ControlPlane, path_for
from tests.controlplane.nvidia import DEVICE_CLASSES, RUNTIME_CLASS


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") or os.environ.get("GPUDRA_REQUIRE_GO"):
        pytest.fail(f"the control plane is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if os.environ.get("GPUDRA_SKIP_CONTROLPLANE") and not os.environ.get("CI"):
        pytest.skip("GPUDRA_SKIP_CONTROLPLANE is set")
    try:
        binary = build.binary()
    except build.Unavailable as error:
        _unavailable(str(error))
    plane = ControlPlane(binary, tmp_path_factory.mktemp("controlplane"))
    try:
        plane.start()
        for device_class in DEVICE_CLASSES:
            plane.admin.create(path_for(device_class, "deviceclasses"), device_class)
        plane.admin.create(path_for(RUNTIME_CLASS, "runtimeclasses"), RUNTIME_CLASS)
    except BaseException:
        plane.stop()
        raise
    yield plane
    plane.stop()
