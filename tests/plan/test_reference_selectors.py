"""dra-reference.md section 3: every verified selector compiles and gives the stated result on
devices built like the NVIDIA driver's, through the plan's matcher (class selectors first, as
the scheduler runs them); the documented compile errors are reproduced with line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.cel import CelError, SelectorEngine, engine_available
from gpudra.plan.demand import CHART_CLASSES
from gpudra.plan.inventory import parse_inventory
from gpudra.plan.matching import Matcher

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "reference-selectors.yaml").read_text())
pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    slices = list(yaml.safe_load_all((FIXTURES / "reference-devices.yaml").read_text()))
    return Matcher(parse_inventory(slices).devices)


@pytest.mark.parametrize("case", [c for c in CASES if "expect" in c], ids=lambda c: c["id"])
@pytest.mark.parametrize("memoise", [True, False], ids=["memo", "no-memo"])
def test_verified_selector(case: dict[str, Any], memoise: bool, matcher: Matcher) -> None:
    m = Matcher(matcher.devices, memoise=memoise)
    class_name = case.get("class", "gpu.nvidia.com")
    class_selectors = CHART_CLASSES[class_name]
    assert m.compile(case["expression"]).error is None
    selected = m.select(class_name, class_selectors, [case["expression"]])
    got: dict[str, Any] = {}
    for index, device in enumerate(m.devices):
        if all(m.result(e, index) is True for e in class_selectors):
            value = m.result(case["expression"], index)
            got[device.name] = value
    assert got == case["expect"]
    assert {m.devices[i].name for i in selected.matching} == {
        k for k, v in case["expect"].items() if v is True}
    failing = {k for k, v in case["expect"].items() if isinstance(v, str)}
    assert sum(f.devices for f in selected.runtime_errors) == len(failing)


@pytest.mark.parametrize("case", [c for c in CASES if "compile_error" in c], ids=lambda c: c["id"])
def test_documented_compile_error(case: dict[str, Any]) -> None:
    with pytest.raises(CelError) as caught:
        SelectorEngine().check(case["expression"])
    assert str(caught.value) == case["compile_error"]
