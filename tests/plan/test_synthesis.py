"""Devices predicted from GFD-labelled nodes (fixtures/nodes-gfd.yaml)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from gpudra.dra.cel import Version
from gpudra.plan.synthesis import (
    KNOWN_PRODUCTS,
    Shares,
    mig_profile,
    product_name,
    sanitise,
    synthesize,
)

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
MI = 2**20
NODES = list(yaml.safe_load_all((FIXTURES / "nodes-gfd.yaml").read_text()))


def by_node(consumable_shares: str | int | None = None) -> dict[str, list]:
    inventory = synthesize(NODES, consumable_shares)
    out: dict[str, list] = {}
    for device in inventory.devices:
        out.setdefault(device.node, []).append(device)
    return out


def attr(device, name):
    return device.qualified(f"gpu.nvidia.com/{name}")


def test_full_gpus_from_labels() -> None:
    gpus = by_node()["gfd-a100"]
    assert [d.name for d in gpus] == [f"gpu-{i}" for i in range(8)]
    gpu = gpus[0]
    assert gpu.predicted and gpu.driver == "gpu.nvidia.com" and gpu.pool == "gfd-a100"
    assert attr(gpu, "type") == "gpu"
    assert attr(gpu, "productName") == "NVIDIA A100-SXM4-80GB"
    assert attr(gpu, "architecture") == "Ampere"
    assert attr(gpu, "cudaComputeCapability") == Version(8, 0, 0)
    assert attr(gpu, "driverVersion") == Version(570, 124, 6)  # label 570.124.06
    assert attr(gpu, "cudaDriverVersion") == Version(12, 8, 0)
    assert gpu.capacity == {"memory": Fraction(81920 * MI)}
    assert {"gpu.nvidia.com/uuid", "gpu.nvidia.com/brand", "resource.kubernetes.io/pciBusID",
            "resource.kubernetes.io/numaNode"} <= gpu.unknown
    assert not gpu.allow_multiple_allocations


def test_mixed_mig() -> None:
    devices = by_node()["gfd-h100-mixed"]
    kinds = [(attr(d, "type"), attr(d, "profile")) for d in devices]
    # allocatable nvidia.com/gpu says one GPU is not MIG-enabled (gpu.count counts both).
    assert kinds == [("gpu", None), ("mig", "1g.10gb"), ("mig", "1g.10gb"),
                     ("mig", "1g.10gb+me"), ("mig", "3g.40gb")]
    small = devices[1]
    assert attr(small, "productName") == "NVIDIA H100 80GB HBM3"
    assert attr(small, "architecture") == "Hopper"
    assert attr(small, "driverVersion") == Version(550, 54, 15)  # deprecated cuda.driver.* labels
    assert attr(small, "cudaDriverVersion") == Version(12, 4, 0)
    assert small.capacity == {"memory": Fraction(9984 * MI), "multiprocessors": 16,
                              "copyEngines": 1}
    assert {"gpu.nvidia.com/parentUUID", "gpu.nvidia.com/decoders",
            "gpu.nvidia.com/memorySlice*"} <= small.unknown


def test_mixed_mig_without_gpu_product_notes_the_guess_from_the_mig_product() -> None:
    node = {"kind": "Node", "metadata": {"name": "mixed-no-product", "labels": {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "1",
        "nvidia.com/mig-1g.10gb.product": "Acme-X9-MIG-1g.10gb"}},
        "status": {"allocatable": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "1"}}}
    inventory = synthesize([node])
    [device] = inventory.devices
    assert attr(device, "productName") == product_name("Acme-X9")[0]
    assert not product_name("Acme-X9")[1]  # not a known label: the name is a guess
    assert any(n.startswith("node mixed-no-product: productName guessed from label 'Acme-X9'")
               for n in inventory.notes), inventory.notes


def test_single_mig() -> None:
    devices = by_node()["gfd-a100-single"]
    assert len(devices) == 14
    assert {attr(d, "profile") for d in devices} == {"1g.5gb"}
    assert attr(devices[0], "productName") == "NVIDIA A100-SXM4-40GB"
    assert devices[0].capacity["memory"] == 4864 * MI
    assert devices[0].capacity["multiprocessors"] == 14


def test_shared_plugin_only_and_cpu_nodes() -> None:
    nodes = by_node()
    assert [attr(d, "productName") for d in nodes["gfd-l4-shared"]] == ["NVIDIA L4"] * 2
    assert attr(nodes["gfd-l4-shared"][0], "architecture") == "Ada Lovelace"
    plugin = nodes["plugin-only"]
    assert len(plugin) == 2 and attr(plugin[0], "productName") is None
    assert "gpu.nvidia.com/productName" in plugin[0].unknown
    assert "gpu.nvidia.com/memory" in plugin[0].unknown
    assert "cpu-only" not in nodes
    inventory = synthesize(NODES)
    assert "cpu-only" in inventory.nodes and inventory.source == "synthesised"
    assert any("gfd-l4-shared: GPUs are shared" in n for n in inventory.notes)


@pytest.mark.parametrize("mode, memory_policy, shares", [
    (4, (0, 0, 81920 * MI, MI), 4),
    ("unlimited", (0, 0, 81920 * MI, MI), None),
    ("memory", (81920 * MI, MI, 81920 * MI, MI), None),
])
def test_consumable_shares(mode, memory_policy, shares) -> None:
    gpu = by_node(mode)["gfd-a100"][0]
    assert gpu.allow_multiple_allocations
    policy = gpu.request_policies["memory"]
    assert (policy.default, policy.minimum, policy.maximum, policy.step) == memory_policy
    assert gpu.capacity.get("shares") == shares


def test_consumable_shares_value_is_validated() -> None:
    assert Shares.parse("disabled") is None
    with pytest.raises(ValueError, match="positive integer"):
        Shares.parse("0")


def test_product_names() -> None:
    for name in KNOWN_PRODUCTS:
        assert product_name(sanitise(name)) == (name, True)
    assert product_name("NVIDIA-RTX-PRO-6000") == ("NVIDIA RTX-PRO-6000", False)
    assert sanitise("NVIDIA  GeForce (R) RTX") == "NVIDIA-GeForce-R-RTX"


@pytest.mark.parametrize("label, profile", [
    ("1g.10gb", "1g.10gb"), ("1g.10gb.me", "1g.10gb+me"), ("1c.3g.20gb", "1c.3g.20gb")])
def test_mig_profiles(label: str, profile: str) -> None:
    assert mig_profile(label) == profile


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_mixed_mig_node_labels() -> None:
    labels = json.loads((CORPUS / "NVIDIA__cloud-native-docs" /
                         "gpu-operator__manifests__output__mig-mixed-node-labels.json").read_text())
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "h100-mig", "labels": labels}}
    inventory = synthesize([node])
    profiles = sorted(d.qualified("gpu.nvidia.com/profile") for d in inventory.devices)
    assert profiles == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    assert any("number of full (non-MIG) GPUs is unknown" in n for n in inventory.notes)
    three = next(d for d in inventory.devices
                 if d.qualified("gpu.nvidia.com/profile") == "3g.40gb")
    assert three.capacity["memory"] == int(labels["nvidia.com/mig-3g.40gb.memory"]) * MI
