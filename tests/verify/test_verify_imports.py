"""What loading `gpudra verify` costs beyond the audit (issue 32: verify on 100,000 pods at
most 1.1x the audit): its modules load neither every preflight check (the gate reads one helper
of theirs) nor plan's synthesis from Node objects (verify explains with live ResourceSlices)."""

from __future__ import annotations

import subprocess
import sys

import pytest

NOT_LOADED = ["gpudra.preflight.cluster", "gpudra.preflight.cluster.monitoring",
              "gpudra.plan.synthesis"]


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    shown = subprocess.run(
        [sys.executable, "-c", "import sys, gpudra.verify.run, gpudra.cli.verify; "
                               "print('\\n'.join(sys.modules))"],
        check=True, capture_output=True, text=True).stdout
    return set(shown.split())


@pytest.mark.parametrize("module", NOT_LOADED)
def test_verify_does_not_load(module: str, loaded: set[str]) -> None:
    assert "gpudra.verify.gate" in loaded
    assert module not in loaded


def test_the_plan_package_still_gives_its_names() -> None:
    import gpudra.plan
    from gpudra.plan.synthesis import synthesize

    assert gpudra.plan.synthesize is synthesize
    assert sorted(n for n in gpudra.plan.__all__ if getattr(gpudra.plan, n) is None) == []
    with pytest.raises(AttributeError):
        gpudra.plan.not_a_name  # noqa: B018
