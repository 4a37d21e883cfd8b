"""`gpudra cutover --strategy bridge`: the waves of the rewrite strategy, but the moving
workloads the extended-resource bridge (KEP-5004) serves stay unchanged.

A DeviceClass with `extendedResourceName: nvidia.com/gpu` lets an unchanged pod that asks
`nvidia.com/gpu: N` be served by DRA; the scheduler does so only on nodes with no
device-plugin capacity for the name (docs/facts.md, "The bridge in a cutover"). So a wave
only has to stop the device plugin on its nodes, wait until their `nvidia.com/gpu` capacity
is 0 or gone, and let the drain restart the unchanged pods there; an unchanged workload is on
the bridge once every GPU node it may run on is switched. What the bridge cannot serve is
converted in its wave as the rewrite strategy does: convert's own `--strategy bridge`
judgement decides (gpudra.convert.bridge: MIG single strategy is rewritten; a GPU container
with NVIDIA_VISIBLE_DEVICES is blocked there, and rewritten here, since rewrite removes it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpudra.convert.records import Strategy
from gpudra.cutover.pools import Fleet, Workload
from gpudra.cutover.waves import CutoverPlan, Unconverted
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError
from gpudra.results.model import InputError
from gpudra.k8s.objects import dig
from gpudra.k8s.workloads import WorkloadTable
from gpudra.vocabulary import words
from gpudra.dra import emit
from gpudra.convert.export import dump

BRIDGED_NAME = "nvidia.com/gpu"
# The class gpudra writes when none maps nvidia.com/gpu: a name of its own, so it never edits
# a class a chart or the GPU Operator owns (which would put it back).
MAPPING_CLASS = "gpu-extended-resource.gpudra.io"


def check_strategy(strategy: str, target: TargetVersion) -> None:
    """A usage error for an unknown strategy, or the bridge on a release without it on."""
    try:
        chosen = Strategy(strategy)
    except ValueError:
        raise UsageError(f"--strategy must be {words(Strategy)}, not {strategy!r}") from None
    if chosen is not Strategy.BRIDGE:
        return
    support = target.supports("extendedResourceName")
    if not support.available:
        raise UsageError(f"--strategy bridge: Kubernetes {target} has no extended-resource "
                         "bridge (DeviceClass extendedResourceName, KEP-5004, is from 1.34 and "
                         "on by default from 1.36); use --strategy rewrite")
    if not support.default_on:
        raise UsageError(f"--strategy bridge: on Kubernetes {target} the DRAExtendedResource "
                         "gate is alpha and off by default (on from 1.36); use --strategy "
                         "rewrite, or --target-version 1.36 if every component enables it")


@dataclass(frozen=True)
class BridgePlan:
    """Per wave number, the keys of the moving workloads left unchanged for the bridge; and
    whether the cluster lacks a class that maps nvidia.com/gpu (the runbook then writes one,
    in the first wave)."""

    bridged: Mapping[int, frozenset[tuple[str, str, str]]]
    write_mapping: bool
    mapped_by: tuple[str, ...] = ()  # the classes that map nvidia.com/gpu already
    mapping_wave: int | None = None  # the wave whose first step writes the class
    # "bridge", or "rewrite" (the claims strategy) when only the workloads whose controller
    # reads the limit ride the bridge (gpudra.cutover.rides): then, per such workload, its
    # controller
    strategy: str = "bridge"
    rides: Mapping[tuple[str, str, str], str] = field(default_factory=dict)

    def of(self, number: int) -> frozenset[tuple[str, str, str]]:
        return self.bridged.get(number, frozenset())

    @property
    def count(self) -> int:
        """How many workloads the waves leave to the bridge (under the claims strategy: the
        riders): the one number the runbook's table and prose both say."""
        return sum(len(keys) for keys in self.bridged.values())


def plan_bridge(plan: CutoverPlan, fleet: Fleet, table: WorkloadTable,
                rides: Mapping[tuple[str, str, str], str] | None = None
                ) -> tuple[CutoverPlan, BridgePlan]:
    """The plan's waves with each workload the bridge serves moved to the wave after which
    every GPU node it may run on is switched (an unchanged pod may land on any of them, the
    device plugin's too: only then are all its pods on DRA), and what each wave leaves
    unchanged. Converted workloads keep their wave. The sides of each wave stay the rewrite
    plan's: the capacity checks, which the scheduler, free to put an unchanged pod on either
    stack, can only beat. `rides` (the claims strategy, gpudra.cutover.rides.plan_rides): only
    these workloads are left to the bridge."""
    switched = {n.name for n in fleet.nodes if n.on_dra}
    carried: list[Workload] = []
    waves = []
    bridged: dict[int, frozenset[tuple[str, str, str]]] = {}
    for wave in plan.waves:
        switched |= set(wave.nodes)
        kept = [w for w in wave.moved if (w.key in rides if rides is not None
                                          else served_by_bridge(w, table, fleet.target))]
        converted = [w for w in wave.moved if w not in kept]
        candidates = carried + kept
        ready = [w for w in candidates if w.eligible <= switched]
        carried = [w for w in candidates if not w.eligible <= switched]
        moved = sorted(converted + ready, key=lambda w: (w.risk, w.label))
        waves.append(replace(wave, moved=tuple(moved)))
        bridged[wave.number] = frozenset(w.key for w in ready)
    mapped = mapping_classes(fleet.classes)
    first = plan.waves[0].number if plan.waves else None
    return (never_switched(replace(plan, waves=tuple(waves)), carried),
            BridgePlan(bridged, not mapped, tuple(mapped), first))


NEVER_SWITCHED = "its last GPU node is never switched in this plan"


def never_switched(plan: CutoverPlan, carried: Sequence[Workload]) -> CutoverPlan:
    """`plan` with the workloads still held for the bridge after its last wave (a GPU node
    each may run on is never switched: the plan is blocked before it) listed as unconverted,
    never dropped; a plan that looked complete is blocked by them."""
    if not carried:
        return plan
    left = [Unconverted(w.kind, w.namespace, w.name, NEVER_SWITCHED) for w in carried]
    blocked = plan.blocked or "; ".join(f"{w.label}: {NEVER_SWITCHED}" for w in carried)
    return replace(plan, blocked=blocked, unconverted=tuple(sorted(
        (*plan.unconverted, *left), key=lambda u: (u.namespace, u.kind, u.name))))


def served_by_bridge(workload: Workload, table: WorkloadTable, target: TargetVersion) -> bool:
    """Whether convert's `--strategy bridge` leaves the workload unchanged."""
    from gpudra.convert.memory import convert_result
    from gpudra.convert.planner import ConvertOptions

    if workload.on_claims or workload.stays is not None:
        return False
    data = workload.original
    spec = data.get("spec")
    if data.get("kind") == "Pod" and isinstance(spec, Mapping) and "nodeName" in spec:
        # read live: the scheduler's binding, not the author's; the runbook creates the pod
        # anew without it (as the in-memory converter of the rewrite strategy judges it)
        data = {**data, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}
    result = convert_result(ConvertOptions(target, strategy="bridge"), table, data)
    return result is not None and result.strategy == "bridge"


def mapping_classes(classes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The DeviceClasses that map nvidia.com/gpu (CLUSTER009 reads them the same way)."""
    return sorted(str(dig(c, "metadata", "name")) for c in classes
                  if dig(c, "spec", "extendedResourceName") == BRIDGED_NAME)


def mapping_class(target: TargetVersion) -> dict[str, Any]:
    """The mapping class gpudra writes: the driver chart's whole-GPU selector, under a name of
    its own."""

    obj = emit.device_class_bridge(target)
    return {**obj, "metadata": {"name": MAPPING_CLASS}}


def rewritten_only(plan: CutoverPlan, bridge: BridgePlan) -> CutoverPlan:
    """The plan with each wave moving only what it converts: the quotas change for those
    alone (a bridged pod keeps `requests.nvidia.com/gpu`, which counts its claim too)."""
    waves = tuple(replace(w, moved=tuple(m for m in w.moved if m.key not in bridge.of(w.number)))
                  for w in plan.waves)
    return replace(plan, waves=waves)


def without_bridged(fleet: Fleet, bridge: BridgePlan) -> Fleet:
    """The fleet as the quotas see it: a namespace's device-plugin quota keys go with its last
    workload that is converted, but those on nvidia.com/gpu (bridged_names)."""
    bridged = frozenset().union(*bridge.bridged.values())
    return replace(fleet, workloads=tuple(w for w in fleet.workloads if w.key not in bridged))


def bridged_names(bridge: BridgePlan) -> dict[str, frozenset[str]]:
    """Per namespace holding a bridged workload, the device-plugin names whose quota keys stay:
    its pods keep asking nvidia.com/gpu, which `requests.nvidia.com/gpu` counts whether the
    device plugin or the bridge serves it (docs/facts.md); the other keys (MIG profiles) go
    with the namespace's last converted workload."""
    return {namespace: frozenset({BRIDGED_NAME}) for namespace, _, _ in
            frozenset().union(*bridge.bridged.values())}


def split(moved: Sequence[Workload], bridged: frozenset[tuple[str, str, str]]
          ) -> tuple[tuple[Workload, ...], tuple[Workload, ...]]:
    """(converted, bridged) of a wave's moving workloads."""
    return (tuple(w for w in moved if w.key not in bridged),
            tuple(w for w in moved if w.key in bridged))


BRIDGED = "bridged"    # wave-N/bridged/{replace,recreate}/: the unchanged workloads, as exported
MAPPING = "mapping"    # wave-N/mapping/: the mapping DeviceClass, in the wave that writes it
MAPPING_FILE = "deviceclass-nvidia-gpu.yaml"


def write_bridged(plan: CutoverPlan, bridge: BridgePlan, out: Path, table: WorkloadTable,
                  target: TargetVersion) -> list[InputError]:
    """Each wave's unchanged workloads under wave-N/bridged/<replace|recreate>/ (verify
    --wave-of holds the wave to them; the runbook deletes and creates the recreated kinds from
    there), and the mapping class under the first wave's mapping/ when the cluster has none.
    Returns the InputErrors of what could not be written."""
    from gpudra.convert.writer import WriteRefused, write_under
    from gpudra.cutover.manifests import export_original, mode

    errors: list[InputError] = []
    for wave in plan.waves:
        where = out / f"wave-{wave.number}"
        try:
            # every wave's folder, so its `verify --wave-of` line reads one (a wave may hold
            # no workload: the bridge holds each to the wave that switches its last node)
            (where / BRIDGED).mkdir(parents=True, exist_ok=True)
            if bridge.write_mapping and wave.number == bridge.mapping_wave:
                write_under(where / MAPPING, MAPPING_FILE,
                            dump(mapping_class(target)).encode("utf-8"))
            for workload in split(wave.moved, bridge.of(wave.number))[1]:
                exported = export_original(workload, table)
                if exported is None:
                    errors.append(InputError(None, "not a valid Kubernetes name; left out",
                                             object=workload.label))
                    continue
                write_under(where / BRIDGED / mode(workload), *exported)
        except (OSError, WriteRefused) as exc:
            reason = str(exc) if isinstance(exc, WriteRefused) else exc.strerror or str(exc)
            errors.append(InputError(str(where), f"cannot write the wave's manifests: {reason}"))
    return errors


def released(fleet: Fleet, table: WorkloadTable) -> Fleet:
    """The fleet with the workloads the rewrite cannot move (their controller reads the GPU
    limit it would remove: KServe picks an image by it) free to move where the bridge serves
    them: the bridge keeps the limit, so what reads it keeps working."""
    freed = tuple(replace(w, stays=None) if w.stays is not None
                  and served_by_bridge(replace(w, stays=None), table, fleet.target) else w
                  for w in fleet.workloads)
    return replace(fleet, workloads=freed)
