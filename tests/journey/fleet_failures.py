"""The small cluster of the journey's failure paths: two pools of one node (L4, A100-80GB; four
GPUs each, GKE-style taint and ExtendedResourceToleration), a Deployment pinned to each by
GFD's product label. Small so that it starts fast; two pools so that cutover makes a wave that
leaves one pool on the device plugin."""

from __future__ import annotations

from typing import Any

from tests.controlplane.nvidia import A100_80GB, L4, Product
from tests.journey.fleets import ADMISSION, IMAGE, Fleet, Pool, deployment


def pinned_spec(product: Product, gpus: int) -> dict[str, Any]:
    """A pod spec asking the device plugin for `gpus` GPUs of `product` (GFD's label)."""
    return {"nodeSelector": {"nvidia.com/gpu.product": product.label},
            "containers": [{"name": "main", "image": IMAGE,
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}


def _failures() -> Fleet:
    pools = (Pool("l4", L4, 1, 4), Pool("a100", A100_80GB, 1, 4))
    objects = (deployment("serving", "embed", 2, pinned_spec(L4, 1)),
               deployment("ml", "train", 1, pinned_spec(A100_80GB, 2)))
    running = {("serving", "Deployment", "embed"): 2, ("ml", "Deployment", "train"): 1}
    return Fleet(pools, ("serving", "ml"), objects, running, ADMISSION)


FAILURES = _failures()
