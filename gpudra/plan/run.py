"""The plan use case: read workloads and a device inventory, plan, and turn the result into a
report and an exit code. Streams and the terminal stay in the CLI.

Workloads come from a tree (converted manifests, or unconverted ones converted in memory the way
`gpudra convert` would) or from the cluster. Devices come from `--inventory` files
(ResourceSlices, or Node objects to predict devices from), from ResourceSlices or Nodes in the
tree itself, or else from the cluster (its ResourceSlices; predicted from its nodes when the
DRA driver publishes none yet).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpudra.dra.versions import DEFAULT
from gpudra.errors import UsageError
from gpudra.results.model import ClusterRead, ExitCode, FailOn, InputError, Level
from gpudra.k8s.objects import SourceObject, as_mapping, plural
from gpudra.plan.engine import PlanOptions, collector_paused, plan
from gpudra.plan.inventory import Inventory, InventoryReader
from gpudra.plan.report import NODE_SAMPLE, PlanReport, WorkloadReport
from gpudra.plan.synthesis import Shares, synthesize
from gpudra.report.outcomes import OutcomeReport
from gpudra.results.diagnostic import as_details
from gpudra.results.outcome import Outcome
from gpudra.run_context import RunContext
from gpudra.sources.files import FileSource
from gpudra.k8s.workloads import POD_NESTING_KEYS, WorkloadTable
from gpudra.dra.cel import default_engine
from gpudra.sources.live_reads import NODES, RESOURCESLICES
from gpudra.sources.live_session import cluster_session
from gpudra.k8s.gpu_use import read_object

if TYPE_CHECKING:
    from gpudra.cluster.listing import ProgressHook

_INVENTORY_KINDS = ("ResourceSlice", "Node")


@dataclass(frozen=True)
class PlanRequest:
    # the target (None: DEFAULT) is the release unconverted workloads are converted for
    context: RunContext = field(default_factory=RunContext)
    paths: Sequence[str] = ()         # a tree; empty: workloads from the cluster
    inventory: Sequence[str] = ()     # ResourceSlice and/or Node YAML files
    consumable_shares: Shares | None = None  # predicted devices: the driver's setting
    full_matches: bool = False        # every matching node per request, not a sample


@dataclass(frozen=True)
class PlanResult:
    report: PlanReport
    errors: tuple[InputError, ...]
    read: int                          # files or objects read
    cluster: ClusterRead | None = None  # the cluster read (devices or workloads), and when

    def exit_code(self) -> ExitCode:
        """3 when an input could not be read; 1 when a workload cannot be satisfied, or is
        still on the device plugin and convert cannot move it (so it cannot be proven)."""
        if self.errors or self.read == 0:
            return ExitCode.INPUT_ERROR
        if self.report.unsatisfiable or self.report.unconverted:
            return ExitCode.FINDINGS
        return ExitCode.OK


def run_plan(request: PlanRequest, *, on_page: ProgressHook | None = None) -> PlanResult:
    """Raises UsageError for bad options, gpudra.cluster.ClusterError when a cluster it needs
    cannot be read."""
    from gpudra.convert.memory import in_memory_converter
    from gpudra.convert.planner import ConvertOptions

    config = request.context.config
    table = WorkloadTable().with_kinds(config.workloads)
    target = request.context.target or DEFAULT
    errors: list[InputError] = []
    reads: list[ClusterRead] = []  # the cluster, when one is read
    if request.paths:
        from gpudra.sources.shapes import well_formed_items

        # No line index: the plan names a workload's file, never a line in it. A large tree
        # is read by worker processes from here on, all of it (plan keeps every object),
        # while this process reads the inventory: on two cores both reads take the time of
        # the longer one.
        tree = FileSource(list(request.paths), config.exclude, lines=False, read_ahead=True)
        # FileSource.items is a generator (closing stops its workers); the Source protocol
        # promises only an Iterator, hence the ignore.
        with contextlib.closing(tree.items()) as items:  # type: ignore[type-var]
            inventory = _inventory_files(request.inventory, errors, request.consumable_shares)
            with _set_aside():
                objects, read = _collected(tree, well_formed_items(items, errors, table),
                                           errors)
        if inventory is None and any(_kind(o) in _INVENTORY_KINDS for o in objects):
            inventory = _inventory_from(objects, "tree", request.consumable_shares)
        if inventory is None:
            inventory, more = _cluster_inventory(request, on_page, reads)
            errors += more
    else:
        inventory = _inventory_files(request.inventory, errors, request.consumable_shares)
        objects, read, more = _cluster_objects(request, table, on_page, reads)
        errors += more
        if inventory is None:
            inventory = _inventory_from(objects, "cluster", request.consumable_shares)
    workloads = [o for o in objects if _kind(o) not in _INVENTORY_KINDS]
    converter = in_memory_converter(ConvertOptions(target, vouches=config.vouch_set(
                                        request.context.day)), table,
                                    [_data(o) for o in workloads], live=not request.paths)
    options = PlanOptions.for_target(target, converter=converter, table=table,
                                     engine=default_engine(target),
                                     node_sample=None if request.full_matches else NODE_SAMPLE)
    return PlanResult(plan(workloads, inventory, options), tuple(errors), read,
                      reads[0] if reads else None)


def _collected(source: FileSource, items: Iterator[Any], errors: list[InputError]
               ) -> tuple[list[Any], int]:
    """The objects among `source`'s `items` and the number of files read."""
    return list(_kept(items, errors, lambda o: o)), source.stats.files


def _kept(items: Iterator[Any], errors: list[InputError],
          keep: Callable[[SourceObject], Any]) -> Iterator[Any]:
    """The objects among `items`, each as `keep` makes it, as they come; errors into
    `errors`."""
    for item in items:
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, SourceObject) and not item.listing:
            yield keep(item)


@contextlib.contextmanager
def _set_aside() -> Iterator[None]:
    """What exists now (an inventory of 100,000 devices is millions of objects) is left out
    of the cyclic collector's passes inside: collections while the tree is read then cost what
    the tree's own objects cost (collected as usual, also in worker processes, which inherit
    the frozen state instead of copying pages the collector would touch)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _inventory_files(files: Sequence[str], errors: list[InputError],
                     shares: Shares | None) -> Inventory | None:
    if not files:
        return None
    # Only the data: the line index and text of 100,000 devices' documents would double the
    # peak memory and the collector's work, and no report points into an inventory file. Each
    # object becomes devices as it is read (and is then let go), while workers parse the rest.
    from gpudra.sources.shapes import well_formed_items

    with collector_paused():
        source = FileSource(list(files), (), lines=False)
        inventory = _inventory_from(_lists_after_their_text(_kept(
            well_formed_items(source.items(), errors, None, _INVENTORY_KINDS), errors,
            lambda o: (o.data, o.in_list))), "file", shares)
        if source.stats.files == 0 and not errors:
            raise UsageError(f"--inventory {', '.join(files)}: no YAML or JSON files found")
        return inventory


def _lists_after_their_text(objects: Iterator[tuple[dict[str, Any], bool]]
                            ) -> Iterator[dict[str, Any]]:
    """The data of `objects` ((data, an item of a List?)) in their order, a List's items held
    back until the reading has moved past the List: its file's text (170 MB for a JSON List of
    100,000 devices) is let go before they become devices, and the List holds every item until
    then anyway. Only data is held here: an object holds its document's text."""
    held: list[dict[str, Any]] = []
    for data, in_list in objects:
        if in_list:
            held.append(data)
            continue
        yield from held
        held.clear()
        yield data
    yield from held


def _inventory_from(objects: Iterable[Any], source: str, shares: Shares | None) -> Inventory:
    """ResourceSlices as they are, plus devices predicted for nodes that publish none."""
    reader = InventoryReader()
    nodes = []
    for obj in objects:
        data = _data(obj)
        reader.add(data)
        if _kind(data) == "Node":
            nodes.append(data)
    slices = reader.inventory(source)
    publishing = {d.node for d in slices.devices if d.node}
    nodes = [o for o in nodes if as_mapping(o.get("metadata")).get("name") not in publishing]
    if not nodes:
        return slices
    predicted = synthesize(nodes, shares)
    if not predicted.devices:
        return slices
    return slices.merged(predicted) if slices.devices else predicted


def _cluster_inventory(request: PlanRequest, on_page: ProgressHook | None,
                       reads: list[ClusterRead]) -> tuple[Inventory, list[InputError]]:
    """Devices of the current cluster for a tree: its ResourceSlices and Nodes (the cluster
    and the time, into `reads`)."""
    from gpudra.sources.shapes import well_formed

    errors: list[InputError] = []
    objects: list[dict[str, Any]] = []
    with cluster_session(request.context.cluster) as session:
        reads.append(session.read)
        cluster = session.cluster
        cluster.server_version()
        for read in (RESOURCESLICES, NODES):
            resource = cluster.resource(read.group, read.resource, read.versions)
            if resource is not None:
                for page in cluster.list(resource, on_page=on_page):
                    objects += well_formed(page, errors)
        errors += [InputError(None, str(p), object=p.subject) for p in cluster.errors]
    return _inventory_from(objects, "cluster", request.consumable_shares), errors


def _cluster_objects(request: PlanRequest, table: WorkloadTable, on_page: ProgressHook | None,
                     reads: list[ClusterRead]) -> tuple[list[Any], int, list[InputError]]:
    """Top-level workloads (owner-resolved: no pod counted twice), DRA objects and nodes (the
    cluster and the time, into `reads`)."""

    with cluster_session(request.context.cluster) as session:
        reads.append(session.read)
        session.cluster.server_version()
        # what a namespaced role hides is an error: plan needs every device
        read = session.objects(table, command="plan", on_page=on_page,
                               keep=lambda obj: _matters(obj, table))
    return list(read.objects), read.count, list(read.errors)


def _matters(obj: SourceObject, table: WorkloadTable) -> bool:
    """Only what plan looks at is kept: GPU workloads, DRA objects and nodes."""

    if obj.kind == "Node" or obj.group == "resource.k8s.io":
        return True
    use = read_object(table, obj.group, obj.kind, obj.data, strays=False)
    return use.device_plugin or use.dra


def _data(obj: Any) -> Mapping[str, Any]:
    return obj.data if isinstance(obj, SourceObject) else obj


def _kind(obj: Any) -> str:
    return str(_data(obj).get("kind", ""))


_REMEDIES = {
    "no-node": "compare the pod's nodeSelector and affinity with the nodes' labels",
    "competition": "add matching devices, or fewer pods placed before it need them",
    "capacity": "no node has enough matching devices for one pod: request fewer per pod, or "
                "add larger nodes",
}


def _remedy(w: WorkloadReport) -> str:
    """What to do about an unsatisfiable workload: by the kind of failure where it is not the
    devices' fault; else the JSON, named only where it says more than the table (which
    selector term rejects which devices)."""
    if w.failure_kind in _REMEDIES:
        return _REMEDIES[w.failure_kind]
    if any(line not in (w.reason or "") for r in w.requests for line in r.rejections):
        return "gpudra plan -o json shows which selector term rejects which devices"
    return "widen the claim's selectors or class, or add devices that match them"


def _role(pod_group: str) -> str:
    """`spec.pytorchReplicaSpecs.Worker.template.spec` -> `Worker` (as gpudra.k8s.workloads.pod_role
    names a pod template; here from the dotted path plan reports)."""
    parts = [p for p in pod_group.split(".") if p not in POD_NESTING_KEYS]
    return parts[-1] if parts else pod_group


def as_report(result: PlanResult) -> OutcomeReport:
    """Workloads as verdicts, for the shared report formats (the JSON is plan's own)."""
    verdicts = []
    by_node = result.report.devices.by_node
    # Devices predicted from a node still on the device plugin are marked, as the JSON's
    # `predicted` counts them (issue 36, item 5: they read like published ones).
    shown = {name: f"{name} (predicted)" if devices.predicted else name
             for name, devices in by_node.items()}
    for w in result.report.workloads:
        subject = "/".join(x for x in (w.namespace, w.kind, w.name) if x)
        several = len({r.pod_group for r in w.requests}) > 1  # Master/Worker, head/workers
        lines = [f"{_role(r.pod_group) + ' ' if several else ''}request {r.name}: {r.count} × "
                 f"{r.matching_devices} matching"
                 + (f" on {', '.join(shown.get(n, n) for n in r.nodes[:5])}" if r.nodes else "")
                 for r in w.requests]
        lines += list(w.warnings)
        message = (f"{w.pods_placed}/{plural(w.pods, 'pod')} placed" if w.satisfiable
                   else w.reason or "cannot be satisfied")
        level = Level.PASS if w.satisfiable else Level.FAIL
        verdicts.append(Outcome(w.name, w.kind, level, message,
                                None if w.satisfiable else _remedy(w), subject, as_details(lines),
                                file=w.file))
    for kind, name, namespace in result.report.unconverted:
        subject = "/".join(x for x in (namespace, kind, name) if x)
        verdicts.append(Outcome(name, kind, Level.FAIL, "still requests device-plugin GPUs and "
                                "convert cannot move it: nothing to plan",
                                "gpudra convert --diff shows why it is blocked", subject))
    # -o json prints the plan's own contract (docs/plan.md), built only then
    return OutcomeReport("plan", "workloads", tuple(verdicts), result.errors,
                         result.report.summary_json(), FailOn.ERROR, "gpudra plan",
                         plan_report=result.report, cluster=result.cluster)
