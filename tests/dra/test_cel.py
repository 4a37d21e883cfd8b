"""The CEL adapter for DRA selectors (gpudra.dra.cel): compile errors, evaluation, fallback."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from gpudra.dra import cel as cel_mod
from gpudra.dra.cel import (
    CelError,
    CelEvaluationError,
    SelectorEngine,
    UnsupportedError,
    Version,
    compile_selector,
    engine_available,
)
from gpudra.errors import UsageError

MIB = 2**20
NV = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'

needs_engine = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


def full_gpu(product: str, arch: str, cc: str, mem_mib: int, driver: str = "550.54.15",
             cuda: str = "12.4.0") -> dict[str, Any]:
    """A full-GPU device as the NVIDIA DRA driver v0.4.1 publishes it (deviceinfo.go)."""
    return {
        "driver": "gpu.nvidia.com",
        "attributes": {
            "gpu.nvidia.com": {
                "type": "gpu", "uuid": "GPU-0f1e2d3c", "productName": product, "brand": "Nvidia",
                "architecture": arch, "cudaComputeCapability": Version.parse(cc),
                "driverVersion": Version.parse(driver), "cudaDriverVersion": Version.parse(cuda),
            },
            "resource.kubernetes.io": {"pciBusID": "0000:3b:00.0"},
        },
        "capacity": {"gpu.nvidia.com": {"memory": f"{mem_mib}Mi"}},
    }


def mig_device(profile: str, mem_mib: int, sms: int) -> dict[str, Any]:
    """A MIG device on an H100 (mig.go: parent attributes + profile; memory = MemorySizeMB MiB)."""
    dev = full_gpu("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 0, driver="535.104.5",
                   cuda="12.2.0")
    attrs = dev["attributes"]["gpu.nvidia.com"]
    attrs.update(type="mig", uuid="MIG-1a2b", parentUUID="GPU-0f1e2d3c", profile=profile)
    dev["capacity"] = {"gpu.nvidia.com": {
        "memory": str(mem_mib * MIB), "multiprocessors": str(sms), "copyEngines": "1",
        "decoders": "1", "encoders": "0", "jpegEngines": "1", "ofaEngines": "0",
        "memorySlice0": "1"}}
    return dev


A100 = full_gpu("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 81920)
H100 = full_gpu("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559, driver="535.104.5",
                cuda="12.2.0")
T4 = full_gpu("Tesla T4", "Turing", "7.5.0", 15360, driver="550.54.15")
MIG_1G = mig_device("1g.10gb", 9856, 16)
MIG_2G = mig_device("2g.20gb", 19968, 32)


# --- the five verified NVIDIA selectors (dra-reference §3) -------------------------------

VERIFIED = [
    (f'{NV}.productName == "NVIDIA A100-SXM4-80GB"', {"A100": True, "H100": False, "T4": False,
                                                       "MIG_1G": False}),
    (f'{NV}.productName.startsWith("NVIDIA H100")', {"A100": False, "H100": True, "T4": False,
                                                     "MIG_1G": True}),
    (f'{CAP}.memory.compareTo(quantity("40Gi")) >= 0', {"A100": True, "H100": True, "T4": False,
                                                        "MIG_1G": False}),
    (f'{NV}.driverVersion.compareTo(semver("550.0.0")) >= 0', {"A100": True, "H100": False,
                                                               "T4": True, "MIG_1G": False}),
    (f"{NV}.driverVersion.major() >= 550", {"A100": True, "H100": False, "T4": True,
                                            "MIG_1G": False}),
    (f'{NV}.cudaComputeCapability.compareTo(semver("8.0.0")) >= 0',
     {"A100": True, "H100": True, "T4": False, "MIG_1G": True}),
    (f'{NV}.profile == "1g.10gb"', {"MIG_1G": True, "MIG_2G": False}),
    (("device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\")) && "
     "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity(\"10Gi\"))"),
     {"MIG_1G": False, "MIG_2G": True}),
    (f'{NV}.productName.replace(" ", "-") == "NVIDIA-H100-80GB-HBM3"',
     {"A100": False, "H100": True}),
    (f'{NV}.architecture == "Hopper"', {"A100": False, "H100": True, "MIG_1G": True}),
    (f'{NV}.productName in ["Tesla T4", "NVIDIA A100-SXM4-80GB"]',
     {"A100": True, "H100": False, "T4": True}),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
     {"A100": True, "MIG_1G": False}),
]
DEVICES = {"A100": A100, "H100": H100, "T4": T4, "MIG_1G": MIG_1G, "MIG_2G": MIG_2G}


@needs_engine
@pytest.mark.parametrize(("expr", "expected"), VERIFIED, ids=[v[0][:60] for v in VERIFIED])
def test_verified_selectors(expr: str, expected: dict[str, bool]) -> None:
    compile_selector(expr)
    selector = SelectorEngine().compile(expr)
    for name, want in expected.items():
        assert selector.evaluate(DEVICES[name]) is want, name


@needs_engine
def test_profile_on_a_full_gpu_is_an_evaluation_error() -> None:
    # Why the MIG class must select type == "mig" first: full GPUs have no `profile`.
    with pytest.raises(CelEvaluationError, match="profile"):
        SelectorEngine().evaluate(f'{NV}.profile == "1g.10gb"', A100)


# --- evaluation errors are not false --------------------------------------------------------

@needs_engine
def test_missing_attribute_compiles_but_fails_at_evaluation() -> None:
    expr = f"{NV}.memory >= 16000"
    compile_selector(expr)  # attributes are dynamically typed: no compile error
    with pytest.raises(CelEvaluationError, match="memory"):
        SelectorEngine().evaluate(expr, A100)


@needs_engine
@pytest.mark.parametrize(("expr", "expected"), [
    (f"{NV}.memory >= 16000 || true", True),           # CEL absorbs the error
    (f"has({NV}.memory)", False),
    (f'"memory" in {NV} && {NV}.memory >= 16000', False),
    ('has(device.attributes["example.com"].x)', False),  # unknown domain = empty map
    (f"has({CAP}.memory)", True),
])
def test_guards(expr: str, expected: bool) -> None:
    assert SelectorEngine().evaluate(expr, A100) is expected


@needs_engine
@pytest.mark.parametrize(("expr", "match"), [
    ('sign(quantity("12 parsecs")) == 1', "quantities must match"),
    ('semver("550.54").major() == 550', "^No Major.Minor.Patch elements found$"),
    ('semver("01.2.3").major() == 1', '^Major number must not contain leading zeroes "01"$'),
    ('quantity("1.5").asInteger() == 1', "integer"),
    (f"{NV}.productName", "CEL result of type string could not be converted to bool"),
])
def test_runtime_errors(expr: str, match: str) -> None:
    with pytest.raises(CelEvaluationError, match=match):
        SelectorEngine().evaluate(expr, A100)


# --- compile errors -----------------------------------------------------------------------

@needs_engine
def test_quantity_ordering_fails_to_compile_as_in_kubernetes() -> None:
    with pytest.raises(CelError) as info:
        compile_selector('quantity("1Gi") >= quantity("1Mi")')
    err = info.value
    assert (err.line, err.column) == (1, 17)
    assert "no matching overload for '_>=_'" in err.message
    assert "kubernetes.Quantity" in err.message
    assert isinstance(err, UsageError)


@pytest.mark.parametrize(("expr", "column"), [
    (f"{CAP}.memory >= 16", 42),                             # capacity is a Quantity
    (f'{CAP}.memory < quantity("1Gi")', 42),
    (f'{CAP}["memory"].add(1) > quantity("1Gi")', 52),
    ('semver("1.0.0") > semver("0.1.0")', 17),
])
def test_ordering_on_quantity_or_version_fails_to_compile(expr: str, column: int) -> None:
    with pytest.raises(CelError) as info:
        compile_selector(expr)
    assert (info.value.line, info.value.column) == (1, column)


@pytest.mark.parametrize(("expr", "line", "column"), [
    # missing ')' at end of line 2 (74 characters): reported just past it
    (('device.driver == "gpu.nvidia.com" &&\n'
     '  device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100"'), 2, 75),
    ('device.driver == "gpu.nvidia.com" &&\n  device.attributes["gpu.nvidia.com"].productName = "x"',
     2, 51),
    ('device.driver == "gpu.nvidia.com" &&\n  device.driver == "unterminated', 2, 20),
])
def test_syntax_error_on_line_two(expr: str, line: int, column: int) -> None:
    with pytest.raises(CelError) as info:
        compile_selector(expr)
    assert (info.value.line, info.value.column) == (line, column)
    assert "Syntax error" in info.value.message or "unterminated" in info.value.message.lower()


@needs_engine
@pytest.mark.parametrize(("expr", "match"), [
    ("nosuchfn()", "undeclared reference to 'nosuchfn'"),
    ('device.driver.nosuchfn() == "x"', "undeclared reference to 'nosuchfn'"),
    ("devce.driver == 'x'", "undeclared reference to 'devce.driver'"),
    ('quantity("1").major() == 1', "no matching overload for 'major'"),
    ('semver("1.0.0").compareTo(quantity("1")) == 0', "no matching overload for 'compareTo'"),
    ('quantity("1") == {"__quantity__": "1/1"}', "no matching overload for '_==_'"),
    ("1 + 1", "must evaluate to bool"),
    ('device.attributes["gpu.nvidia.com"].productName + 1 == "x"', "no matching overload"),
])
def test_compile_errors(expr: str, match: str) -> None:
    with pytest.raises(CelError, match=match):
        compile_selector(expr)


@needs_engine
@pytest.mark.parametrize("expr, type_name", [
    # Kubernetes types the device's fields (kubernetes.DRADevice): a selector that is a capacity,
    # the driver or a map is refused. Wording from k8s.io/dynamic-resource-allocation v0.37.2
    # and v0.32.13 (the Go oracle, tests/oracle); gpudra accepted all of these before.
    (f"{CAP}.memory", "kubernetes.Quantity"),
    ("device.driver", "string"),
    ("device.capacity", "map(string, map(string, kubernetes.Quantity))"),
    ('device.attributes["gpu.nvidia.com"]', "map(string, google.protobuf.Any)"),
    ("[device.driver]", "list(string)"),
    ("null", "null_type"),
    ('duration("1s")', "google.protobuf.Duration"),
    ("int", "type(int)"),
    ("1u", "uint"),
])
def test_result_type_is_kubernetes_typed(expr: str, type_name: str) -> None:
    with pytest.raises(CelError) as info:
        compile_selector(expr)
    assert info.value.message == f"must evaluate to bool or the unknown type, not {type_name}"


@needs_engine
def test_typed_device_fields_keep_positions() -> None:
    with pytest.raises(CelError) as info:
        compile_selector("device.driver == 1")
    assert str(info.value) == "1:15: found no matching overload for '_==_' applied to '(string, int)'"
    compile_selector(f"device.allowMultipleAllocations && {CAP}.memory.isGreaterThan(quantity('1'))")


@needs_engine
@pytest.mark.parametrize("expr, expected", [
    # Found by the Go oracle (tests/oracle): Kubernetes has these, gpudra refused them.
    (f"{NV}.?numaNode.orValue(0) == 0", True),  # optional chaining, which Kubernetes' own
    (f"{NV}.?productName.orValue('') == 'NVIDIA A100-SXM4-80GB'", True),  # hint recommends
    ("optional.of(1).hasValue()", True),
    (f'{NV}.exists(name, name == "uuid")', True),  # a comprehension over an attribute map
    (f'{CAP}.all(name, name == "memory")', True),
    ('sign(quantity("-1Gi")) == -1', True),  # a function in Kubernetes, not a member
])
def test_kubernetes_cel_features(expr: str, expected: bool) -> None:
    assert SelectorEngine().evaluate(expr, A100) is expected


@needs_engine
def test_sign_is_not_a_member_function() -> None:
    # cel-go says "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'"
    with pytest.raises(CelError, match="undeclared reference to 'sign'"):
        compile_selector('quantity("1").sign() == 1')


def test_undefined_device_field() -> None:
    with pytest.raises(CelError, match="undefined field 'nosuch'") as info:
        compile_selector("device.nosuch == 1")
    assert (info.value.line, info.value.column) == (1, 7)  # at the `.`, as cel-go reports it


def test_too_long() -> None:
    with pytest.raises(CelError, match="too long"):
        compile_selector("true && " * 1300 + "true")


@needs_engine
@pytest.mark.parametrize("expr", [
    'cel.bind(nv, device.attributes["gpu.nvidia.com"], nv.productName.lowerAscii().contains("a100"))',
    f'{NV}.productName.upperAscii().split(" ").size() == 2',
    f'{NV}.productName.substring(0, 6) == "NVIDIA" && {NV}.uuid.indexOf("-") == 3',
    f'{NV}.productName.matches("^NVIDIA A100") && {NV}.productName.endsWith("80GB")',
    f'"  x ".trim() == "x" && {NV}.architecture.replace("e", "E") == "AmpErE"',
    'isQuantity("40Gi") && !isQuantity("forty") && isSemver("1.2.3") && !isSemver("v1.2")',
    'isSemver("v1.2", true) && semver("v1.2", true).compareTo(semver("1.2.0")) == 0',
])
def test_library_functions(expr: str) -> None:
    compile_selector(expr)
    assert SelectorEngine().evaluate(expr, A100) is True


# --- exact quantities and semver ------------------------------------------------------------

@needs_engine
@pytest.mark.parametrize(("expr", "expected"), [
    ('quantity("0.1").add(quantity("0.2")).compareTo(quantity("0.3")) == 0', True),
    ('quantity("1Gi") == quantity("1024Mi")', True),
    ('quantity("1G").compareTo(quantity("1Gi")) < 0', True),
    ('quantity("1Gi").isGreaterThan(quantity("1073741823"))', True),
    ('quantity("1Gi").sub(1).isLessThan(quantity("1Gi"))', True),
    ('quantity("500m").isInteger()', False),
    ('quantity("1k").asInteger() == 1000', True),
    ('sign(quantity("-2")) == -1 && sign(quantity("0")) == 0', True),
    ('quantity("1.5").asApproximateFloat() == 1.5', True),
    ('quantity("9223372036854775808").isInteger()', False),  # beyond int64
    (f'{CAP}.memory.compareTo(quantity("80Gi")) == 0', True),
    (f'{CAP}.memory.compareTo(quantity("85899345921")) < 0', True),
    ('semver("1.10.0").isGreaterThan(semver("1.9.0"))', True),   # numeric, not lexical
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
    ('semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta"))', True),
    ('semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))', True),
    ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0+build.1") == semver("1.0.0")', True),
    (f'{NV}.cudaComputeCapability.minor() == 0 && {NV}.cudaComputeCapability.patch() == 0', True),
    (f'{NV}.driverVersion == semver("550.54.15")', True),
])
def test_exact_semantics(expr: str, expected: bool) -> None:
    assert SelectorEngine().evaluate(expr, A100) is expected


def test_version_parse() -> None:
    assert Version.parse("8.0.0") == Version(8, 0, 0)
    assert Version.parse("v550.54", normalize=True) == Version(550, 54, 0)
    assert Version.parse("535.104.05", normalize=True) == Version(535, 104, 5)
    assert str(Version.parse("1.2.3-rc.1+meta")) == "1.2.3-rc.1"
    for bad in ("8.0", "v1.2.3", "01.2.3", "1.2.3-01", "1.2.3-"):
        with pytest.raises(ValueError):
            Version.parse(bad)


@needs_engine
def test_capacity_values_may_be_strings_ints_or_fractions() -> None:
    selector = SelectorEngine().compile(f'{CAP}.memory.compareTo(quantity("1Ki")) == 0')
    for value in ("1Ki", "1024", 1024, Fraction(2048, 2)):
        device = {"driver": "x", "attributes": {}, "capacity": {"gpu.nvidia.com": {"memory": value}}}
        assert selector.evaluate(device) is True
    with pytest.raises(ValueError):
        selector.evaluate({"capacity": {"gpu.nvidia.com": {"memory": "lots"}}})


# --- without cel-expr-python (a platform without its wheel) ---------------------------------------------------

@pytest.fixture()
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudra.dra import cel_build

    monkeypatch.setattr(cel_mod, "cel_engine", None)
    monkeypatch.setattr(cel_build, "cel_engine", None)


@pytest.mark.usefixtures("no_engine")
@pytest.mark.parametrize(("expr", "line", "column"), [
    ('device.driver == "x" &&\n  device.attributes["gpu.nvidia.com"].productName.startsWith("A"',
     2, 65),
    ('device.driver == "x")', 1, 21),
    ("device.driver == 'x", 1, 18),
    ('device.driver = "x"', 1, 15),
    ('device.driver == "x" &&', 1, 24),
    ('device.driver "x"', 1, 15),
    ("", 1, 1),
    ('quantity("1Gi") >= quantity("1Mi")', 1, 17),
    (f"{CAP}.memory >= 16", 1, 42),
    ('semver("1.0.0") > semver("0.1.0")', 1, 17),
    ("device.nosuch == 1", 1, 7),
])
def test_fallback_catches_syntax_errors(expr: str, line: int, column: int) -> None:
    with pytest.raises(CelError) as info:
        compile_selector(expr)
    assert (info.value.line, info.value.column) == (line, column)


@pytest.mark.usefixtures("no_engine")
@pytest.mark.parametrize("expr", [v[0] for v in VERIFIED] + [
    f"{NV}.memory >= 16000",
    f'!({NV}.productName in ["a", "b"]) && -1 < 0 && (1 + 2) * 3 > 0',
    '[1, 2].exists(x, x > 1) && {"a": 1}["a"] == 1 && r"\\d" != ""',
    f"{NV}.driverVersion.major() in [550, 570]",
])
def test_fallback_accepts_valid_selectors(expr: str) -> None:
    compile_selector(expr)


@pytest.mark.usefixtures("no_engine")
def test_fallback_cannot_evaluate() -> None:
    engine = SelectorEngine()
    assert not engine.can_evaluate
    with pytest.raises(UnsupportedError, match="cel-expr-python"):
        engine.evaluate('device.driver == "x"', A100)
