"""A grid of DRA objects written every way the request shape can go wrong (or right), for the
property that convert's repairs end in an object that is right: checked offline by the audit's
rules (tests/convert/test_repair_grid.py) and by the real API server's dry-run
(tests/controlplane/test_dry_run_repairs.py).

Each object is one file; the grid is converted in one run. Whatever convert leaves without
saying `manual` or `blocked` (repaired, or untouched as already right) must be accepted; what
it reports `manual` it must leave byte for byte.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

_MISSING = object()
VERSIONS = ("v1", "v1beta2", "v1beta1")
# Where the device fields sit: flat (v1beta1), under exactly:, in a firstAvailable entry, or
# under exactly: in a template without its inner spec: (GPU602).
SHAPES = ("flat", "exactly", "firstAvailable", "no-inner-spec")
MODES = (_MISSING, "ExactCount", "All", "Count", "all", "Whole")
COUNTS = (_MISSING, 1, "2", 0)
SELECTORS = (
    None,
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0',
    'device.attributes["gpu.nvidia.com"].memory >= quantity("16Gi")',  # repairable GPU605
    'device.attributes["gpu.nvidia.com"].model == "H100"',  # no such attribute: left
)


@dataclass(frozen=True)
class GridResult:
    before: dict[str, bytes]
    after: dict[str, bytes]
    strategies: dict[str, str]  # file -> strategy, for the files convert reported


def grid() -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, object) for every combination; kinds alternate between claims and claim
    templates so both shapes of spec are covered without doubling the grid."""
    combos = itertools.product(VERSIONS, SHAPES, MODES, COUNTS, SELECTORS)
    for index, (version, shape, mode, count, selector) in enumerate(combos):
        body: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com"}
        if mode is not _MISSING:
            body["allocationMode"] = mode
        if count is not _MISSING:
            body["count"] = count
        if selector is not None:
            body["selectors"] = [{"cel": {"expression": selector}}]
        request = {"name": "gpu", **(body if shape == "flat" else
                                     {"firstAvailable": [{"name": "a", **body}]}
                                     if shape == "firstAvailable" else {"exactly": body})}
        devices = {"devices": {"requests": [request]}}
        kind = "ResourceClaim" if index % 2 and shape != "no-inner-spec" \
            else "ResourceClaimTemplate"
        spec = devices if kind == "ResourceClaim" or shape == "no-inner-spec" \
            else {"spec": devices}
        yield f"o{index:04d}.yaml", {"apiVersion": f"resource.k8s.io/{version}", "kind": kind,
                                     "metadata": {"name": f"o{index:04d}", "namespace": "grid"},
                                     "spec": spec}


def convert_grid(root: Path) -> GridResult:
    root.mkdir(parents=True, exist_ok=True)
    for name, obj in grid():
        (root / name).write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in sorted(root.iterdir())}
    out = io.StringIO()
    run_convert(ConvertRequest(paths=(str(root),)), JSON, stdout=out,
                stderr=io.StringIO())
    report = json.loads(out.getvalue())
    after = {p.name: p.read_bytes() for p in sorted(root.iterdir())}
    strategies = {Path(w["file"]).name: w["strategy"] for w in report["workloads"]}
    return GridResult(before, after, strategies)
