"""Table tests for the CEL selector reader (gpudra.dra.cel_lint) and the NVIDIA catalogue."""

from __future__ import annotations

import pytest

from gpudra.dra import attributes
from gpudra.dra.attributes import DeviceType, attribute_problem, capacity_problem
from gpudra.dra.cel_lint import Kind, analyse, bad_comparisons, references, tokenize

NV = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'


# --- tokenizer ---------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "expected"), [
    ("a >= b", [(Kind.IDENT, "a"), (Kind.OP, ">="), (Kind.IDENT, "b")]),
    ("x<=1&&y!=2", [(Kind.IDENT, "x"), (Kind.OP, "<="), (Kind.NUMBER, "1"), (Kind.OP, "&&"),
                    (Kind.IDENT, "y"), (Kind.OP, "!="), (Kind.NUMBER, "2")]),
    ("1.5e3 0x1F 3u + .5", [(Kind.NUMBER, "1.5e3"), (Kind.NUMBER, "0x1F"), (Kind.NUMBER, "3u"),
                            (Kind.OP, "+"), (Kind.NUMBER, ".5")]),
    ("a.b(c)[0]", [(Kind.IDENT, "a"), (Kind.OP, "."), (Kind.IDENT, "b"), (Kind.OPEN, "("),
                   (Kind.IDENT, "c"), (Kind.CLOSE, ")"), (Kind.OPEN, "["), (Kind.NUMBER, "0"),
                   (Kind.CLOSE, "]")]),
    ("a // b >= c\n< d", [(Kind.IDENT, "a"), (Kind.OP, "<"), (Kind.IDENT, "d")]),
    ("`quoted-id` == 1", [(Kind.IDENT, "`quoted-id`"), (Kind.OP, "=="), (Kind.NUMBER, "1")]),
])
def test_tokenize_kinds(expr: str, expected: list[tuple[Kind, str]]) -> None:
    tokens, errors = tokenize(expr)
    assert [(t.kind, t.text) for t in tokens] == expected
    assert errors == []


@pytest.mark.parametrize(("expr", "value"), [
    ('"a\\"b"', 'a"b'),
    ("'it\\'s'", "it's"),
    ('r"a\\d"', "a\\d"),
    ("b'xy'", "xy"),
    ('"""a "quoted" >= b"""', 'a "quoted" >= b'),
    ("'''multi\nline'''", "multi\nline"),
    ('"// not a comment"', "// not a comment"),
])
def test_string_literals_are_single_tokens(expr: str, value: str) -> None:
    tokens, errors = tokenize(expr)
    assert len(tokens) == 1 and tokens[0].kind is Kind.STRING
    assert tokens[0].value == value
    assert errors == []


def test_prefix_letters_inside_an_identifier_are_not_a_string_prefix() -> None:
    tokens, _ = tokenize("abr'x'")
    assert [(t.kind, t.text) for t in tokens] == [(Kind.IDENT, "abr"), (Kind.STRING, "'x'")]


def test_unterminated_string_is_reported_not_raised() -> None:
    tokens, errors = tokenize('a == "oops')
    assert tokens[-1].kind is Kind.STRING
    assert errors and "unterminated" in errors[0]


def test_positions_are_one_based_per_line() -> None:
    tokens, _ = tokenize("a &&\n  b")
    assert [(t.text, t.line, t.column) for t in tokens] == [("a", 1, 1), ("&&", 1, 3),
                                                            ("b", 2, 3)]


# --- references --------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "expected"), [
    (f"{NV}.productName == 'x'", [("attribute", "gpu.nvidia.com", "productName", 1, 1)]),
    ("device.attributes['gpu.nvidia.com']['index'] == 0",
     [("attribute", "gpu.nvidia.com", "index", 1, 1)]),
    (f"x && {CAP}.memory.isGreaterThan(quantity('1Gi'))",
     [("capacity", "gpu.nvidia.com", "memory", 1, 6)]),
    ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"',
     [("attribute", "resource.kubernetes.io", "pcieRoot", 1, 1)]),
    (f"a ||\n   {NV}.uuid == 'u'", [("attribute", "gpu.nvidia.com", "uuid", 2, 4)]),
    ("device.driver == 'gpu.nvidia.com'", []),
    ('device.attributes["gpu.nvidia.com"] == {}', []),  # no name: not a reference
    ('other.device.attributes["gpu.nvidia.com"].x', []),  # a field that happens to be called device
    (f"'{NV}.memory' == s", []),  # inside a string
    (f"// {NV}.memory\ntrue", []),  # inside a comment
])
def test_references(expr: str, expected: list[tuple]) -> None:
    got = [(r.kind, r.domain, r.name, r.line, r.column) for r in references(expr)]
    assert got == expected


def test_has_marks_the_reference_as_guarded() -> None:
    refs = references(f"has({NV}.index) && {NV}.index == 0")
    assert [r.guarded for r in refs] == [True, False]


# --- comparisons -------------------------------------------------------------------------

@pytest.mark.parametrize(("expr", "expected"), [
    (f"{CAP}.memory >= quantity('16Gi')", [(">=", "quantity", 42)]),
    (f"quantity('1Gi') < {CAP}.memory", [("<", "quantity", 17)]),
    (f"{NV}.driverVersion >= semver('550.0.0')", [(">=", "version", 51)]),
    (f"{NV}.cudaComputeCapability > 8", [(">", "version", 59)]),
    ("semver('1.0.0') <= x", [("<=", "version", 17)]),
    (f"({CAP}.memory) > quantity('1')", [(">", "quantity", 44)]),
    (f"{CAP}.memory.add(quantity('1Gi')) > quantity('2Gi')", [(">", "quantity", 63)]),
    ('device.capacity["other.example.com"].slots > quantity("1")', [(">", "quantity", 44)]),
    # Fine: a method call turns the value into an int or bool.
    (f"{CAP}.memory.compareTo(quantity('40Gi')) >= 0", []),
    ("x.compareTo(y) >= 0", []),
    (f"{NV}.driverVersion.major() >= 550", []),
    (f"{NV}.cudaComputeCapability.minor() < 9", []),
    (f"{CAP}.multiprocessors.asInteger() > 10", []),
    (f"{CAP}.memory.asApproximateFloat() < 1e9", []),
    ("quantity('1Gi').isGreaterThan(quantity('1Mi'))", []),
    # Fine: not a quantity or version as far as anyone can tell.
    (f"{NV}.numa >= 0", []),
    (f"{NV}.memory >= 16000", []),  # wrong (GPU605), but not a typed comparison
    ('device.attributes["other.example.com"].driverVersion >= 5', []),
    ("size(x) > 2 && a.b.c < 3", []),
    (f"'{CAP}.memory >= 1' == s", []),
    (f"// {CAP}.memory >= quantity('1')\ntrue", []),
    ("a >= ", []),
    (">= b", []),
    ("(unbalanced >= quantity('1')", [(">=", "quantity", 13)]),
])
def test_bad_comparisons(expr: str, expected: list[tuple]) -> None:
    got = [(c.operator, c.operand_type, c.column) for c in bad_comparisons(expr)]
    assert got == expected


def test_version_check_is_pluggable() -> None:
    expr = 'device.attributes["example.com"].fw >= semver("1.0.0")'
    assert bad_comparisons(expr, lambda domain, name: name == "fw")[0].operand == (
        'device.attributes["example.com"].fw')


def test_comparison_on_a_later_line() -> None:
    (c,) = bad_comparisons(f"true &&\n  {CAP}.memory\n    >= quantity('1')")
    assert (c.line, c.column, c.operand) == (3, 5, f"{CAP}.memory")


def test_analyse_never_raises_on_garbage() -> None:
    for expr in ("", ")))", "[[[", "device.", "device.attributes[", "'", "a ? b : c >= ",
                 "device.capacity['x'].y.z >= 1", "}{][)("):
        analyse(expr)


# --- catalogue ---------------------------------------------------------------------------

@pytest.mark.parametrize(("domain", "name", "device_type", "fragment"), [
    ("gpu.nvidia.com", "productName", None, None),
    ("gpu.nvidia.com", "type", DeviceType.VFIO, None),
    ("gpu.nvidia.com", "profile", DeviceType.MIG, None),
    ("gpu.nvidia.com", "memory", None, "memory is a capacity"),
    ("gpu.nvidia.com", "index", None, "removed from the NVIDIA DRA driver in v25.8.0"),
    ("gpu.nvidia.com", "minor", None, "v25.8.0"),
    ("gpu.nvidia.com", "parentIndex", None, "parentUUID"),
    ("gpu.nvidia.com", "pcieBusID", None, 'device.attributes["resource.kubernetes.io"].pciBusID'),
    ("gpu.nvidia.com", "pciBusID", None, "published under resource.kubernetes.io"),
    ("gpu.nvidia.com", "gpuMemory", None, "publishes no attribute 'gpuMemory'"),
    ("gpu.nvidia.com", "profile", DeviceType.GPU, "published only for mig devices"),
    ("gpu.nvidia.com", "numa", DeviceType.VFIO, "removed from the NVIDIA DRA driver in v0.5.0"),
    ("gpu.nvidia.com", "numa", None, 'device.attributes["resource.kubernetes.io"].numaNode'),
    ("resource.kubernetes.io", "numaNode", DeviceType.MIG, None),
    ("gpu.nvidia.com", "gpuModuleID", DeviceType.MIG, "only for gpu/vfio devices"),
    ("gpu.nvidia.com", "partition4", DeviceType.GPU, None),
    ("resource.kubernetes.io", "pciBusID", None, None),
    ("resource.kubernetes.io", "pcieRoot", DeviceType.MIG, None),
    ("resource.kubernetes.io", "pcieBusID", None, "spelled pciBusID"),
    ("example.com", "index", None, None),
])
def test_attribute_problem(domain: str, name: str, device_type: DeviceType | None,
                           fragment: str | None) -> None:
    problem = attribute_problem(domain, name, device_type)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


@pytest.mark.parametrize(("name", "device_type", "fragment"), [
    ("memory", DeviceType.GPU, None),
    ("memory", DeviceType.MIG, None),
    ("multiprocessors", None, None),
    ("memorySlice7", DeviceType.MIG, None),
    ("addressableMemory", DeviceType.VFIO, None),
    ("addressableMemory", DeviceType.GPU, "only for vfio"),
    ("productName", None, "is an attribute, not a capacity"),
    ("vram", None, "publishes no capacity 'vram'"),
])
def test_capacity_problem(name: str, device_type: DeviceType | None, fragment: str | None) -> None:
    problem = capacity_problem("gpu.nvidia.com", name, device_type)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


def test_version_attributes() -> None:
    versions = {n for n in attributes.NVIDIA_ATTRIBUTES
                if attributes.is_version_attribute("gpu.nvidia.com", n)}
    assert versions == {"cudaComputeCapability", "driverVersion", "cudaDriverVersion"}
    assert not attributes.is_version_attribute("example.com", "driverVersion")


def test_classes_pin_device_types() -> None:
    assert attributes.CLASS_DEVICE_TYPE == {"gpu.nvidia.com": DeviceType.GPU,
                                            "mig.nvidia.com": DeviceType.MIG,
                                            "vfio.gpu.nvidia.com": DeviceType.VFIO}
