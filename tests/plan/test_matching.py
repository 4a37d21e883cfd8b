"""Selector evaluation: caching that must not change results, failures, explanations, hints."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from gpudra.dra.cel import engine_available, runtime_message
from gpudra.plan.demand import CHART_CLASSES
from gpudra.plan.inventory import Device, parse_inventory
from gpudra.plan.matching import Matcher, MatchResult
from gpudra.plan.selector_text import format_quantity, projection, split_conjunction, term_label
from gpudra.plan.synthesis import synthesize

FIXTURES = Path(__file__).parent / "fixtures"
NV = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'
GPU = CHART_CLASSES["gpu.nvidia.com"]
needs_engine = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


def devices() -> tuple[Device, ...]:
    slices = list(yaml.safe_load_all((FIXTURES / "reference-devices.yaml").read_text()))
    return parse_inventory(slices).devices


@pytest.mark.parametrize("expression, references", [
    (f'{NV}.productName == "x"', (("attribute", "gpu.nvidia.com", "productName"),)),
    (f'{CAP}.memory.compareTo(quantity("1Gi")) >= 0 && {NV}["type"] == "gpu"',
     (("capacity", "gpu.nvidia.com", "memory"), ("attribute", "gpu.nvidia.com", "type"))),
    (f'has({NV}.profile) && device.driver == "gpu.nvidia.com"',
     (("attribute", "gpu.nvidia.com", "profile"),)),
    # the device (or a whole domain map) used any other way: evaluated per device
    (f'"productName" in {NV}', None),
    (f'size({NV}) > 3', None),
    (f'cel.bind(a, {NV}, a.productName == "x")', None),
    ('device.attributes.exists(d, d == "x")', None),
    ("device.nosuch == 1", None),
])
def test_projection(expression: str, references) -> None:
    assert projection(expression)[0] == references


EXPRESSIONS = [
    f'{NV}.productName.startsWith("NVIDIA")',
    f'"profile" in {NV} && {NV}.profile == "1g.10gb"',
    f'size({NV}) > 9',
    f'{CAP}.memory.compareTo(quantity("40Gi")) >= 0',
    f'{NV}.profile == "2g.20gb"',
    'device.allowMultipleAllocations || device.driver != "gpu.nvidia.com"',
    f'cel.bind(d, {NV}, d.architecture == "Hopper")',
]


@needs_engine
def test_memo_and_groups_give_the_same_results_as_plain_evaluation() -> None:
    devs = devices() * 20  # many identical devices: a few groups
    plain, memo = Matcher(devs, memoise=False), Matcher(devs)
    memo.precompile(EXPRESSIONS)
    for expression in EXPRESSIONS:
        assert memo.select("all", (), [expression]) == plain.select("all", (), [expression])
    assert plain.stats.evaluations == plain.stats.results == len(devs) * len(EXPRESSIONS)
    assert memo.stats.results == plain.stats.results
    # 3 expressions read the device in ways the memo cannot key: once per device; the other
    # 4 once per distinct device (6 kinds, each repeated 20 times).
    opaque = sum(1 for e in EXPRESSIONS if projection(e)[0] is None)
    assert opaque == 3
    assert memo.stats.evaluations <= opaque * len(devs) + (len(EXPRESSIONS) - opaque) * 6


def test_groups_are_the_classes_of_the_memo_key() -> None:
    """Devices are grouped by values read a domain at a time; the groups are exactly the
    classes of equal memo keys (_key): True is not 1, a list attribute that looks like the
    "missing" marker is not missing, a domain the device lacks reads as missing."""
    from gpudra.plan.matching import Compiled, _key, _signatures

    def device(name: str, **attributes: object) -> Device:
        return Device("gpu.nvidia.com", "p", name, "n", attributes)

    odd = [device("a", flag=True), device("b", flag=1), device("c", flag=("missing",)),
           device("d"), device("e", **{"other.example.com/flag": True}), device("f", flag=True)]
    for devs in (list(devices()) + odd, odd):
        refs = (("attribute", "gpu.nvidia.com", "flag"),
                ("attribute", "gpu.nvidia.com", "productName"),
                ("attribute", "other.example.com", "flag"),
                ("capacity", "gpu.nvidia.com", "memory"))
        probe = Compiled("", None, None, refs, True, False)
        by_key: dict[tuple, list[int]] = {}
        by_signature: dict[tuple, list[int]] = {}
        for index, (d, signature) in enumerate(zip(devs, _signatures(devs, refs, True, False))):
            by_key.setdefault((_key(d, probe), d.predicted, d.unknown), []).append(index)
            by_signature.setdefault(signature, []).append(index)
        assert list(by_signature.values()) == list(by_key.values())
    assert [len(g) for g in by_key.values()] == [2, 1, 1, 1, 1]  # a and f only


@needs_engine
def test_class_selectors_protect_request_selectors() -> None:
    m = Matcher(devices())
    on_gpus = m.select("gpu.nvidia.com", GPU, [f'{NV}.profile == "1g.10gb"'])
    assert on_gpus.matching == () and on_gpus.class_matching == 4
    (failure,) = on_gpus.runtime_errors
    assert (failure.message, failure.devices, failure.device) == ("no such key: profile", 4,
                                                                  "node1/a100")
    on_migs = m.select("mig.nvidia.com", CHART_CLASSES["mig.nvidia.com"],
                       [f'{NV}.profile == "1g.10gb"'])
    assert [m.devices[i].name for i in on_migs.matching] == ["mig-1g"]
    assert not on_migs.runtime_errors  # full GPUs never reach the request selector


@needs_engine
def test_compile_errors_fail_the_whole_set() -> None:
    result = Matcher(devices()).select("gpu.nvidia.com", GPU, ["device.nosuch == 1"])
    assert result.matching == () and not result.usable
    assert result.compile_errors[0].message == "1:7: undefined field 'nosuch'"
    assert result.compile_errors[0].source == "request selector #0"


@needs_engine
def test_explain_counts_each_term_and_reports_extremes() -> None:
    m = Matcher(devices())
    stats = m.explain("gpu.nvidia.com", GPU, [
        f'{CAP}.memory.compareTo(quantity("90Gi")) >= 0 && {NV}.architecture == "Ampere"',
        f'{NV}.driverVersion.isLessThan(semver("500.0.0"))'])
    assert [s.message() for s in stats] == [
        "class gpu.nvidia.com: 4 of 6 devices match",
        "memory >= 90Gi: 0 of 4 devices match; the largest has 80Gi",
        ('architecture == "Ampere": 1 of 4 devices match; values present: Ampere (1), '
         "Hopper (1), Turing (1), Ada Lovelace (1)"),
        "driverVersion < 500.0.0: 0 of 4 devices match; the smallest has 535.104.5",
    ]


@needs_engine
def test_explain_says_when_terms_only_fail_together() -> None:
    stats = Matcher(devices()).explain("gpu.nvidia.com", GPU, [
        f'{NV}.architecture == "Turing" && {CAP}.memory.compareTo(quantity("40Gi")) >= 0'])
    assert stats[-1].message() == ("all terms together: 0 of 4 devices match; no device "
                                   "satisfies them at once")


@needs_engine
@pytest.mark.parametrize("class_name, expression, fragment", [
    ("mig.nvidia.com", f'{NV}.profle == "1g.10gb"', "did you mean 'profile'?"),
    ("gpu.nvidia.com", f'{CAP}.memroy.compareTo(quantity("1Gi")) > 0', "did you mean 'memory'?"),
    ("gpu.nvidia.com", f'{NV}.numa == 0', 'device.attributes["resource.kubernetes.io"].numaNode'),
    ("gpu.nvidia.com", f'{NV}.profile == "1g.10gb"',
     "published only for mig devices, not for the gpu devices this class selects"),
    ("gpu.nvidia.com", 'device.attributes["example.com"].zzz == "x"',
     "none of the 4 devices of class gpu.nvidia.com publishes 'zzz'"),
])
def test_hints(class_name: str, expression: str, fragment: str) -> None:
    hints = Matcher(devices()).hints(expression, class_name, CHART_CLASSES[class_name])
    assert any(fragment in h for h in hints), hints


@needs_engine
def test_predicted_devices_are_unknown_not_failing() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {
        "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "1"}}}
    m = Matcher(synthesize([node]).devices)
    assert m.result(f'{NV}.uuid == "GPU-1"', 0) is MatchResult.UNKNOWN
    assert m.result(f'"uuid" in {NV}', 0) is False  # no runtime error: a real value
    assert m.result(f'{NV}.productName == "NVIDIA L4"', 0) is True
    result = m.select("gpu.nvidia.com", GPU, [f'{NV}.brand == "Nvidia"'])
    assert result.unknown == (0,) and not result.runtime_errors


@pytest.mark.parametrize("expression, terms", [
    ("a && b", ["a", "b"]),
    ("(a && b)", ["a", "b"]),
    ("a && (b || c)", ["a", "(b || c)"]),
    ("a || b && c", ["a || b && c"]),
    ("a ? b : c && d", ["a ? b : c && d"]),
    ("x == 'p && q' && f(a && b)", ["x == 'p && q'", "f(a && b)"]),
    ("(a) && (b)", ["(a)", "(b)"]),
])
def test_split_conjunction(expression: str, terms: list[str]) -> None:
    assert split_conjunction(expression) == terms


@pytest.mark.parametrize("term, label", [
    (f'{CAP}.memory.compareTo(quantity("90Gi")) >= 0', "memory >= 90Gi"),
    (f"{CAP}.memory.isGreaterThan(quantity('10Gi'))", "memory > 10Gi"),
    (f'{NV}["driverVersion"].compareTo(semver("550.0.0")) < 0', "driverVersion < 550.0.0"),
    (f'{NV}.profile == "1g.10gb"', 'profile == "1g.10gb"'),
    (f'{NV}.productName.startsWith("NVIDIA")', f'{NV}.productName.startsWith("NVIDIA")'),
])
def test_term_labels(term: str, label: str) -> None:
    assert term_label(term) == label


@pytest.mark.parametrize("value, text", [
    (Fraction(80 * 2**30), "80Gi"), (Fraction(81559 * 2**20), "81559Mi"), (Fraction(1500), "1500"),
    (Fraction(1, 2), "0.5"), (Fraction(0), "0")])
def test_format_quantity(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text


def test_runtime_message() -> None:
    """cel-cpp's run-time errors in the allocator's (cel-go's) words (the Go oracle's)."""
    engine = 'NOT_FOUND: Key not found in map : "profile"'
    assert runtime_message(engine) == "no such key: profile"
    assert runtime_message("OUT_OF_RANGE: cannot convert value to integer") == \
        "cannot convert value to integer"
    assert runtime_message("UNKNOWN: No matching overloads found : _>_(string, int64)") == \
        "no such overload"
    assert runtime_message("something else") == "something else"
