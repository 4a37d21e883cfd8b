"""gpudra's CEL (gpudra/dra/cel.py) and plan's matching (gpudra/plan/matching.py) against
Kubernetes' DRA CEL environment (the Go oracle): every selector gpudra writes or lints, the
verified expressions, on the NVIDIA device catalogue.

* Selectors gpudra writes (label translations, class and option selectors, the golden outputs)
  must pass the API server's validation of new selectors, at 1.37 and at 1.32.
* For every collected expression, gpudra's compile check and Kubernetes' validation agree on
  whether it compiles, and, for parse and type errors, on the message and its position.
* For every expression that compiles, plan's matcher and the allocator's evaluation agree on
  every catalogue device: true, false, or the same run-time error.

Where they may differ on purpose, DIFFERENCES says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pytest

from gpudra.dra.cel import CelError, SelectorEngine, engine_available
from gpudra.dra.emit import GPU_CLASS_SELECTOR
from gpudra.dra.selectors import label_selector, min_memory_selector, product_prefix_selector
from gpudra.plan.demand import CHART_CLASSES
from gpudra.plan.inventory import parse_inventory
from gpudra.plan.matching import Matcher
from tests.oracle import catalogue
from tests.oracle.client import Oracle

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
         "with has() for optional fields")
_ISSUE = re.compile(r"^compilation failed: ERROR: <input>:(\d+):(\d+): ([^\n]*)")


def _written() -> list[str]:
    from tests.test_selectors import CASES

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
