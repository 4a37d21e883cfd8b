"""The DRA CEL environment of each release (gpudra.dra.cel_env) and Kubernetes' run-time
semantics (gpudra.dra.cel_equality, semver errors), without the oracle: the expected values are
what the Go oracle answered (tests/oracle/test_selectors_oracle.py compares them there)."""

from __future__ import annotations

import pytest

from gpudra.dra import cel_lint
from gpudra.dra.cel import (
    CannotEvaluate,
    CelError,
    CelEvaluationError,
    SelectorEngine,
    Version,
    compile_selector,
    engine_available,
    runtime_message,
)
from gpudra.dra.cel_equality import kubernetes_equality
from gpudra.dra.versions import TargetVersion
from gpudra.plan.inventory import Device
from gpudra.plan.matching import Matcher, MatchResult

NV = 'device.attributes["gpu.nvidia.com"]'
needs_engine = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")
DEVICE = {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {
    "type": "gpu", "productName": "NVIDIA H100", "driverVersion": Version.parse("570.124.6")}}}


def _error(expression: str, minor: int, gate: bool | None = None) -> CelError | None:
    try:
        SelectorEngine(TargetVersion(minor), gate).check(expression)
    except CelError as exc:
        return exc
    return None


@needs_engine
@pytest.mark.parametrize(("expression", "minor", "gate", "message", "hint"), [
    ("device.allowMultipleAllocations", 32, None, "1:7: undefined field "
     "'allowMultipleAllocations'", "new in Kubernetes 1.34, with feature gate"),
    ("device.allowMultipleAllocations", 35, None, "1:7: undefined field", "off by default"),
    ("device.allowMultipleAllocations", 35, True, None, None),
    ("device.allowMultipleAllocations", 36, None, None, None),
    ("device.allowMultipleAllocations", 37, False, "1:7: undefined field", "off by default"),
    ('semver("550", true).major() == 550', 33, None,
     "1:7: found no matching overload for 'semver' applied to '(string, bool)'",
     "semver(s, true) is new in Kubernetes 1.34"),
    ('semver("550", true).major() == 550', 34, None, None, None),
    ("[1].first().hasValue()", 32, None, "1:10: undeclared reference to 'first'",
     "first() is new in Kubernetes 1.33"),
    ("[1].first().hasValue()", 33, None, None, None),
    ("[2, 1].sort() == [1, 2]", 34, None, "1:12: undeclared reference to 'sort'",
     "sort() is new in Kubernetes 1.35"),
    ("[2, 1].sort() == [1, 2]", 35, None, None, None),
    ("[1, 2].exists(i, v, v == 2)", 32, None, "1:14: undeclared reference to 'exists'",
     "with three arguments is new in Kubernetes 1.33"),
    ('"abc".reverse() == "cba"', 37, None,
     "1:14: found no matching overload for 'reverse' applied to 'string.()'", None),
    ('"abc".quote() == "abc"', 37, None, "1:12: undeclared reference to 'quote'", None),
    (f'strings.quote({NV}.productName) != "" && [1, 2].sum() == 3', 32, None, None, None),
    (f'{NV}.productName.find("H[0-9]+") == "H100" && sets.contains([1], [1])', 32, None, None,
     None),
    ('url("https://x").getHost() == "x" && cidr("10.0.0.0/8").containsIP("10.1.2.3")', 32,
     None, None, None),
    ('[1, "a"].size() == 2', 37, None, "1:5: expected type 'int' but found 'string'", None),
    ('{"a": 1, "b": "c"}.size() == 2', 32, None, "1:15: expected type 'int' but found 'string'",
     None),
    (f'[{NV}.productName, "a"].size() == 2', 37, None,
     "1:51: expected type 'any' but found 'string'", None),
    ('"%s-%d".format(["a", 1]) == "a-1"', 37, None, None, None),  # format is exempt
    ('["a", "b"].max() == "b"', 37, None, "1:1: too complex, exceeds cost limit", None),
    ('"a,b".split(",").join("-") == "a-b"', 32, None, "1:1: too complex", None),
    (f'{NV}.productName.join() == ""', 37, None, None, None),  # untyped: no estimate
    ("[1, 2, 3].slice(2, 1) == [2]", 37, None, "1:1: too complex", None),
    ("[1, 2].max() == 2", 37, None, None, None),
    (f"{NV}.driverVersion.isGreaterThan(1)", 37, None,
     "1:64: found no matching overload for 'isGreaterThan' applied to 'any.(int)'", None),
])
def test_each_release_compiles_what_kubernetes_does(expression: str, minor: int,
                                                    gate: bool | None, message: str | None,
                                                    hint: str | None) -> None:
    error = _error(expression, minor, gate)
    if message is None:
        assert error is None, str(error)
    else:
        assert error is not None and str(error).startswith(message), str(error)
        assert hint is None or hint in (error.hint or ""), error.hint


@needs_engine
def test_what_the_engine_cannot_check_is_neither_valid_nor_invalid() -> None:
    engine = SelectorEngine(TargetVersion(33))
    with pytest.raises(CannotEvaluate, match="two-variable comprehension"):
        engine.check("[1, 2].exists(i, v, v == 2)")
    compile_selector("[1, 2].exists(i, v, v == 2)", TargetVersion(33))  # accepted: K8s does
    with pytest.raises(CannotEvaluate, match=r"url\(\)"):
        engine.compile('url("https://x").getHost() == "x"')  # compiles, cannot be evaluated
    matcher = Matcher([Device("gpu.nvidia.com", "node", "gpu-0", "node")], engine)
    assert matcher.result('url("https://x").getHost() == "x"', 0) is MatchResult.UNKNOWN
    failure = matcher.select("gpu.nvidia.com", ['url("https://x").getHost() == "x"'],
                             []).compile_errors[0]
    assert failure.compile_text.startswith("cannot be evaluated by gpudra: ")


@needs_engine
@pytest.mark.parametrize(("expression", "expected"), [
    (f'{NV}.driverVersion == "570.124.6"', "no such overload"),
    (f"{NV}.driverVersion == 570", "no such overload"),
    (f'{NV}.driverVersion != "570.124.6"', True),
    (f'"570.124.6" == {NV}.driverVersion', False),
    (f"{NV}.driverVersion == null", False),
    (f'{NV}.driverVersion == semver("570.124.6")', True),
    (f'semver("1.0.0") == {NV}.productName', "no such overload"),
    (f'{NV}.driverVersion in ["570.124.6"]',
     "internal error: runtime error: hash of unhashable type cel.Semver"),
    (f'{NV}.driverVersion in [semver("570.124.6")]', True),
    (f"{NV}.nosuch in []", False),  # cel-go folds it: the attribute is not even read
    (f'{NV}.type in ["gpu", "mig"] && {NV}.type == "gpu"', True),
    (f'false && {NV}.driverVersion == "1"', False),
    (f"{NV}.driverVersion.major() == 570 && {NV}.type.major() == 1",
     "no such overload: major(string)"),
])
def test_run_time_semantics_as_kubernetes(expression: str, expected: object) -> None:
    engine = SelectorEngine()
    if isinstance(expected, bool):
        assert engine.evaluate(expression, DEVICE) is expected
    else:
        with pytest.raises(CelEvaluationError) as info:
            engine.evaluate(expression, DEVICE)
        assert str(info.value) == expected


@needs_engine
def test_list_functions_of_durations_are_an_error_not_a_crash() -> None:
    # Kubernetes answers true; the engine cannot take a duration back from Python
    with pytest.raises(CelEvaluationError, match="cannot evaluate max"):
        SelectorEngine().evaluate('[duration("1s")].max() == duration("1s")', DEVICE)


@pytest.mark.parametrize(("expression", "rewritten"), [
    ('a.b == "x"', 'a.b == "x"'),  # no attribute: the engine's equality
    (f'{NV}.v == "x"', f'_gpudra_equals({NV}.v , "x")'),
    (f'"x" == {NV}["v"] && ok', f'_gpudra_equals("x" , {NV}["v"]) && ok'),
    (f'({NV}.v == "a" + "b") || x', f'(_gpudra_equals({NV}.v , "a" + "b")) || x'),
    (f'{NV}.v == "a" == true', f'{NV}.v == "a" == true'),  # chained: left alone
    (f'{NV}.v.major() == 1', f'{NV}.v.major() == 1'),
    (f'{NV}.v in ["a", 1]', f'_gpudra_in_constants({NV}.v , ["a", 1])'),
    (f'{NV}.v in [x]', f'{NV}.v in [x]'),  # not constants: no hash lookup in cel-go
    (f"f({NV}.v in [])", "f(false)"),
])
def test_equality_rewrite(expression: str, rewritten: str) -> None:
    assert kubernetes_equality(expression, cel_lint.tokenize(expression)[0]) == rewritten


@pytest.mark.parametrize(("text", "normalize", "message"), [
    ("", False, "Version string empty"),
    ("550.54", False, "No Major.Minor.Patch elements found"),
    ("v1.2.3", False, 'Invalid character(s) found in major number "v1"'),
    ("1.02.3", False, 'Minor number must not contain leading zeroes "02"'),
    ("1.2.3-01", False, 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.2.3-a..b", False, "Prerelease is empty"),
    ("1.2.3+", False, "Build meta data is empty"),
    ("1.2.3+a+b", False, 'Invalid character(s) found in build meta data "a+b"'),
    ("1.2.-3", False, 'strconv.ParseUint: parsing "": invalid syntax'),
    ("99999999999999999999.0.0", False,
     'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
    ('1.2.3-x"y', False, 'Invalid character(s) found in prerelease "x\\"y"'),
    ("1.2-rc", True, "short version cannot contain PreRelease/Build meta data"),
    ("x", True, 'Invalid character(s) found in major number "x"'),
])
def test_semver_errors_in_blang_semver_words(text: str, normalize: bool, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Version.parse(text, normalize)
    assert str(info.value) == message


def test_runtime_messages_in_cel_go_words() -> None:
    assert runtime_message("UNKNOWN: No matching overloads found : (int64).major()") == \
        "no such overload: major(int)"
    assert runtime_message("UNKNOWN: No matching overloads found : (map).replace(string, "
                           "string)") == \
        "no such overload: replace(kubernetes.Semver, string, string)"
    assert runtime_message("UNKNOWN: No matching overloads found : _>=_(map, string)") == \
        "no such overload: _>=_"
    assert runtime_message("UNKNOWN: No matching overloads found : _>=_(int64, string)") == \
        "no such overload"
    assert runtime_message("UNKNOWN: No matching overloads found : (bool).flatten()") == \
        "no such overload: bool.flatten()"
