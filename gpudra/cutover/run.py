"""The cutover use case: read the fleet (cluster or `--from` files), order the waves, write
each wave's manifests (`--output-dir`: the layout of gpudra.cutover.manifests) and the
runbook. Read-only towards the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudra.convert.records import Strategy
from gpudra.cutover.bridge import (
    BridgePlan, bridged_names, check_strategy, plan_bridge, released, rewritten_only,
    without_bridged, write_bridged,
)
from gpudra.cutover.bridge_context import REWRITE, fleet_mix, read_context, wave_notes
from gpudra.cutover.pools import Fleet, build_fleet
from gpudra.cutover.manifests import quota_changes, write_waves
from gpudra.cutover.namespaces import finished_namespaces
from gpudra.cutover.rides import find_rides, plan_rides, release, rider_notes
from gpudra.cutover.runbook import RENDERERS, Runbook
from gpudra.cutover.steps import WaveContext
from gpudra.cutover.waves import CutoverPlan, order_waves
from gpudra.dra.strategy_advice import bridge_advice
from gpudra.dra.versions import DEFAULT, live_target
from gpudra.errors import UsageError
from gpudra.results.model import ClusterRead, ExitCode, InputError, NotRead
from gpudra.k8s.objects import SourceObject
from gpudra.run_context import RunContext
from gpudra.k8s.workloads import WorkloadTable
from gpudra.report.formats import Kind, RenderOptions, render_with
from gpudra.sources.live import ClusterSource
from gpudra.sources.exported import ExportedCluster
from gpudra.sources.live_session import cluster_session

if TYPE_CHECKING:
    from gpudra.cluster.listing import ProgressHook
    from gpudra.cluster.records import ServerVersion


@dataclass(frozen=True)
class CutoverRequest:
    # its target: None for the live cluster's release, DEFAULT for --from
    context: RunContext = field(default_factory=RunContext)
    sources: Sequence[str] = ()       # --from files; empty: the cluster
    pool_label: str | None = None
    max_wave_nodes: int | None = None
    output_dir: Path | None = None
    strategy: Strategy = Strategy.REWRITE  # gpudra.cutover.bridge


@dataclass(frozen=True)
class CutoverResult:
    plan: CutoverPlan
    fleet: Fleet
    errors: tuple[InputError, ...]
    read: int
    output_dir: Path | None = None
    context: WaveContext = WaveContext()  # what the runbook's steps need besides the plan
    cluster: ClusterRead | None = None    # live: the cluster read, and when
    bridge: BridgePlan | None = None      # --strategy bridge: what each wave leaves unchanged

    @property
    def pools(self) -> dict[str, int]:
        return pool_sizes(self.fleet)

    def exit_code(self) -> ExitCode:
        """3 when an input could not be read (or nothing was); 1 when no safe order exists."""
        if self.errors or self.read == 0:
            return ExitCode.INPUT_ERROR
        return ExitCode.OK if self.plan.complete else ExitCode.FINDINGS


def run_cutover(request: CutoverRequest, *, on_page: ProgressHook | None = None
                ) -> CutoverResult:
    check_strategy(request.strategy, request.context.target or DEFAULT)
    if request.max_wave_nodes is not None and request.max_wave_nodes < 1:
        raise UsageError("--max-wave-nodes must be 1 or more")
    out = request.output_dir
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--output-dir {out}: must be a new or empty directory")
    config = request.context.config
    table = WorkloadTable().with_kinds(config.workloads)
    errors: list[InputError] = []
    target = request.context.target
    reads: list[ClusterRead] = []  # the cluster, when one is read
    unread: list[NotRead] = []     # refused reads that only feed the notes
    if request.sources:
        objects, read = _read_files(request.sources, errors, table)
    else:
        objects, read, version = _read_cluster(request, table, errors, on_page, reads, unread)
        target = target or live_target(version.minor, version.git_version)
    target = target or DEFAULT
    check_strategy(request.strategy, target)  # the live cluster's release, once read
    fleet = build_fleet(objects, table, request.pool_label, target,
                        config.vouch_set(request.context.day))
    rides: dict[tuple[str, str, str], str] = {}
    if request.strategy == "bridge":
        fleet = released(fleet, table)
    else:  # the claims strategy on 1.37+: what convert blocks for its controller rides the bridge
        rides = find_rides(fleet, table)
        fleet = release(fleet, rides)
    if request.pool_label and not any(request.pool_label in n.labels for n in fleet.nodes):
        raise UsageError(f"--pool-label {request.pool_label}: no GPU node has this label")
    result = order_waves(fleet, table, request.max_wave_nodes)
    bridge = None
    if request.strategy == "bridge":
        result, bridge = plan_bridge(result, fleet, table)
    elif rides:
        result, bridge = plan_rides(result, fleet, table, rides)
    # under the bridge, only what a wave converts changes its manifests and quotas
    rewritten = result if bridge is None else rewritten_only(result, bridge)
    quotas = (quota_changes(rewritten, fleet) if bridge is None else
              quota_changes(rewritten, without_bridged(fleet, bridge), bridged_names(bridge)))
    # the recommendation is for those not on the bridge already
    advice = (bridge_advice(target, fleet_mix(fleet)) if bridge is None or rides else None)
    finished = finished_namespaces(result, fleet)
    if rides:  # the claims strategy's guard would refuse the riders' pods (rides.GUARD_NOTE)
        riding = {namespace for namespace, _, _ in rides}
        finished = {n: kept for n, names in finished.items()
                    if (kept := tuple(x for x in names if x not in riding))}
    notes = around_waves(objects, fleet, result, request.strategy, unread)
    if rides:
        notes = rider_notes(objects, fleet, result, rides, notes)
    context = WaveContext(fleet.plugin_pods, {n: len(c) for n, c in quotas.items() if c},
                          bridge, notes=notes, advice=advice, finished=finished)
    if out is not None:
        from gpudra.convert.writer import WriteRefused, write_under

        out.mkdir(parents=True, exist_ok=True)  # the runbook is written even with no wave
        errors += write_waves(rewritten, quotas, out, table, target, request.context)
        if bridge is not None:
            errors += write_bridged(result, bridge, out, table, target)

        try:
            # As -o markdown renders it: names escaped and credentials redacted.
            text = render_with(RENDERERS["markdown"], Kind.RUNBOOK, "markdown",
                               Runbook(result, str(out), pool_sizes(fleet), context,
                                       reads[0] if reads else None), RenderOptions())
            write_under(out, "runbook.md", text.encode("utf-8"))
        except (OSError, WriteRefused) as exc:
            reason = str(exc) if isinstance(exc, WriteRefused) else exc.strerror or str(exc)
            errors.append(InputError(str(out / "runbook.md"), f"cannot write: {reason}"))
    return CutoverResult(result, fleet, tuple(errors), read, out, context,
                         reads[0] if reads else None, bridge)


def around_waves(objects: list[dict[str, Any]], fleet: Fleet, plan: CutoverPlan,
                 strategy: str = REWRITE, unread: Sequence[NotRead] = ()
                 ) -> dict[int, tuple[str, ...]]:
    """Per wave number, what the switch changes around its pods (gpudra.cutover.bridge_context);
    cluster-wide set-up is said in the first wave that switches nodes, and so is each read the
    notes needed that was refused (`unread`: what those notes lack)."""
    context = read_context(objects, fleet)
    first = next((w.number for w in plan.waves if w.nodes), None)
    notes = {w.number: wave_notes(context, w, fleet, strategy, w.number == first)
             for w in plan.waves}
    said = first if first is not None else next((w.number for w in plan.waves), None)
    if said is not None and unread:
        notes[said] = (*(item.note() for item in unread), *notes[said])
    return {number: lines for number, lines in notes.items() if lines}


def pool_sizes(fleet: Fleet) -> dict[str, int]:
    return {name: len(nodes) for name, nodes in fleet.pools().items()}


def _read_files(sources: Sequence[str], errors: list[InputError], table: WorkloadTable
                ) -> tuple[list[dict[str, Any]], int]:
    from gpudra.sources.files import FileSource
    from gpudra.sources.shapes import well_formed_items

    source = FileSource(list(sources), ())
    objects: list[dict[str, Any]] = []
    # An export is judged as the cluster's objects are: each through its kind's reader.
    for item in well_formed_items(source.items(), errors, table):
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, SourceObject) and not item.listing:
            objects.append(dict(item.data))
    if source.stats.files == 0 and not errors:
        raise UsageError(f"--from {', '.join(sources)}: no YAML or JSON files found")
    return top_owners(objects, table), source.stats.files


def top_owners(objects: list[dict[str, Any]], table: WorkloadTable) -> list[dict[str, Any]]:
    """What the live reader makes of `objects` (an export): each workload once, at its top
    owner, its children (a CronJob's or a JobSet's Jobs, a Deployment's ReplicaSets, a
    LeaderWorkerSet's StatefulSets, an InferenceService's Deployment, the pods of any) left out,
    and what it does not read dropped. The export is served to that very reader, so a file
    plans exactly what the cluster it was read from would. `objects` were judged by their
    typed readers (with the file and line of each refusal) and are not judged again."""

    # ExportedCluster reads exported objects with resource types of its own: a ClusterReader
    # in all but the name of that type.
    source = ClusterSource(ExportedCluster(objects), table,  # type: ignore[arg-type]
                           command="cutover", judged=True)
    return [dict(item.data) for item in source.items() if isinstance(item, SourceObject)]


def _read_cluster(request: CutoverRequest, table: WorkloadTable, errors: list[InputError],
                  on_page: ProgressHook | None, reads: list[ClusterRead],
                  unread: list[NotRead]) -> tuple[list[dict[str, Any]], int, ServerVersion]:
    """The cluster's objects, how many were read, and its version (gpudra.cluster
    ServerVersion: the converted manifests are for its release unless --target-version says
    otherwise); which cluster and when, into `reads`; the refused reads that only feed the
    notes, into `unread`."""

    with cluster_session(request.context.cluster) as session:
        reads.append(session.read)
        version = session.cluster.server_version()
        # refused before anything else is read: the release has no bridge
        check_strategy(request.strategy, request.context.target
                       or live_target(version.minor, version.git_version))
        read = session.objects(table, command="cutover", on_page=on_page)
    errors += read.errors
    unread += read.notes_unread
    return [dict(obj.data) for obj in read.objects], read.count, version
