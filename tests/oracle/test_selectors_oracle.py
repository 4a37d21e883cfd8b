"""gpudra's CEL (gpudra/dra/cel.py) and plan's matching (gpudra/plan/matching.py) against
Kubernetes' DRA CEL environment (the Go oracle at 1.37 and 1.32): every selector gpudra writes
or lints, the verified expressions, the environment of each release, on the NVIDIA device
catalogue and on randomised devices.

* Selectors gpudra writes (label translations, class and option selectors, the golden outputs)
  must pass the API server's validation of new selectors, at 1.37 and at 1.32.
* For every collected expression, and for the per-release environment probes (:data:`PROBES`:
  device fields, library functions and macros of each release), gpudra's compile check at that
  target and Kubernetes' validation agree on whether it compiles and on the first message and
  its position; where both compile, and gpudra can evaluate, on the result on every device.
* 1.34 and 1.35 (DRAConsumableCapacity off by default) are stood for by the 1.37 oracle with
  the gate off.
* Run-time semantics: semver() parse errors in blang/semver's words (:data:`SEMVERS`), and
  ``==`` / ``in`` between a version attribute and other types (:data:`EQUALITY`).

What still differs is :data:`KNOWN`: each entry is asserted to differ as documented (a fix
makes its test fail until the entry goes), and docs/facts.md lists them. Selectors gpudra
cannot check (two-variable comprehensions, ``sortBy``, ``string(ip(…))``) must be ones
Kubernetes accepts; those it cannot evaluate (URL, IP, CIDR, format functions) are compiled
only.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.dra.cel import CannotEvaluate, CelError, SelectorEngine, engine_available
from gpudra.dra.emit import GPU_CLASS_SELECTOR
from gpudra.dra.selectors import label_selector, min_memory_selector, product_prefix_selector
from gpudra.dra.versions import TargetVersion
from gpudra.plan.demand import CHART_CLASSES
from gpudra.plan.inventory import parse_inventory
from gpudra.plan.matching import Matcher
from tests.dra.test_selectors import CASES
from tests.oracle import catalogue
from tests.oracle.client import Oracle

pytestmark = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")

_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
         "with has() for optional fields")
_ISSUE = re.compile(r"^compilation failed: ERROR: <input>:(\d+):(\d+): ([^\n]*)")
# release -> (oracle fixture, gpudra target)
RELEASES = {"1.37": ("oracle", 37), "1.32": ("oracle_132", 32)}


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

_NV = 'device.attributes["gpu.nvidia.com"]'
# What differs between releases, and Kubernetes' CEL libraries beyond quantity and semver: each
# is compiled by both sides at 1.32 and 1.37 (the first five also at 1.37 with
# DRAConsumableCapacity off), and evaluated where both can.
PROBES = [
    "device.allowMultipleAllocations",
    f'device.allowMultipleAllocations || {_NV}.type == "gpu"',
    'semver("570.124", true).isGreaterThan(semver("550.0.0"))',
    'isSemver("v12.8", true)',
    f'{_NV}.driverVersion.isGreaterThan(semver("550", true))',
    # cel-go's optional values (first/last/unwrap from 1.33) and lists extension (1.35)
    "[1, 2, 3].first().orValue(0) == 1",
    "[1].last().hasValue()",
    "[optional.of(1)].unwrapOpt() == [1]",
    "optional.unwrap([optional.none()]).size() == 0",
    "optional.of(1).optFlatMap(x, optional.of(x)).hasValue()",
    "optional.ofNonZeroValue(0).hasValue() == false",
    "optional.of(1).or(optional.none()).value() == 1",
    "[3, 1, 2].sort() == [1, 2, 3]",
    "[[1], [2, 3]].flatten().size() == 3",
    "[1, 1, 2].distinct() == [1, 2]",
    "[1, 2, 3].slice(1, 2) == [2]",
    "lists.range(3) == [0, 1, 2]",
    "[1, 2].reverse() == [2, 1]",
    # Kubernetes' lists library
    "[1, 2, 3].sum() == 6",
    "[1.5, 2.5].sum() == 4.0",
    "[3, 1].min() == 1",
    "[1, 2].isSorted() && ![2, 1].isSorted()",
    "[1, 2, 3].indexOf(2) == 1",
    "[1, 2, 1].lastIndexOf(1) == 2",
    "[1].min() == 1 && [0].max() == 0 && [0].sum() == 0",
    "[1, 2].includes(1)",
    # regex, sets
    f'{_NV}.productName.find("H[0-9]+") == "H100"',
    f'{_NV}.productName.findAll("[0-9]+").size() >= 1',
    f'{_NV}.productName.findAll("[0-9]+", 1).size() == 1',
    f'sets.contains(["gpu", "mig"], [{_NV}.type])',
    "sets.intersects([1], [1, 2]) && sets.equivalent([1, 2], [2, 1, 1])",
    # the strings extension at version 2: no reverse(), no quote() member
    f'strings.quote({_NV}.productName).startsWith("\\"")',
    '"%s-%d".format(["a", 1]) == "a-1"',
    '"abc".charAt(1) == "b"',
    '"abc".indexOf("c") == 2 && "abcabc".indexOf("a", 1) == 3',
    '"abcabc".lastIndexOf("a") == 3 && "abcabc".lastIndexOf("a", 2) == 0',
    '"ABC".lowerAscii() == "abc" && "abc".upperAscii() == "ABC"',
    '"aXa".replace("a", "b") == "bXb" && "aXa".replace("a", "b", 1) == "bXa"',
    '"a,b".split(",").size() == 2 && "a,b,c".split(",", 2).size() == 2',
    '"abc".substring(1) == "bc" && "abc".substring(1, 2) == "b"',
    '" a ".trim() == "a"',
    f'{_NV}.productName.reverse() == "x"',
    '"abc".reverse() == "cba"',
    '"abc".quote() == "abc"',
    # macros of newer cel-go versions
    "[1, 2].exists(i, v, v == 2)",
    "[1, 2].all(i, v, v > 0)",
    "[1, 2].existsOne(i, v, v == 2)",
    "[1, 2].exists_one(i, v, v == 2)",
    "[1].transformList(i, v, v * 2) == [2]",
    '{"a": 1}.transformMap(k, v, v + 1) == {"a": 2}',
    '{"a": 1}.transformMapEntry(k, v, {k: v}) == {"a": 1}',
    "[2, 1].sortBy(x, x) == [1, 2]",
    # URL, IP, CIDR, format, authorizer
    'url("https://example.com/x").getHost() == "example.com"',
    'url("https://e.com:80/x").getPort() == "80"',
    'url("https://e.com/?a=b").getQuery()["a"] == ["b"]',
    'isURL("https://example.com")',
    'ip("10.0.0.1").family() == 4 && ip("10.0.0.1").isLoopback() == false',
    'ip.isCanonical("10.0.0.1") && isIP("::1")',
    'cidr("10.0.0.0/8").containsIP("10.1.2.3") && cidr("10.0.0.0/8").prefixLength() == 8',
    'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")',
    'cidr("10.1.0.0/8").masked() == cidr("10.0.0.0/8")',
    'cidr("10.0.0.0/8").ip() == ip("10.0.0.0") && isCIDR("10.0.0.0/8")',
    'string(ip("10.0.0.1")) == "10.0.0.1"',
    'string(cidr("10.0.0.0/8")) == "10.0.0.0/8"',
    'format.dns1123Label().validate("gpu-0").hasValue() == false',
    'format.named("dns1123Label").hasValue()',
    '"a".path("b") == "c"',
    # what Kubernetes does not have, and the standard library
    "math.greatest(1, 2) == 2",
    'base64.encode(b"a") == "YQ=="',
    'quantity("1").sign() == 1',
    'sign(quantity("1")) == 1',
    '"abc".size() == 3 && size("abc") == 3',
    '"abc".contains("b") && "abc".startsWith("a") && "abc".endsWith("c") && "abc".matches("^a")',
    'int("1") == 1 && uint(1) == 1u && double(1) == 1.0 && string(1) == "1" && bytes("a") == b"a"',
    'bool("true")',
    'timestamp("2024-01-01T00:00:00Z").getFullYear() == 2024',
    'duration("1h").getHours() == 1',
    "1 < 1.5 && 2u > 1",
    "1.0 == 1",
    "cel.bind(x, 1, x == 1)",
    f'{_NV}.?type.orValue("") == "gpu"',
    # homogeneous literals (gpudra.dra.cel_checked) and the cost estimate's overflows
    '[1, "a"].size() == 2',
    '{"a": 1, "b": "c"}.size() == 2',
    '{"a": 1, 2: 1}.size() == 2',
    "[1, 2.0].size() == 2",
    f'[{_NV}.productName, "a"].size() == 2',
    f'{_NV}.productName in ["a", 1]',
    "[[1], [[2]]].flatten(2).size() == 2",
    '["a", "b"].max() == "b"',
    '["a"].min() == "a"',
    '["a", "b"].isSorted()',
    '["a", "b"].indexOf("b") == 1',
    '["a", "b"].lastIndexOf("a") == 0',
    '[b"a"].min() == b"a"',
    f'{_NV}.productName.split(" ").max() == "a"',
    f'[{_NV}.productName].max() == "a"',
    '["a", "b"].join("-") == "a-b"',
    f'{_NV}.productName.split(" ").join("-") == "a"',
    "[1, 2, 3].slice(2, 1) == [2]",
    "[1, 2, 3].slice(0, 1) == [1]",
    "type(1) == int",
    f"type({_NV}.productName) != string",
    "[1, 2].max() == 2 && [2u].min() == 2u && [true].isSorted()",
    '[1].indexOf("a") == -1',
    "device",
]
_GATE_OFF = {"DRAConsumableCapacity": False}
# Known differences: expression -> why. Asserted to differ (at 1.37 only where the entry says
# so: 1.32 refuses the function and both sides agree).
KNOWN = {
    "1 < 1.5 && 2u > 1": "the engine has no ordering across int, uint and double; Kubernetes "
                         "has (CrossTypeNumericComparisons)",
    '[1].indexOf("a") == -1': "indexOf's element type is a type parameter in Kubernetes; "
                              "the engine's declaration takes any element",
    'quantity("1").sign() == 1': "both refuse it; cel-cpp says undeclared reference, cel-go no "
                                 "matching overload for 'sign' applied to "
                                 "'kubernetes.Quantity.()'",
    f'{_NV}.productName.reverse() == "x"': "both refuse it; the result of a function on an "
                                           "attribute is list(dyn) in Kubernetes' message, "
                                           "list(any) in gpudra's (1.37 only)",
    "device": "both refuse it; Kubernetes names the type kubernetes.DRADevice, gpudra "
              "map(string, google.protobuf.Any)",
}


def _ids(expressions: Iterable[str]) -> list[str]:
    return [e if len(e) <= 60 else e[:57] + "..." for e in expressions]


@functools.cache
def _engine(minor: int, consumable_capacity: bool | None = None) -> SelectorEngine:
    return SelectorEngine(TargetVersion(minor), consumable_capacity)


def _check(expression: str, minor: int = 37,
           consumable_capacity: bool | None = None) -> CelError | CannotEvaluate | None:
    try:
        _engine(minor, consumable_capacity).check(expression)
    except (CelError, CannotEvaluate) as exc:
        return exc
    return None


def _verdict(ours: CelError | CannotEvaluate | None) -> str | None:
    """gpudra's verdict as a comparable string: None (compiles), "L:C: message"."""
    if ours is None:
        return None
    return "cannot check" if isinstance(ours, CannotEvaluate) else str(ours)


def _their_verdict(error: str | None) -> str | None:
    """The API server's validation error as "L:C: message" (its first issue); errors without
    a position (result type, cost) at 1:1, where gpudra puts them."""
    if error is None:
        return None
    issue = _ISSUE.match(error)
    return f"{issue.group(1)}:{issue.group(2)}: {issue.group(3)}" if issue else f"1:1: {error}"


def _known(expression: str, release: str) -> bool:
    reason = KNOWN.get(expression)
    return reason is not None and (release == "1.37" or not reason.endswith("(1.37 only)"))


def _assert_agree(expression: str, release: str, ours: CelError | CannotEvaluate | None,
                  theirs: str | None) -> None:
    mine, their = _verdict(ours), _their_verdict(theirs)
    if _known(expression, release):
        assert mine != their, f"no longer differs ({KNOWN[expression]}): remove it from KNOWN"
    elif isinstance(ours, CannotEvaluate):
        assert their is None, (mine, their)  # gpudra cannot check only what Kubernetes accepts
    else:
        assert mine == their


def _devices(release: str) -> list[dict[str, Any]]:
    """The catalogue, as a driver on `release` publishes it: 1.32 has no consumable capacity
    (a capacity's requestPolicy) and no allowMultipleAllocations."""
    if release != "1.32":
        return DEVICES
    out = []
    for device in DEVICES:
        device = {k: v for k, v in device.items() if k != "allowMultipleAllocations"}
        device["capacity"] = {name: {"value": c["value"]}
                              for name, c in (device.get("capacity") or {}).items()}
        out.append(device)
    return out


def _evaluations(expression: str, release: str, request: pytest.FixtureRequest,
                 devices: Sequence[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(gpudra's, Kubernetes') result on each device: True, False or the run-time error."""
    fixture, minor = RELEASES[release]
    answer = request.getfixturevalue(fixture).cel(
        expression, [catalogue.oracle_device(d) for d in devices])
    assert answer["compileError"] is None, answer["compileError"]
    matcher = Matcher(parse_inventory([catalogue.slice_of(devices)]).devices, _engine(minor))
    ours = [matcher.result(expression, i) for i in range(len(devices))]
    return ours, [_oracle_result(r) for r in answer["results"]]


@pytest.mark.parametrize("expression", WRITTEN, ids=_ids(WRITTEN))
@pytest.mark.parametrize("release", RELEASES)
def test_written_selectors_pass_kubernetes_validation(expression: str, release: str,
                                                      request: pytest.FixtureRequest) -> None:
    oracle: Oracle = request.getfixturevalue(RELEASES[release][0])
    validation = oracle.cel(expression)["validation"]
    assert validation["error"] is None, (oracle.kubernetes, validation["error"])


@pytest.mark.parametrize("expression", EVERY, ids=_ids(EVERY))
@pytest.mark.parametrize("release", RELEASES)
def test_compile_verdict_and_message_agree(expression: str, release: str,
                                           request: pytest.FixtureRequest) -> None:
    fixture, minor = RELEASES[release]
    ours = _check(expression, minor)
    theirs = request.getfixturevalue(fixture).cel(expression)["validation"]["error"]
    _assert_agree(expression, release, ours, theirs)


@pytest.mark.parametrize("expression", PROBES, ids=_ids(PROBES))
@pytest.mark.parametrize("release", RELEASES)
def test_environment_of_each_release(expression: str, release: str,
                                     request: pytest.FixtureRequest) -> None:
    fixture, minor = RELEASES[release]
    ours = _check(expression, minor)
    devices = _devices(release)[:8]
    answer = request.getfixturevalue(fixture).cel(expression)
    _assert_agree(expression, release, ours, answer["validation"]["error"])
    if ours is not None or answer["validation"]["error"] is not None:
        return  # compared above: both refuse it, or a KNOWN difference
    try:
        _engine(minor).compile(expression)
    except CannotEvaluate:
        # compiled only (gpudra.dra.cel_env): URL, IP, CIDR, format, optional.unwrap
        assert re.search(r"\b(url|isURL|ip|isIP|cidr|isCIDR|format|unwrap|unwrapOpt|path)\b",
                         expression), expression
        return
    ours_results, theirs = _evaluations(expression, release, request, devices)
    assert ours_results == theirs


@pytest.mark.parametrize("expression", PROBES[:5], ids=_ids(PROBES[:5]))
def test_consumable_capacity_gate_off(expression: str, oracle: Oracle) -> None:
    """1.34 and 1.35 have DRAConsumableCapacity off by default: the 1.37 oracle with the gate
    off stands for them."""
    theirs = oracle.cel(expression, features=_GATE_OFF)["validation"]["error"]
    for ours in (_check(expression, 37, consumable_capacity=False), _check(expression, 35),
                 _check(expression, 34)):
        _assert_agree(expression, "1.37", ours, theirs)


def _oracle_result(result: dict[str, Any]) -> Any:
    if result["error"] is None:
        return result["match"]
    return result["error"].removesuffix(_HINT)


EVERY_COMPILING = [e for e in EVERY if _check(e) is None] if engine_available() else []


@pytest.mark.parametrize("expression", EVERY_COMPILING, ids=_ids(EVERY_COMPILING))
def test_evaluation_agrees_on_the_catalogue(expression: str,
                                            request: pytest.FixtureRequest) -> None:
    """The expressions gpudra compiles (test_compile_verdict_and_message_agree: the same as
    Kubernetes'), on every catalogue device."""
    ours, theirs = _evaluations(expression, "1.37", request, DEVICES)
    assert dict(zip((d["name"] for d in DEVICES), ours)) == \
        dict(zip((d["name"] for d in DEVICES), theirs))


# --- run-time semantics ------------------------------------------------------------------------

SEMVERS = ["1.2.3", "bad", "1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "1.2.3-01", "1.2.3-",
           "1.2.3+", "1.x.3", "", "1.2.3.4", "1.2.3-a..b", "1.2.3-\u00e4", "1.2.-3", "1..3",
           "99999999999999999999.0.0", "18446744073709551615.0.0", "9223372036854775808.0.0",
           "1.2.3 ", " 1.2.3", "1.2.3-rc.01", "1.2.3+a+b", "1.2.3+a..b", "1.2.3-rc.1+b.01",
           '1.2.3-x"y', "v1", "v1.2", "1.2-rc", "1-rc", "v01.002.0003", "00.0.0", "1.2.3\n",
           "v", "x"]


def _semver_expressions(text: str, release: str) -> list[str]:
    literal = json.dumps(text)
    out = [f"semver({literal}).major() >= 0", f"isSemver({literal})"]
    if release != "1.32":
        out += [f"semver({literal}, true).minor() >= 0", f"isSemver({literal}, true)"]
    return out


@pytest.mark.parametrize("text", SEMVERS, ids=[repr(t) for t in SEMVERS])
@pytest.mark.parametrize("release", RELEASES)
def test_semver_errors_in_kubernetes_words(text: str, release: str,
                                           request: pytest.FixtureRequest) -> None:
    for expression in _semver_expressions(text, release):
        ours, theirs = _evaluations(expression, release, request, DEVICES[:1])
        assert ours == theirs, expression


EQUALITY = [
    f'{_NV}.driverVersion == "570.124.6"',
    f'{_NV}.driverVersion != "570.124.6"',
    f"{_NV}.driverVersion == 570",
    f'"570.124.6" == {_NV}.driverVersion',
    f"{_NV}.driverVersion == null",
    f'{_NV}.driverVersion == semver("570.124.6")',
    f'{_NV}.driverVersion == semver("570.124.6-rc.1") || {_NV}.type == "gpu"',
    f'{_NV}["driverVersion"] == "1" && {_NV}.type == "gpu"',
    f'{_NV}.type == "gpu" && {_NV}.driverVersion == "1"',
    f'false && {_NV}.driverVersion == "1"',
    f'{_NV}.driverVersion == "1" || true',
    f'({_NV}.driverVersion == semver("570.124.6")) == true',
    f'{_NV}.cudaComputeCapability == semver("9.0.0") ? {_NV}.driverVersion == "x" : true',
    f'{_NV}.driverVersion in ["570.124.6", "550.54.15"]',
    f"{_NV}.driverVersion in []",
    f'{_NV}.driverVersion in [semver("570.124.6")]',
    f'{_NV}.driverVersion in [b"570"]',
    f'{_NV}.type in ["gpu", "mig"]',
    f'{_NV}.productName == semver("1.0.0")',
    f'semver("1.0.0") == {_NV}.productName',
    f'quantity("1") == {_NV}.productName',
    f"{_NV}.type == 1",
    f'{_NV}.gpuModuleID == 3.0 && {_NV}.gpuModuleID in [3.0]',
]


@pytest.mark.parametrize("expression", EQUALITY, ids=_ids(EQUALITY))
@pytest.mark.parametrize("release", RELEASES)
def test_equality_with_attributes_as_kubernetes(expression: str, release: str,
                                                request: pytest.FixtureRequest) -> None:
    """A version attribute compared with another type fails at run time in Kubernetes
    (gpudra.dra.cel_equality); `==` on other attributes is plain equality."""
    assert _check(expression, RELEASES[release][1]) is None
    devices = _devices(release)
    ours, theirs = _evaluations(expression, release, request, devices)
    assert dict(zip((d["name"] for d in devices), ours)) == \
        dict(zip((d["name"] for d in devices), theirs))


_MISTYPED_DEVICE = {"name": "mistyped", "attributes": {
    "b": {"bool": True}, "v": {"version": "1.0.0"}, "d": {"int": 5}, "s": {"string": "x"}}}
_A = _NV
# Functions and operators applied to an attribute of the wrong type: the error Kubernetes'
# dispatcher reports (gpudra.dra.cel.runtime_message). Known to differ, not listed here: an
# index into a string (`s[0]`: cel-go "no such key: 0"), size() of or `in` on a version (gpudra
# sees the tagged map it represents a version by), and distinct() of a non-list (a cel-go
# internal error).
MISTYPED = [
    *(f"{_A}.b.{call} == {_A}.b" for call in (
        "isSorted()", "sum()", "min()", "max()", "indexOf(1)", "lastIndexOf(1)", 'find("a")',
        'findAll("a")', 'findAll("a", 1)', "slice(1, 1)", "reverse()", "charAt(0)",
        'indexOf("a")', 'lastIndexOf("a")', "lowerAscii()", 'replace("a", "b")', 'split(",")',
        "substring(1)", "trim()", "upperAscii()", "format([1])", 'startsWith("a")',
        'endsWith("a")', 'contains("a")', 'matches("a")', 'compareTo(semver("1.0.0"))',
        "major()", "asInteger()", "isInteger()", "add(1)", "flatten()", "flatten(1)", "sort()",
        "join()")),
    f"sign({_A}.b) == 1", f'strings.quote({_A}.b) == ""', f'semver({_A}.b) == semver("1.0.0")',
    f'quantity({_A}.b) == quantity("1")', f"{_A}.b.size() == 1", f"{_A}.d.major() == 1",
    f'{_A}.v.replace("a", "b") == ""', f'{_A}.v >= "x"', f'{_A}.d >= "x"', f"{_A}.s + 1 == 1",
    f'{_A}.v.startsWith("a")', f'{_A}.s.compareTo(semver("1.0.0")) == 0',
    f'{_A}.v.compareTo(quantity("1")) == 0', f"-{_A}.s == 1", f"!{_A}.s",
    f'{_A}.s.isGreaterThan(semver("1.0.0"))', f"{_A}.d < 1.5", f"{_A}.v + 1 == 1",
    f'{_A}.v.split(",").size() == 1', f"{_A}.d.indexOf(1) == 0", f"sets.contains({_A}.s, [1])",
    f"{_A}.b < 1", f"{_A}.s * 2 == 1", f'{_A}.v.isGreaterThan(semver("0.1.0"))',
    f"{_A}.v.sum() == 0",
]


@pytest.mark.parametrize("expression", MISTYPED, ids=_ids(MISTYPED))
@pytest.mark.parametrize("release", RELEASES)
def test_mistyped_attributes_fail_as_kubernetes(expression: str, release: str,
                                                request: pytest.FixtureRequest) -> None:
    if _check(expression, RELEASES[release][1]) is not None:
        theirs = request.getfixturevalue(RELEASES[release][0]).cel(expression)
        assert theirs["validation"]["error"] is not None  # a function 1.32 lacks
        return
    ours, theirs = _evaluations(expression, release, request, [_MISTYPED_DEVICE])
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
        kind = next(iter(value))  # the catalogue's type, now and then another one
        if draw(st.integers(0, 7)) == 0:
            kind = draw(st.sampled_from(sorted(_VALUES)))
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
    ours = {device.name: matcher.result(expression, index)
            for index, device in enumerate(matcher.devices)}
    theirs = {d["name"]: _oracle_result(r) for d, r in zip(devices, answer["results"])}
    assert ours == theirs
