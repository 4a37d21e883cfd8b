"""Convert a manifest tree: plan each document, edit its text, verify, and assemble new files.

Files are planned one at a time, as they are read: a file is edited before the next is read,
and its YAML node trees are let go, so memory does not grow with the number of GPU documents.
What needs the whole tree is kept as small records: the names of existing DRA objects (a
workload planned before the object with its name was read is planned again, with every such
name reserved first), the namespaces whose workloads stay on the device plugin (files with
quotas wait for every workload), new objects per directory for --claims-file, and for
kustomize trees the files the overlays read and the tree's DRA objects.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudra.convert import json_files
from gpudra.convert.assembly import FileChange, assemble, bridge_class, claims_files, \
    claims_objects, file_change, merge
from gpudra.convert.claim_index import ClaimIndex
from gpudra.convert.openshift import into_objects, objects_of
from gpudra.convert.naming import ObjectNames
from gpudra.convert.planner import ConvertOptions, ObjectPlan, Planner, WorkloadResult
from gpudra.convert.reading import Doc, File, load
from gpudra.convert.records import result_for
from gpudra.convert.spool import Spool
from gpudra.errors import UnreadableInputError
from gpudra.k8s.gpu_use import quota_path
from gpudra.kustomize import roots_among
from gpudra.results.model import InputError, Skipped
from gpudra.sources import ScanStats
from gpudra.sources.discovery import STDIN, InputFile, discover
from gpudra.sources.files import Listing, list_and_read, read_all
from gpudra.sources.reading import ReadFile
from gpudra.k8s.workloads import WorkloadTable
from gpudra.yamledit.yaml_nodes import NodeDocument
from gpudra.yamledit.textedit import Style

if TYPE_CHECKING:
    from gpudra.convert.overlay_records import Origin
    from gpudra.k8s.objects import PathT

if TYPE_CHECKING:
    from gpudra.kustomize.build import Build
    from gpudra.kustomize.tree import Tree

__all__ = ["ConvertReport", "FileChange", "convert_paths"]


@dataclass(frozen=True)
class ConvertReport:
    results: tuple[WorkloadResult, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[InputError, ...]
    files_scanned: int
    inputs: tuple[InputFile, ...] = ()
    stdin_data: bytes = b""  # what was read from '-', echoed when nothing changes
    documents_parsed: int = 0  # counted as the audit counts them (one reading of inputs)
    skipped: tuple[Skipped, ...] = ()  # documents that are no Kubernetes objects
    unwritten: frozenset[str] = frozenset()  # labels of changes a write failed or refused

    @property
    def nothing_read(self) -> bool:
        """As for an audit: a run that read nothing never passes (exit 3)."""
        return self.files_scanned == 0

    @property
    def blocked(self) -> tuple[WorkloadResult, ...]:
        return tuple(r for r in self.results if r.strategy == "blocked")


def convert_paths(paths: Iterable[str], options: ConvertOptions, *,
                  table: WorkloadTable | None = None, excludes: Iterable[str] = (),
                  claims_file: str | None = None,
                  stdin: Callable[[], bytes] | None = None,
                  leave_out: str | None = None, keep_inputs: bool = True) -> ConvertReport:
    """`leave_out`: a directory whose files are not inputs (the --output-dir of an earlier
    run inside the tree). `keep_inputs=False`: the report's `inputs` name only stdin (`-`),
    for a caller that copies no inputs: on a large tree every entry is held otherwise."""
    paths = list(paths)
    # Listed before any is planned: the kustomizations among them decide what a pass keeps.
    # On a large tree, worker processes start reading for the first pass meanwhile.
    first_stats = ScanStats()
    table = table or WorkloadTable()
    # The workers plan ahead from the start: most trees hold no kustomization, and in one
    # that does the pass takes none of those plans (_Pass.read).
    after = _ahead(options, table, ()) if claims_file is None else None
    listing = list_and_read(discover(paths, excludes, leave_out=leave_out), stats=first_stats,
                            stdin=stdin, after=after)
    with contextlib.closing(listing):
        return _converted(paths, listing, first_stats, options, table, claims_file, stdin,
                          lambda: list(discover(paths, excludes, leave_out=leave_out)),
                          keep_inputs)


def _converted(paths: list[str], listing: Listing, first_stats: ScanStats,
               options: ConvertOptions, table: WorkloadTable, claims_file: str | None,
               stdin: Callable[[], bytes] | None,
               relist: Callable[[], list[InputFile | InputError]],
               keep_inputs: bool) -> ConvertReport:
    """`relist`: the entries again, for a pass after the first (which takes the listing's
    reading): the listing lets go of its entries once the kustomizations among them are known,
    so that a large tree's entries are held only until each is read."""
    roots = roots_among(e.path for e in listing.entries if isinstance(e, InputFile) and e.path)
    listing.release_entries()
    # The kustomize model and the overlay planner are imported for a tree with a
    # kustomization only: most trees have none.
    loaded = None
    if roots:
        from gpudra.kustomize.tree import load_tree

        loaded = load_tree(paths, roots=roots)
    tree = loaded if loaded is not None and loaded.kustomizations else None
    build = None
    if tree is not None:
        from gpudra.convert.overlays import plan_overlays
        from gpudra.convert.treeview import TreeView, label_in, labels_of, with_overlay
        from gpudra.kustomize.build import Build
        from gpudra.kustomize.resource_files import file_objects

        # Once for every pass: the build depends on the tree and the files as read, and
        # nothing is written before the passes settle.
        build = Build(tree, file_objects)
        build.run()
    vetoes: dict[Origin, str] = {}
    reserved: tuple[tuple[str | None, str], ...] = ()
    started: Listing | None = listing  # the first pass's reading, begun while listing
    while True:  # each pass that plans again adds vetoes, of which there are finitely many
        run = _Pass(options, table, claims_file, tree, build, vetoes, reserved,
                    stats=first_stats if started is not None else None,
                    keep_inputs=keep_inputs or tree is not None)  # overlays label by inputs
        run.read([] if started is not None else relist(), stdin, started)
        started = None  # a later pass reads the files again
        if run.late and not reserved:
            reserved = tuple(run.existing)  # read again, every existing name reserved first
            continue
        changes, results = run.finish()
        overlay = None
        if build is None:
            break
        view = TreeView(run.members, run.seen, run.claims.objects(), paths, changes, build)
        overlay = plan_overlays(build, view, table)
        if not overlay.vetoes:
            break
        if set(overlay.vetoes) <= set(vetoes):  # a vetoed object is never converted again
            raise UnreadableInputError("kustomize overlays: planning did not settle; nothing was "
                                 "written")
        vetoes.update(overlay.vetoes)
    if overlay is not None:
        labels = labels_of(run.inputs)
        changes = with_overlay(changes, overlay, labels)
        results = [replace(r, file=label_in(labels, r.file)) for r in overlay.results] + results
    if options.strategy == "bridge" and any(r.strategy == "bridge" for r in results):
        changes.append(bridge_class(paths, options))
    errors = run.errors + (loaded.refused if loaded is not None else [])
    return ConvertReport(tuple(results), tuple(merge(changes)), tuple(errors),
                         run.stats.files, tuple(run.inputs), run.stdin_data,
                         run.stats.documents, tuple(run.stats.skipped))


@dataclass
class _Slot:
    """A file with results or a change, in reading order; `waiting` until quotas are planned."""

    position: int
    results: list[WorkloadResult]
    change: FileChange | None = None
    waiting: File | None = None


class _Pass:
    """One planning pass over the inputs, each file planned and edited as it is read."""

    def __init__(self, options: ConvertOptions, table: WorkloadTable, claims_file: str | None,
                 tree: Tree | None, build: Build | None, vetoes: dict[Origin, str],
                 reserved: Iterable[tuple[str | None, str]], *, spooled: bool = True,
                 stats: ScanStats | None = None, keep_inputs: bool = True) -> None:
        self.planner = Planner(options, table)
        self.reserved = tuple(reserved)
        # The changed files' bytes, until they are written.
        self.spool = Spool() if spooled else None
        for namespace, name in self.reserved:
            self.planner.names.reserve(namespace, name)
        self.claims_file = claims_file
        self.tree = tree
        self.vetoes = vetoes
        self.patch_files = {os.path.normpath(p) for p in tree.patch_files()} if tree else set()
        self.member_paths = {os.path.normpath(p) for p in build.files()} if build else set()
        self.members: dict[str, File] = {}  # the files the overlays read, as edited
        self.claims = ClaimIndex()  # filled for kustomize trees only
        self.seen: set[str] = set()  # every file read as text
        self.existing: list[tuple[str | None, str]] = []  # names of the DRA objects read
        self.late = False  # an existing name was handed out before its object was read
        self.staying: set[str | None] = set()
        self.slots: list[_Slot] = []
        self.for_claims: list[tuple[int, Path, list[tuple[dict[str, Any], Style]]]] = []
        self.errors: list[InputError] = []
        self.inputs: list[InputFile] = []  # with keep_inputs=False only stdin's
        self.keep_inputs = keep_inputs
        self.stats = stats if stats is not None else ScanStats()
        self.stdin_data = b""  # what was read from '-', echoed when nothing changes
        self._position = 0
        self.json_claims: list[FileChange] = []  # new claims files of JSON files, and listings

    def read(self, entries: list[InputFile | InputError], stdin: Callable[[], bytes] | None,
             started: Listing | None = None) -> None:
        """Plan and edit every file of `entries`, read here or, when `started`, taken from that
        reading (which counts into this pass's stats)."""
        # A large tree is read and pre-scanned by worker processes while this one plans; they
        # plan its GPU files too (plan_ahead), when nothing outside a file bears on its plan
        # but the names handed out before it.
        alone = self.tree is None and self.claims_file is None and not self.vetoes
        after = _ahead(self.planner.options, self.planner.table, self.reserved) \
            if alone else None
        takes = after is not None  # a started reading may bring plans a kustomize tree refuses
        if started is not None:
            started.hand_over(after)
            reading = started.reads
        else:
            reading = read_all(entries, stats=self.stats, stdin=stdin, after=after)
        with contextlib.closing(reading) as reads:
            for read in reads:
                if isinstance(read, InputError):
                    self.errors.append(read)
                    continue
                if self.keep_inputs or read.entry.path is None:
                    self.inputs.append(read.entry)
                if takes and read.ahead is not None and self._take(read, read.ahead):
                    continue
                f = load(read, self.stats, self.errors)
                if f is not None:
                    self._file(f)

    def _take(self, read: ReadFile, ahead: _Ahead) -> bool:
        """Take a worker's plan of `read` when it is the one this pass makes: when none of the
        names it handed out is taken here. The worker saw the names this pass started with
        and the file's own; this pass has those and the ones handed out since, so with its
        names free here every name comes out the same (each the first free one of its
        candidates), and so does everything else (planning reads nothing else that earlier
        files change)."""
        names = self.planner.names
        if any(names.taken(namespace, name) for _, namespace, name in ahead.names):
            return False
        self.stats.add(ahead.stats)
        self.errors += ahead.errors
        if not ahead.planned:
            return True
        position, self._position = self._position, self._position + 1
        if read.entry.path is not None:
            self.seen.add(os.path.normpath(read.entry.path))
        self._reserved(names.reserve_all(ahead.existing))
        for text, namespace, name in ahead.names:
            if names.unique(text, namespace) != name:  # impossible, as _take says why
                raise AssertionError(f"convert: {read.entry.label} planned apart named {name}")
        for namespace, modes in ahead.mig_claims.items():
            self.planner.mig_claims.setdefault(namespace, set()).update(modes)
        self._stay(ahead.results)
        change = None if ahead.new is None else \
            file_change(read.entry, read.raw, ahead.new, self.spool)
        self._keep(_Slot(position, list(ahead.results), change))
        return True

    def _file(self, f: File) -> None:
        position, self._position = self._position, self._position + 1
        if f.entry.label == STDIN:
            self.stdin_data = f.raw
        key = os.path.normpath(f.entry.path) if f.entry.path is not None else None
        if key is not None:
            self.seen.add(key)
            if key in self.member_paths:
                self.members[key] = f
        if key is not None and key in self.patch_files:
            # Kustomize patch files are partial objects, not workloads: the overlay planner
            # handles them.
            self._keep(_Slot(position, [r for doc in f.docs for r in doc.loaded]))
            self._release(f, position)
            return
        self._plan(f)
        if any(quota_path(obj) is not None for doc in f.docs if doc.nodes is not None
               for obj, _ in objects_of(doc.nodes.data)):
            # Whether a quota's device-plugin keys can go depends on every workload.
            self.slots.append(_Slot(position, [], waiting=f))
            return
        self._keep(self._edited(f, position))
        self._release(f, position)

    def _plan(self, f: File) -> None:
        objects = [data for doc in f.docs for data, _ in objects_of(doc.data)]
        self.planner.read_file(objects)
        self._reserved(self.planner.reserve_existing(objects))
        for index, doc in enumerate(f.docs):
            doc.results[:] = doc.loaded
            _plan_document(f, doc, _vetoed(self.planner.plan, f, index, self.vetoes))
        self._stay([r for doc in f.docs for r in doc.results])

    def _reserved(self, reserved: list[tuple[str | None, str, bool]]) -> None:
        """Keep the names of the existing DRA objects the planner reserved; late when one was
        handed out before (Planner.reserve_existing)."""
        self.existing += [(namespace, name) for namespace, name, _ in reserved]
        self.late = self.late or any(late for _, _, late in reserved)

    def _stay(self, results: Iterable[WorkloadResult]) -> None:
        """Note the namespaces of workloads that keep device-plugin requests."""
        self.staying.update(r.namespace for r in results
                            if r.kind and r.strategy in ("blocked", "bridge", "ignored",
                                                         "waived"))

    def _edited(self, f: File, position: int) -> _Slot:
        if f.json and self.claims_file is None:
            json_files.refuse_taken(f)
        change = assemble(f, self.claims_file, self.spool)
        if f.json and self.claims_file is None:
            self.json_claims += json_files.claims_changes(f, self.tree, self.json_claims)
        # stdin has no path: convert/run.py refuses it beside a claims file
        if self.claims_file is not None and f.entry.path is not None:
            objects = claims_objects(f)
            if objects:
                self.for_claims.append((position, Path(f.entry.path).parent, objects))
        return _Slot(position, [r for doc in f.docs for r in doc.results], change)

    def _keep(self, slot: _Slot) -> None:
        if slot.results or slot.change is not None:
            self.slots.append(slot)

    def _release(self, f: File, position: int) -> None:
        """Once `f` is edited: index its DRA objects (for overlays), let its node trees go."""
        if self.member_paths:
            self.claims.add(f, position)
        f.release_nodes()

    def finish(self) -> tuple[list[FileChange], list[WorkloadResult]]:
        """Plan the quotas, edit the files that waited for them; the pass's changes (files
        in reading order, then claims files) and results."""
        staying = frozenset(self.staying)
        for i, slot in enumerate(self.slots):
            f = slot.waiting
            if f is None:
                continue
            for index, doc in enumerate(f.docs):
                _plan_document(f, doc, _vetoed(
                    lambda file, data, base, _nodes: self.planner.plan_quota(
                        file, data, base, staying),
                    f, index, self.vetoes, report=False))
            self.slots[i] = self._edited(f, slot.position)
            self._release(f, slot.position)
        changes = [s.change for s in self.slots if s.change is not None] + self.json_claims
        per_dir: dict[Path, list[tuple[dict[str, Any], Style]]] = {}
        for _, directory, objects in sorted(self.for_claims, key=lambda c: c[0]):
            per_dir.setdefault(directory, []).extend(objects)
        changes += claims_files(per_dir, self.claims_file, {c.label for c in changes},
                                self.tree)
        return changes, [r for s in self.slots for r in s.results]


# --- planning in the worker processes that read the files -----------------------------------

@dataclass(frozen=True)
class _AheadContext:
    """What a worker needs to plan a file as the pass does."""

    options: ConvertOptions
    table: WorkloadTable
    reserved: tuple[tuple[str | None, str], ...]


@dataclass(frozen=True)
class _Ahead:
    """A file planned and edited in a worker as if it were the pass's first."""

    stats: ScanStats
    errors: tuple[InputError, ...]
    planned: bool = False  # False: nothing to plan (no GPU text, or a broken file)
    existing: tuple[tuple[str | None, str], ...] = ()  # its DRA objects' names, in order
    names: tuple[tuple[str, str | None, str], ...] = ()  # each name handed out: text, ns, name
    mig_claims: dict[str | None, set[str]] = field(default_factory=dict)
    results: tuple[WorkloadResult, ...] = ()
    new: bytes | None = None  # the file's new bytes, if it changes


class _RecordedNames(ObjectNames):
    """ObjectNames that remember what they handed out, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, str | None, str]] = []

    def unique(self, text: str, namespace: str | None) -> str:
        name = super().unique(text, namespace)
        self.log.append((text, namespace, name))
        return name


def plan_ahead(read: ReadFile, context: _AheadContext) -> _Ahead | None:
    """In a worker process: `read` planned and edited by the pass's own code, as its first
    file. None for a file with quotas: those wait for every workload (the pass plans it)."""
    try:
        return _planned_ahead(read, context)
    except Exception:  # noqa: BLE001 - the pass plans the file again and fails as it always has
        return None


def _planned_ahead(read: ReadFile, context: _AheadContext) -> _Ahead | None:
    run = _Pass(context.options, context.table, None, None, None, {}, (), spooled=False)
    names = run.planner.names = _RecordedNames()
    for namespace, name in context.reserved:
        names.reserve(namespace, name)
    f = load(read, run.stats, run.errors)
    if f is None:
        return _Ahead(run.stats, tuple(run.errors))
    if f.json:
        return None  # its claims file is a second change: the pass plans it
    run._file(f)
    if any(slot.waiting is not None for slot in run.slots):
        return None
    slot = run.slots[0] if run.slots else None
    return _Ahead(run.stats, tuple(run.errors), True, tuple(run.existing), tuple(names.log),
                  run.planner.mig_claims, tuple(slot.results) if slot else (),
                  slot.change.new if slot is not None and slot.change is not None else None)


def _ahead(options: ConvertOptions, table: WorkloadTable,
           reserved: tuple[tuple[str | None, str], ...]
           ) -> tuple[Callable[[ReadFile, _AheadContext], _Ahead | None], _AheadContext] | None:
    """read_all's `after` that has the workers plan files as a pass that starts with
    `reserved` taken would; None when the context cannot travel to them (options that hold
    something that cannot be pickled are planned here, as before)."""
    context = _AheadContext(options, table, reserved)
    try:
        pickle.dumps(context)
    except Exception:  # noqa: BLE001 - pickling fails in many ways; each means "plan here"
        return None
    return plan_ahead, context


# --- planning -------------------------------------------------------------------------------

def _vetoed(plan_one: Callable[..., ObjectPlan], f: File, index: int,
            vetoes: dict[Origin, str], report: bool = True) -> Callable[..., ObjectPlan]:
    """`plan_one`, except for objects an overlay patch vetoed: those are blocked (reported
    by the first pass only)."""
    if not vetoes or f.entry.path is None:
        return plan_one
    file = os.path.normpath(f.entry.path)

    def plan(label: str, data: Any, base: PathT, nodes: NodeDocument) -> ObjectPlan:
        reason = vetoes.get((file, index, base))
        if reason is None:
            return plan_one(label, data, base, nodes)
        if not report:
            return ObjectPlan()
        return ObjectPlan(result=result_for(label, data, "blocked", reason=reason))
    return plan


def _plan_document(f: File, doc: Doc, plan_one: Callable[..., ObjectPlan]) -> None:
    """Apply one planning pass (`Planner.plan` or a quota pass) to every object of `doc`."""
    if doc.nodes is None:
        return
    new_objects: list[dict[str, Any]] = []
    for data, base in objects_of(doc.nodes.data):
        plan = plan_one(f.entry.label, data, base, doc.nodes)
        if plan.result is not None:
            doc.results.append(plan.result)
            doc.outcomes[base] = plan.result
        doc.ops += plan.ops
        new_objects += [obj for obj, _ in plan.new_objects]
    # A Template keeps them in `objects:`, a JSON List in its items.
    inside = into_objects(doc.nodes.data, new_objects) or \
        (json_files.into_items(doc.nodes.data, new_objects) if f.json else [])
    doc.ops += inside
    if not inside:
        doc.new_objects += new_objects
