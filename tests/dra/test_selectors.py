"""GFD label selectors → CEL (gpudra.dra.selectors), checked against a GFD/node-affinity oracle.

Every translated expression is compiled and evaluated on fake devices built like the NVIDIA DRA
driver's; the oracle computes the labels GFD (k8s-device-plugin v0.20.0 internal/lm) would put on
the node of that device and applies Kubernetes node-selector semantics. The two must agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from gpudra.dra.cel import SelectorEngine, Version, compile_selector, engine_available
from gpudra.dra.selectors import (
    DRIVER_ARCHITECTURES,
    DRIVER_FAMILIES,
    TRANSLATED_LABELS,
    Translation,
    label_selector,
)

MIB = 2**20
needs_engine = pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")


@dataclass(frozen=True)
class Gpu:
    """A physical GPU and its node's driver, from which both views are derived."""

    name: str  # NVML name
    arch: str  # go-nvlib GetArchitectureAsString
    cc: tuple[int, int]
    memory_bytes: int  # NVML memory info Total
    driver: str = "550.54.15"  # NVML SystemGetDriverVersion
    cuda: int = 12040  # NVML SystemGetCudaDriverVersion

    def device(self) -> dict[str, Any]:
        """What the DRA driver publishes (deviceinfo.go / nvlib.go / partitions.go)."""
        return {
            "driver": "gpu.nvidia.com",
            "attributes": {"gpu.nvidia.com": {
                "type": "gpu", "productName": self.name, "architecture": self.arch,
                "cudaComputeCapability": Version.parse(f"{self.cc[0]}.{self.cc[1]}", normalize=True),
                "driverVersion": Version.parse(self.driver, normalize=True),
                "cudaDriverVersion": Version.parse(
                    f"{self.cuda // 1000}.{self.cuda % 1000 // 10}", normalize=True),
            }},
            "capacity": {"gpu.nvidia.com": {"memory": str(self.memory_bytes)}},
        }

    def labels(self) -> dict[str, str]:
        """What GFD puts on the node (resource.go, nvml.go)."""
        major, minor = self.cc
        parts = self.driver.split(".")
        cuda_major, cuda_minor = self.cuda // 1000, self.cuda % 1000 // 10
        return {
            "nvidia.com/gpu.product": "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", self.name).split()),
            "nvidia.com/gpu.memory": str(self.memory_bytes // MIB),
            "nvidia.com/gpu.family": _family(major, minor),
            "nvidia.com/gpu.compute.major": str(major),
            "nvidia.com/gpu.compute.minor": str(minor),
            "nvidia.com/cuda.driver-version.major": parts[0],
            "nvidia.com/cuda.driver-version.minor": parts[1],
            "nvidia.com/cuda.driver-version.revision": parts[2] if len(parts) > 2 else "",
            "nvidia.com/cuda.driver-version.full": self.driver,
            "nvidia.com/cuda.driver.major": parts[0],
            "nvidia.com/cuda.driver.minor": parts[1],
            "nvidia.com/cuda.driver.rev": parts[2] if len(parts) > 2 else "",
            "nvidia.com/cuda.runtime-version.major": str(cuda_major),
            "nvidia.com/cuda.runtime-version.minor": str(cuda_minor),
            "nvidia.com/cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}",
            "nvidia.com/cuda.runtime.major": str(cuda_major),
            "nvidia.com/cuda.runtime.minor": str(cuda_minor),
        }


def _family(major: int, minor: int) -> str:
    table = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper",
             10: "blackwell", 12: "blackwell", 13: "rubin"}
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return table.get(major, "undefined")


def node_matches(labels: dict[str, str], key: str, op: str, values: list[str]) -> bool:
    """Kubernetes nodeSelector (op "=") and NodeSelectorRequirement semantics."""
    present = key in labels
    value = labels.get(key)
    if op == "=":
        return present and value == values[0]
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    try:
        have, want = int(value or ""), int(values[0])
    except ValueError:
        return False
    return present and (have > want if op == "Gt" else have < want)


N = 81920  # an A100 80GB: 81920 MiB
GPUS = {
    "a100": Gpu("NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), N * MIB),
    "a100+1": Gpu("NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), N * MIB + 1),
    "a100-top": Gpu("NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), (N + 1) * MIB - 1),
    "a100-next": Gpu("NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), (N + 1) * MIB),
    "a100-below": Gpu("NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), N * MIB - 1),
    "a100-40": Gpu("NVIDIA A100-PCIE-40GB", "Ampere", (8, 0), 40960 * MIB, driver="535.104.05",
                   cuda=12020),
    "h100": Gpu("NVIDIA H100 80GB HBM3", "Hopper", (9, 0), 81559 * MIB, driver="570.124.06",
                cuda=12080),
    "l40s": Gpu("NVIDIA L40S", "Ada Lovelace", (8, 9), 46068 * MIB, driver="570.124.06",
                cuda=12080),
    "t4": Gpu("Tesla T4", "Turing", (7, 5), 15360 * MIB, driver="470.82.01", cuda=11040),
    "v100": Gpu("Tesla V100-SXM2-16GB", "Volta", (7, 0), 16160 * MIB, driver="560.35",
                cuda=12060),
    "b200": Gpu("NVIDIA B200", "Blackwell", (10, 0), 183359 * MIB, driver="580.65.06",
                cuda=13000),
    "rtx5090": Gpu("NVIDIA GeForce RTX 5090", "Blackwell", (12, 0), 32607 * MIB,
                   driver="580.65.06", cuda=13000),
}

CASES: list[tuple[str, str, list[str]]] = [
    ("nvidia.com/gpu.product", "=", ["NVIDIA-A100-SXM4-80GB"]),
    ("nvidia.com/gpu.product", "=", ["NVIDIA-H100-80GB-HBM3"]),
    ("nvidia.com/gpu.product", "In", ["Tesla-T4", "NVIDIA-GeForce-RTX-5090"]),
    ("nvidia.com/gpu.product", "NotIn", ["NVIDIA-A100-SXM4-80GB"]),
    ("nvidia.com/gpu.product", "NotIn", ["NVIDIA-L40S", "NVIDIA-B200"]),
    ("nvidia.com/gpu.memory", "=", [str(N)]),
    ("nvidia.com/gpu.memory", "=", [str(N - 1)]),
    ("nvidia.com/gpu.memory", "=", [str(N + 1)]),
    ("nvidia.com/gpu.memory", "In", [str(N), "40960"]),
    ("nvidia.com/gpu.memory", "In", ["15360"]),
    ("nvidia.com/gpu.memory", "NotIn", [str(N)]),
    ("nvidia.com/gpu.memory", "NotIn", [str(N), "46068"]),
    ("nvidia.com/gpu.memory", "Gt", [str(N)]),
    ("nvidia.com/gpu.memory", "Gt", [str(N - 1)]),
    ("nvidia.com/gpu.memory", "Gt", ["40000"]),
    ("nvidia.com/gpu.memory", "Lt", [str(N)]),
    ("nvidia.com/gpu.memory", "Lt", [str(N + 1)]),
    ("nvidia.com/gpu.family", "=", ["ampere"]),
    ("nvidia.com/gpu.family", "=", ["ada-lovelace"]),
    ("nvidia.com/gpu.family", "In", ["hopper", "blackwell"]),
    ("nvidia.com/gpu.family", "NotIn", ["turing", "volta"]),
    ("nvidia.com/gpu.compute.major", "=", ["8"]),
    ("nvidia.com/gpu.compute.major", "In", ["9", "10", "12"]),
    ("nvidia.com/gpu.compute.major", "NotIn", ["8"]),
    ("nvidia.com/gpu.compute.major", "Gt", ["7"]),
    ("nvidia.com/gpu.compute.major", "Lt", ["8"]),
    ("nvidia.com/gpu.compute.minor", "=", ["9"]),
    ("nvidia.com/gpu.compute.minor", "Gt", ["0"]),
    ("nvidia.com/cuda.driver-version.major", "=", ["570"]),
    ("nvidia.com/cuda.driver-version.major", "Gt", ["550"]),
    ("nvidia.com/cuda.driver-version.major", "Lt", ["550"]),
    ("nvidia.com/cuda.driver-version.minor", "=", ["104"]),
    ("nvidia.com/cuda.driver-version.revision", "=", ["06"]),
    ("nvidia.com/cuda.driver-version.revision", "In", ["06", "6"]),
    ("nvidia.com/cuda.driver-version.revision", "NotIn", ["06", "5"]),
    ("nvidia.com/cuda.driver-version.revision", "Gt", ["5"]),
    ("nvidia.com/cuda.driver-version.full", "=", ["550.54.15"]),
    ("nvidia.com/cuda.driver-version.full", "=", ["535.104.05"]),
    ("nvidia.com/cuda.driver-version.full", "=", ["560.35"]),
    ("nvidia.com/cuda.driver-version.full", "In", ["570.124.06", "470.82.01"]),
    ("nvidia.com/cuda.driver-version.full", "NotIn", ["550.54.15"]),
    ("nvidia.com/cuda.driver.major", "=", ["550"]),
    ("nvidia.com/cuda.driver.minor", "In", ["54", "82"]),
    ("nvidia.com/cuda.driver.rev", "=", ["01"]),
    ("nvidia.com/cuda.runtime-version.major", "=", ["12"]),
    ("nvidia.com/cuda.runtime-version.major", "Gt", ["12"]),
    ("nvidia.com/cuda.runtime-version.minor", "=", ["8"]),
    ("nvidia.com/cuda.runtime-version.full", "=", ["12.4"]),
    ("nvidia.com/cuda.runtime-version.full", "In", ["12.8", "13.0"]),
    ("nvidia.com/cuda.runtime-version.full", "NotIn", ["12.8"]),
    ("nvidia.com/cuda.runtime.major", "Lt", ["12"]),
    ("nvidia.com/cuda.runtime.minor", "NotIn", ["4"]),
]


def _id(case: tuple[str, str, list[str]]) -> str:
    return f"{case[0].removeprefix('nvidia.com/')} {case[1]} {','.join(case[2])}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_translation_compiles(case: tuple[str, str, list[str]]) -> None:
    translation = label_selector(*case)
    assert isinstance(translation, Translation) and translation.expression
    compile_selector(translation.expression)


@needs_engine
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_translation_selects_the_same_devices(case: tuple[str, str, list[str]]) -> None:
    label, op, values = case
    translation = label_selector(label, op, values)
    assert translation is not None
    selector = SelectorEngine().compile(translation.expression)
    got = {name: selector.evaluate(gpu.device()) for name, gpu in GPUS.items()}
    want = {name: node_matches(gpu.labels(), label, op, values) for name, gpu in GPUS.items()}
    assert got == want
    assert any(want.values()) or op in ("=", "In")  # the table should exercise both outcomes


@needs_engine
def test_memory_boundaries() -> None:
    """floor(bytes / MiB) == N exactly: N MiB and up to (N+1) MiB - 1 byte."""
    expected = {"a100-below": False, "a100": True, "a100+1": True, "a100-top": True,
                "a100-next": False}
    tr = label_selector("nvidia.com/gpu.memory", "=", [str(N)])
    assert tr is not None
    selector = SelectorEngine().compile(tr.expression)
    assert {k: selector.evaluate(GPUS[k].device()) for k in expected} == expected
    gt = SelectorEngine().compile(label_selector("nvidia.com/gpu.memory", "Gt", [str(N)]).expression)
    assert {k: gt.evaluate(GPUS[k].device()) for k in expected} == {
        "a100-below": False, "a100": False, "a100+1": False, "a100-top": False, "a100-next": True}
    lt = SelectorEngine().compile(label_selector("nvidia.com/gpu.memory", "Lt", [str(N)]).expression)
    assert {k: lt.evaluate(GPUS[k].device()) for k in expected} == {
        "a100-below": True, "a100": False, "a100+1": False, "a100-top": False, "a100-next": False}


def test_expected_expressions() -> None:
    assert label_selector("nvidia.com/gpu.product", "=", ["NVIDIA-A100-SXM4-80GB"]) == Translation(
        'device.attributes["gpu.nvidia.com"].productName.replace(" ", "-") == "NVIDIA-A100-SXM4-80GB"')
    assert label_selector("nvidia.com/gpu.product", "In", ["a", "b"]).expression.endswith(
        '.replace(" ", "-") in ["a", "b"]')
    assert label_selector("nvidia.com/gpu.product", "NotIn", ["a", "b"]).expression.startswith("!(")
    mem = 'device.capacity["gpu.nvidia.com"].memory'
    assert label_selector("nvidia.com/gpu.memory", "=", ["16160"]).expression == (
        f'{mem}.compareTo(quantity("16160Mi")) >= 0 && {mem}.compareTo(quantity("16161Mi")) < 0')
    assert label_selector("nvidia.com/gpu.memory", "Gt", ["16160"]).expression == \
        f'{mem}.compareTo(quantity("16161Mi")) >= 0'
    assert label_selector("nvidia.com/gpu.memory", "Lt", ["16160"]).expression == \
        f'{mem}.compareTo(quantity("16160Mi")) < 0'
    assert label_selector("nvidia.com/gpu.family", "=", ["ampere"]).expression == (
        'device.attributes["gpu.nvidia.com"].architecture.lowerAscii().replace(" ", "-") == "ampere"')
    assert label_selector("nvidia.com/gpu.compute.major", "=", ["8"]).expression == \
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() == 8'
    assert label_selector("nvidia.com/gpu.compute.major", "Gt", ["7"]).expression == \
        'device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() > 7'
    full = label_selector("nvidia.com/cuda.driver-version.full", "=", ["535.104.05"]).expression
    assert full.endswith("driverVersion.patch() == 5") and "minor() == 104" in full


@pytest.mark.parametrize(("label", "op", "values", "expected"), [
    # Exists: true on every GPU node, implied by a GPU claim
    ("nvidia.com/gpu.product", "Exists", [], ""),
    ("nvidia.com/gpu.memory", "Exists", [], ""),
    ("nvidia.com/cuda.driver-version.full", "Exists", [], ""),
    ("nvidia.com/gpu.product", "DoesNotExist", [], None),
    # no DRA equivalent / not a GFD label we translate
    ("nvidia.com/gpu.count", "=", ["1"], None),
    ("nvidia.com/gpu.present", "=", ["true"], None),
    ("nvidia.com/mig.strategy", "=", ["single"], None),
    ("kubernetes.io/hostname", "=", ["node-1"], None),
    ("nvidia.com/gpu.count", "Exists", [], None),
    # MIG single-strategy products: by class and profile, not a selector
    ("nvidia.com/gpu.product", "=", ["NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"], None),
    ("nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"],
     None),
    ("nvidia.com/gpu.product", "=", ["NVIDIA-A100-SXM4-40GB-MIG-INVALID"], None),
    # values that never matched a label, or malformed requirements
    ("nvidia.com/gpu.memory", "=", ["081920"], None),
    ("nvidia.com/gpu.memory", "=", ["80Gi"], None),
    ("nvidia.com/gpu.memory", "Gt", ["a lot"], None),
    ("nvidia.com/gpu.memory", "=", ["1", "2"], None),
    ("nvidia.com/gpu.memory", "In", [], None),
    ("nvidia.com/gpu.product", "Gt", ["5"], None),
    ("nvidia.com/gpu.family", "=", ["undefined"], None),
    ("nvidia.com/gpu.family", "In", ["ampere", "fermi"], None),
    ("nvidia.com/gpu.family", "Gt", ["1"], None),
    ("nvidia.com/cuda.driver-version.full", "Gt", ["550"], None),
    ("nvidia.com/cuda.driver-version.full", "=", ["550.54.15-beta"], None),
    ("nvidia.com/cuda.driver-version.revision", "=", [""], None),
    ("nvidia.com/gpu.compute.major", "=", ["08"], None),
    # GFD writes NVML's driver version parts as they are ("570.124.06"): the DRA driver reads
    # 570.124.6, so "06" is patch 6, and "6" (or "0570") named no node and must stay a label
    ("nvidia.com/cuda.driver-version.revision", "=", ["6"], None),
    ("nvidia.com/cuda.driver.rev", "=", ["6"], None),
    ("nvidia.com/cuda.driver-version.major", "=", ["0570"], None),
    ("nvidia.com/cuda.driver-version.full", "=", ["570.124.6"], None),
    ("nvidia.com/cuda.driver-version.full", "=", ["0570.124.06"], None),
    ("nvidia.com/gpu.product", "Matches", ["x"], None),
])
def test_special_results(label: str, op: str, values: list[str], expected: str | None) -> None:
    translation = label_selector(label, op, values)
    if expected is None:
        assert translation is None
    else:
        assert translation is not None and translation.expression == expected and translation.note


def test_every_label_has_an_exists_translation() -> None:
    for label in TRANSLATED_LABELS:
        assert label_selector(label, "Exists", []) == Translation(
            "", f"{label} exists on every GPU node; a GPU claim implies it")


@needs_engine
def test_shared_suffix_is_stripped_with_a_note() -> None:
    tr = label_selector("nvidia.com/gpu.product", "=", ["NVIDIA-A100-SXM4-80GB-SHARED"])
    assert tr is not None and tr.note and "SHARED" in tr.note
    assert SelectorEngine().evaluate(tr.expression, GPUS["a100"].device()) is True
    assert SelectorEngine().evaluate(tr.expression, GPUS["h100"].device()) is False


@needs_engine
def test_rubin_translates_with_a_note() -> None:
    tr = label_selector("nvidia.com/gpu.family", "=", ["rubin"])
    assert tr is not None and tr.note and "go-nvlib" in tr.note
    rubin = Gpu("NVIDIA Rubin", "Rubin", (13, 0), 288 * 1024 * MIB)
    assert node_matches(rubin.labels(), "nvidia.com/gpu.family", "=", ["rubin"])
    assert SelectorEngine().evaluate(tr.expression, rubin.device()) is True


def test_families_are_the_architectures_as_the_family_selector_spells_them() -> None:
    """The family selector compares architecture.lowerAscii().replace(" ", "-"); synthesis
    predicts the architecture from the family with the same table."""
    assert DRIVER_FAMILIES == set(DRIVER_ARCHITECTURES)
    for family, architecture in DRIVER_ARCHITECTURES.items():
        assert architecture.lower().replace(" ", "-") == family


@needs_engine
def test_mig_memory_label_matches_the_mig_capacity() -> None:
    """Under migStrategy single, gpu.memory is the MIG profile's MemorySizeMB (MiB); the driver
    publishes MemorySizeMB * 2^20 bytes (mig.go)."""
    tr = label_selector("nvidia.com/gpu.memory", "=", ["9856"])
    device = {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"type": "mig"}},
              "capacity": {"gpu.nvidia.com": {"memory": str(9856 * MIB)}}}
    assert SelectorEngine().evaluate(tr.expression, device) is True


@needs_engine
def test_known_limit_irregular_whitespace_in_product_name() -> None:
    """GFD collapses whitespace runs and drops odd characters; replace(" ", "-") does not."""
    odd = Gpu("NVIDIA  Odd (TM) GPU", "Hopper", (9, 0), 1024 * MIB)
    label = odd.labels()["nvidia.com/gpu.product"]
    assert label == "NVIDIA-Odd-TM-GPU"
    tr = label_selector("nvidia.com/gpu.product", "=", [label])
    assert SelectorEngine().evaluate(tr.expression, odd.device()) is False  # documented miss


@needs_engine
def test_missing_memory_capacity_is_an_error_not_a_match() -> None:
    """NVML without memory info: GFD omits the label, the driver omits the capacity."""
    from gpudra.dra.cel import CelEvaluationError

    tr = label_selector("nvidia.com/gpu.memory", "NotIn", ["1024"])
    device = GPUS["a100"].device()
    device["capacity"] = {}
    with pytest.raises(CelEvaluationError):
        SelectorEngine().evaluate(tr.expression, device)


def test_one_table_names_the_attribute_the_selector_writes() -> None:
    """The audit's words for a label (GPU301/302) and convert's CEL come from one row: every
    label convert translates names, for the audit, the attribute or capacity its CEL tests."""
    from gpudra.dra.selectors import GFD_LABELS, mapping_for

    assert TRANSLATED_LABELS and TRANSLATED_LABELS <= set(GFD_LABELS)
    for label in TRANSLATED_LABELS:
        mapping = mapping_for(label)
        assert mapping is GFD_LABELS[label] and mapping.dra is not None
        value = {"product": "NVIDIA-A100", "family": "ampere"}.get(label.rsplit(".", 1)[1])
        if label.endswith(".full"):
            value = "550.54.15" if "driver" in label else "12.4"
        translation = label_selector(label, "=" if value else "Gt", [value or "1"])
        assert translation is not None, label
        assert mapping.dra.split()[-1] in translation.expression, label
    # a label of a known family that the table does not list takes the family's mapping
    assert mapping_for("nvidia.com/cuda.driver-version.build").dra == "attribute driverVersion"
    assert mapping_for("nvidia.com/gpu.unknown").dra is None
