"""gpudra's CEL (gpudra/dra/cel.py) and plan's matching (gpudra/plan/matching.py) against
Kubernetes' DRA CEL environment (the Go oracle): every selector gpudra writes or lints, the
verified expressions, on the NVIDIA device catalogue.

* Selectors gpudra writes (label translations, class and option selectors, the golden outputs)
  must pass the API server's validation of new selectors, at 1.37 and at 1.32.
* For every collected expression, gpudra's compile check and Kubernetes' validation agree on
  whether it compiles, and, for parse and type errors, on the message and its position.
* For every expression that compiles, plan's matcher and the allocator's evaluation agree on
  every catalogue device: true, false, or the same run-time error.

DIFFERENCES, each checked by hand against the oracle (Kubernetes v1.37.2), not fixed:

* a Semver (or Quantity) compared with ``==`` to a value of another type
  (``driverVersion == "570.124.6"``): Kubernetes fails at run time with ``no such overload``
  (``!=`` is true), gpudra says false. The driver publishes every catalogue name with one type,
  so only a selector written against the wrong type meets it; the random devices keep types.
* run-time parse errors of ``semver("550.54")``: Kubernetes words them as blang/semver does
  ("No Major.Minor.Patch elements found"), gpudra in its own words; both are errors.
* libraries gpudra does not declare (lists ``sum``/``slice``/``sort``, sets, ``url``, ``ip``,
  regex ``find``, ``strings.quote``): Kubernetes compiles them, gpudra refuses them; and the
  strings extension's ``reverse()``/``quote()`` members, which gpudra has and Kubernetes does
  not (its list ``reverse`` applies instead). None appears in a selector gpudra writes or lints.
* ``quantity("1").sign()``: both refuse it; cel-cpp words it "undeclared reference to 'sign'",
  cel-go "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'".
* compile checks are those of 1.37's defaults for every target: ``device.allowMultipleAllocations``
  does not compile on 1.32 (and on 1.34/1.35 without DRAConsumableCapacity), and
  ``isSemver(s, true)`` / ``semver(s, true)`` not on 1.32; gpudra accepts both for any target.
  gpudra writes neither.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.dra.cel import CelError, SelectorEngine, engine_available
from gpudra.dra.emit import GPU_CLASS_SELECTOR
from gpudra.dra.selectors import label_selector, min_memory_selector, product_prefix_selector
from gpudra.plan.demand import CHART_CLASSES
from gpudra.plan.inventory import parse_inventory
from gpudra.plan.matching import Matcher
from tests.oracle import catalogue
from tests.oracle.client import Oracle
from tests.test_selectors import CASES

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
         "with has() for optional fields")
_ISSUE = re.compile(r"^compilation failed: ERROR: <input>:(\d+):(\d+): ([^\n]*)")


def _written() -> list[str]:
    out = [GPU_CLASS_SELECTOR, min_memory_selector("40Gi"), product_prefix_selector("NVIDIA H100"),
           *(e for selectors in CHART_CLASSES.values() for e in selectors)]
    out += [t.expression for case in CASES if (t := label_selector(*case)) and t.expression]
    out += list(catalogue.golden_expressions())
    return list(dict.fromkeys(out))


WRITTEN = _written()
LINTED = list(dict.fromkeys([*catalogue.reference_expressions(), *catalogue.doc_expressions(),
                             *catalogue.rule_case_expressions()]))
EVERY = list(dict.fromkeys(WRITTEN + LINTED))
DEVICES = catalogue.all_devices()


def _ids(expressions: Iterable[str]) -> list[str]:
    return [e if len(e) <= 60 else e[:57] + "..." for e in expressions]


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher(parse_inventory([catalogue.slice_of(DEVICES)]).devices)


@pytest.mark.parametrize("expression", WRITTEN, ids=_ids(WRITTEN))
@pytest.mark.parametrize("fixture", ["oracle", "oracle_132"])
def test_written_selectors_pass_kubernetes_validation(expression: str, fixture: str,
                                                      request: pytest.FixtureRequest) -> None:
    oracle: Oracle = request.getfixturevalue(fixture)
    validation = oracle.cel(expression)["validation"]
    assert validation["error"] is None, (oracle.kubernetes, validation["error"])


def _gpudra_check(expression: str) -> CelError | None:
    try:
        SelectorEngine().check(expression)
    except CelError as exc:
        return exc
    return None


@pytest.mark.parametrize("expression", EVERY, ids=_ids(EVERY))
def test_compile_verdict_and_message_agree(expression: str, oracle: Oracle) -> None:
    ours = _gpudra_check(expression)
    theirs = oracle.cel(expression)["validation"]["error"]
    assert (ours is None) == (theirs is None), (str(ours), theirs)
    issue = _ISSUE.match(theirs or "")
    if ours is not None and issue:
        assert str(ours) == f"{issue.group(1)}:{issue.group(2)}: {issue.group(3)}", theirs


def _oracle_result(result: dict[str, Any]) -> Any:
    if result["error"] is None:
        return result["match"]
    return result["error"].removesuffix(_HINT)


@pytest.mark.parametrize("expression", EVERY, ids=_ids(EVERY))
def test_evaluation_agrees_on_the_catalogue(expression: str, oracle: Oracle,
                                            matcher: Matcher) -> None:
    answer = oracle.cel(expression, [catalogue.oracle_device(d) for d in DEVICES])
    if answer["compileError"] is not None or _gpudra_check(expression) is not None:
        pytest.skip("does not compile (compared by test_compile_verdict_and_message_agree)")
    ours = {device.name: matcher.result(expression, index)
            for index, device in enumerate(matcher.devices)}
    theirs = {d["name"]: _oracle_result(r) for d, r in zip(DEVICES, answer["results"])}
    assert ours == theirs


# --- randomised devices ------------------------------------------------------------------------

_VALUES = {"string": st.sampled_from(["gpu", "mig", "NVIDIA A100-SXM4-80GB", "Tesla T4",
                                      "Ada Lovelace", "1g.10gb", "", "NVIDIA H100 80GB HBM3"]),
           "int": st.integers(-2, 8), "bool": st.booleans(),
           "version": st.sampled_from(["8.0.0", "9.0.0", "535.104.5", "570.124.6", "12.8.0",
                                       "1.2.3-rc.1", "550.54.15"])}
_QUANTITIES = st.sampled_from(["80Gi", "40Gi", "81559Mi", "15360Mi", "0", "1", "132", "500m",
                               "1e3", "1.5", "10Gi"])


@st.composite
def random_device(draw, index: int) -> dict[str, Any]:
    """A catalogue device with its values redrawn and some names dropped."""
    base = draw(st.sampled_from(catalogue.catalogue_devices()))
    attributes = {}
    for name, value in base["attributes"].items():
        if draw(st.integers(0, 5)) == 0:
            continue  # not published on this device
        kind = next(iter(value))  # the catalogue's type: see DIFFERENCES for other types
        attributes[name] = {kind: draw(_VALUES[kind])}
    capacity = {name: {"value": draw(_QUANTITIES)} for name in base["capacity"]
                if draw(st.integers(0, 5))}
    device: dict[str, Any] = {"name": f"random-{index}", "attributes": attributes,
                              "capacity": capacity}
    if draw(st.booleans()):
        device["allowMultipleAllocations"] = draw(st.booleans())
    return device


@st.composite
def random_expression(draw) -> str:
    pool = st.sampled_from(EVERY_COMPILING)
    first = draw(pool)
    shape = draw(st.sampled_from(["one", "and", "or", "not"]))
    if shape == "one":
        return first
    if shape == "not":
        return f"!({first})"
    return f"({first}) {'&&' if shape == 'and' else '||'} ({draw(pool)})"


EVERY_COMPILING = [e for e in EVERY if _gpudra_check(e) is None] if engine_available() else []


@settings(max_examples=200, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(expression=random_expression(),
       devices=st.tuples(*(random_device(i) for i in range(6))))
def test_evaluation_agrees_on_random_devices(expression: str, devices: tuple[dict, ...],
                                             oracle: Oracle) -> None:
    answer = oracle.cel(expression, [catalogue.oracle_device(d) for d in devices])
    assert answer["compileError"] is None, answer["compileError"]
    inventory = parse_inventory([catalogue.slice_of(devices)])
    assert not inventory.problems, inventory.problems
    matcher = Matcher(inventory.devices)
    ours = {device.name: _comparable(matcher.result(expression, index))
            for index, device in enumerate(matcher.devices)}
    theirs = {d["name"]: _comparable(_oracle_result(r)) for d, r in zip(devices, answer["results"])}
    assert ours == theirs


def _comparable(result: Any) -> Any:
    """Semver parse errors are worded by blang/semver in Kubernetes and by gpudra's own parser
    (a documented difference, gpudra.dra.cel.runtime_message): compared as "an error"."""
    return "error" if isinstance(result, str) else result
