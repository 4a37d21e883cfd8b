"""The memory a MIG device really has: what the NVIDIA DRA driver publishes as its `memory`
capacity, below the nominal size in the profile's name (1g.5gb has 4864Mi, not 5Gi).

The driver publishes NVML's `GpuInstanceProfileInfo.MemorySizeMB` x 2^20 (MiB;
dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/mig.go `CommonCapacitiesMig`; its
resourceslice-attributes reference shows `memory: 4864Mi` for 1g.5gb). The figures per GPU
are NVML's, as NVIDIA's NVML mock carries them (NVIDIA/go-nvml pkg/nvml/mock/gpus/a100.go and
a30.go @ 2f9e261); the H100/H200/B200 mocks hold round numbers, not NVML's, so those GPUs
are left out rather than guessed.
"""

from __future__ import annotations

# GPU model (as it appears in the NVML/GFD product name) -> MIG profile -> usable MiB.
_A100_40GB = {"1g.5gb": 4864, "1g.5gb+me": 4864, "1g.10gb": 9856, "2g.10gb": 9856,
              "3g.20gb": 19968, "4g.20gb": 19968, "7g.40gb": 40192}
_A100_80GB = {"1g.10gb": 9856, "1g.10gb+me": 9856, "1g.20gb": 19968, "2g.20gb": 19968,
              "3g.40gb": 40192, "4g.40gb": 40192, "7g.80gb": 80384}
_A30_24GB = {"1g.6gb": 5836, "1g.6gb+me": 5836, "2g.12gb": 11672, "2g.12gb+me": 11672,
             "4g.24gb": 23344}

USABLE_MIB: dict[str, dict[str, int]] = {
    "A100-80GB": _A100_80GB, "A100-40GB": _A100_40GB, "A30": _A30_24GB}


def _model(product: str) -> str | None:
    text = product.upper()
    if "A100" in text:
        return "A100-80GB" if "80GB" in text else "A100-40GB"
    if "A30" in text:
        return "A30"
    return None


def usable_mib(profile: str, product: str | None = None) -> int | None:
    """MiB a MIG device of `profile` has on `product` (an NVML or GFD product name); without a
    product, the figure every known GPU with that profile agrees on. None when unknown."""
    if product is not None:
        model = _model(product)
        return USABLE_MIB.get(model, {}).get(profile) if model else None
    figures = {table[profile] for table in USABLE_MIB.values() if profile in table}
    return figures.pop() if len(figures) == 1 else None
