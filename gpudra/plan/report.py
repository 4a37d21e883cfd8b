"""The result of ``gpudra plan`` as frozen records, its JSON form, and the exit-code decision.

JSON (``-o json``), stable keys first, extras after::

    {"workloads": [{"kind", "name", "namespace", "satisfiable": true|false, "reason",
                    "requests": [{"name", "count", "matching_devices", "nodes",
                                  "claim", "pod_group", "allocation_mode", "device_class",
                                  "network_devices", "unknown_devices", "allocated",
                                  "subrequests", "errors", "rejections", "hints",
                                  "matching_nodes"}],
                    "pods", "pods_placed", "placement", "failure_kind", "warnings",
                    "converted", "file"}],
     "devices": {"total", "real", "predicted", "matched", "stranded", "unknown", "allocated",
                 "by_node": {node: {"total", "matched", "stranded", "unknown", "allocated",
                                    "predicted"}},
                 "stranded_by_kind": {kind: count}, "stranded_devices": ["node/device", ...]},
     "summary": {"workloads", "satisfiable", "unsatisfiable", "inventory", ...},
     "unconverted": [...], "problems": [...], "notes": [...]}

``nodes`` names at most :data:`NODE_SAMPLE` of the nodes with a matching device, in name
order (every one with ``PlanOptions(node_sample=None)``, ``gpudra plan --full-matches``, and
in a plan of a single workload);
``matching_nodes`` counts them all, so the report grows with the workloads, not with workloads
x nodes. ``reason`` is null for a satisfiable workload. ``count`` is null for
``allocationMode: All``; for a ``firstAvailable`` request it is the first alternative's and
``subrequests`` has each.
Network-attached devices have no node: they are counted under ``"(network)"`` in ``by_node``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudra.results.json_value import JsonObject
from gpudra.results.outcome import Scalar

NETWORK = "(network)"
NODE_SAMPLE = 20  # node names listed per request by default


@dataclass(frozen=True)
class RequestReport:
    name: str
    count: int | None
    matching_devices: int
    nodes: tuple[str, ...]
    claim: str = ""
    pod_group: str = ""
    allocation_mode: str = "ExactCount"
    device_class: str | None = None
    network_devices: int = 0
    unknown_devices: int = 0
    allocated: int = 0
    subrequests: tuple[RequestReport, ...] = ()
    errors: tuple[str, ...] = ()
    rejections: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    matching_nodes: int = 0  # all of them; `nodes` may name only the first few

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name, "count": self.count, "matching_devices": self.matching_devices,
            "nodes": list(self.nodes), "claim": self.claim, "pod_group": self.pod_group,
            "allocation_mode": self.allocation_mode, "device_class": self.device_class,
            "network_devices": self.network_devices, "unknown_devices": self.unknown_devices,
            "allocated": self.allocated,
            "subrequests": [s.to_json() for s in self.subrequests],
            "errors": list(self.errors), "rejections": list(self.rejections),
            "hints": list(self.hints), "matching_nodes": self.matching_nodes}
        return out


@dataclass(frozen=True)
class WorkloadReport:
    kind: str
    name: str
    namespace: str | None
    satisfiable: bool
    reason: str | None
    requests: tuple[RequestReport, ...]
    pods: int = 0
    pods_placed: int = 0
    placement: Mapping[str, int] = field(default_factory=dict)  # node -> pods
    failure_kind: str | None = None
    warnings: tuple[str, ...] = ()
    converted: bool = False
    file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace,
                "satisfiable": self.satisfiable, "reason": self.reason,
                "requests": [r.to_json() for r in self.requests],
                "pods": self.pods, "pods_placed": self.pods_placed,
                "placement": dict(sorted(self.placement.items())),
                "failure_kind": self.failure_kind, "warnings": list(self.warnings),
                "converted": self.converted, "file": self.file}


@dataclass(frozen=True, slots=True)
class NodeDevices:
    total: int = 0
    matched: int = 0
    stranded: int = 0
    unknown: int = 0
    allocated: int = 0
    predicted: int = 0

    def to_json(self) -> dict[str, int]:
        return {"total": self.total, "matched": self.matched, "stranded": self.stranded,
                "unknown": self.unknown, "allocated": self.allocated,
                "predicted": self.predicted}


@dataclass(frozen=True)
class DeviceSummary:
    """Devices that match some request (`matched`), match none (`stranded`, capacity no
    workload can use), or could not be judged (`unknown`, predicted devices only)."""

    total: int = 0
    real: int = 0
    predicted: int = 0
    matched: int = 0
    stranded: int = 0
    unknown: int = 0
    allocated: int = 0
    by_node: Mapping[str, NodeDevices] = field(default_factory=dict)
    stranded_by_kind: Mapping[str, int] = field(default_factory=dict)
    stranded_devices: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {"total": self.total, "real": self.real, "predicted": self.predicted,
                "matched": self.matched, "stranded": self.stranded, "unknown": self.unknown,
                "allocated": self.allocated,
                "by_node": {k: v.to_json() for k, v in sorted(self.by_node.items())},
                "stranded_by_kind": dict(sorted(self.stranded_by_kind.items())),
                "stranded_devices": list(self.stranded_devices)}


@dataclass(frozen=True, slots=True)
class PlanStats:
    seconds: float = 0.0
    selector_results: int = 0  # (expression, device) results
    cel_evaluations: int = 0  # CEL programs actually run (the rest came from the memo)
    expressions: int = 0  # distinct expressions compiled
    pods: int = 0

    def to_json(self) -> dict[str, int | float]:
        return {"seconds": round(self.seconds, 3), "selector_results": self.selector_results,
                "cel_evaluations": self.cel_evaluations, "expressions": self.expressions,
                "pods": self.pods}


@dataclass(frozen=True)
class PlanReport:
    workloads: tuple[WorkloadReport, ...]
    devices: DeviceSummary
    inventory_source: str = "file"
    unconverted: tuple[tuple[str, str, str | None], ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    stats: PlanStats = PlanStats()

    @property
    def unsatisfiable(self) -> tuple[WorkloadReport, ...]:
        return tuple(w for w in self.workloads if not w.satisfiable)

    def summary_json(self) -> dict[str, Scalar]:
        """`.summary` of the JSON (and the properties of the JUnit report)."""
        return {"workloads": len(self.workloads),
                "satisfiable": len(self.workloads) - len(self.unsatisfiable),
                "unsatisfiable": len(self.unsatisfiable),
                "inventory": self.inventory_source,
                **self.stats.to_json()}

    def to_json(self) -> JsonObject:
        return {
            "workloads": [w.to_json() for w in self.workloads],
            "devices": self.devices.to_json(),
            "summary": self.summary_json(),
            "unconverted": [{"kind": k, "name": n, "namespace": ns}
                            for k, n, ns in self.unconverted],
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


def exit_code(report: PlanReport) -> int:
    """1 when any workload cannot be satisfied, else 0 (usage and input errors are the CLI's)."""
    return 1 if report.unsatisfiable else 0
