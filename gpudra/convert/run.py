"""The convert use case: a request in, files written (or a diff or a check planned), a result
out. Nothing here prints: the CLI writes the converted stream, the diff, the summary and the
errors from the result (gpudra.cli.convert), and cutover reads the result itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from gpudra.convert import journal
from gpudra.convert.converter import ConvertReport, FileChange, convert_paths
from gpudra.convert.from_cluster import export_cluster
from gpudra.convert.planner import ConvertOptions
from gpudra.convert.records import ConvertRequest, Strategy, WorkloadResult
from gpudra.convert.summary import ConvertSummary
from gpudra.convert.writer import PlannedWrites, WriteRefused, remove_stale_temps, write_under
from gpudra.dra.selectors import min_memory_selector, product_prefix_selector
from gpudra.dra.versions import DEFAULT, TargetVersion, live_target
from gpudra.errors import UnreadableInputError, UsageError
from gpudra.kustomize import KUSTOMIZATION_FILES
from gpudra.kustomize.tree import real_roots
from gpudra.results.model import ClusterRead, ExitCode, InputError
from gpudra.k8s.objects import plural
from gpudra.printable import quote_name
from gpudra.k8s.quantity import parse_quantity
from gpudra.sources.file_bytes import read_regular
from gpudra.k8s.workloads import WorkloadTable
from gpudra.dra.cel_errors import CelError
from gpudra.dra.selector_check import selector_problems


def build_options(request: ConvertRequest) -> ConvertOptions:
    """Validate every option before any file is read: bad input loses nothing."""
    target = request.context.target or DEFAULT
    if request.strategy is Strategy.BRIDGE:
        support = target.supports("extendedResourceName")
        if not support.available:
            raise UsageError(f"--strategy bridge needs DeviceClass.extendedResourceName, which "
                             f"Kubernetes {target} does not have (1.34+)")
        if not support.default_on:
            # Left-alone workloads would have nothing to serve them while the gate is off.
            raise UsageError(f"--strategy bridge: on Kubernetes {target} the DRAExtendedResource "
                             "gate is alpha and off by default; if your cluster enables it, "
                             "pass --target-version 1.36 (the objects are the same)")
    if request.admin_access and not target.supports("adminAccess").default_on:
        raise UsageError(f"--admin-access: on Kubernetes {target} the DRAAdminAccess gate is "
                         "alpha and off by default (beta and on from 1.34); if your cluster "
                         "enables it, pass --target-version 1.34 or newer")
    if request.output_dir and (request.diff or request.check):
        # --diff and --check go together (print the diff, exit 1 on changes), as in black/ruff.
        raise UsageError("--output-dir cannot be combined with --diff or --check")
    if request.output_dir is not None:
        _check_output_dir(request.output_dir, request.paths)
    if "-" in request.paths and len(request.paths) > 1:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    if "-" in request.paths and (request.output_dir or request.claims_file):
        raise UsageError("--output-dir and --claims-file need files, not '-'")
    if request.claims_file is not None and ("/" in request.claims_file or
                                            not request.claims_file.endswith((".yaml", ".yml"))):
        raise UsageError("--claims-file must be a file name ending in .yaml or .yml")
    if request.claims_file in KUSTOMIZATION_FILES:  # it would list itself, the claims nowhere
        raise UsageError(f"--claims-file {request.claims_file}: that is the name of a "
                         "kustomization; choose another name")
    checked = list(request.selectors)
    if request.min_memory is not None:
        if parse_quantity(request.min_memory) is None:
            raise UsageError(f"--min-memory {request.min_memory!r} is not a quantity (e.g. 40Gi)")
        checked.append(min_memory_selector(request.min_memory))
    if request.product is not None:
        checked.append(product_prefix_selector(request.product))
    if checked:  # the CEL engine costs ~25 ms to import: only when there is CEL to check
        _check_selectors(checked, len(request.selectors), target)
    return ConvertOptions(target=target, claim_mode=request.claim_mode.value,
                          strategy=request.strategy.value,
                          keep_node_selectors=request.keep_node_selectors,
                          add_toleration=request.add_toleration is not False,
                          keep_device_plugin_quota=request.keep_device_plugin_quota,
                          keep_quota_names=request.keep_quota_names,
                          selectors=tuple(request.selectors), min_memory=request.min_memory,
                          product=request.product, admin_access=request.admin_access)


def _check_output_dir(out: Path, paths: tuple[str, ...]) -> None:
    """--output-dir must not hold an input: the copies would replace the user's files there
    (`convert m/gpu --output-dir m` would write m/gpu's copies over m's own files)."""
    real_out = os.path.realpath(out)
    for raw in paths:
        if raw == "-":
            continue
        real = os.path.realpath(raw)
        if real == real_out or real.startswith(real_out.rstrip(os.sep) + os.sep):
            raise UsageError(f"--output-dir {quote_name(str(out))} holds the input "
                             f"{quote_name(raw)}: its copies would replace files there; "
                             "choose a directory outside the inputs")


def _check_selectors(selectors: list[str], from_user: int, target: TargetVersion) -> None:
    from gpudra.dra.cel import compile_selector

    for index, expression in enumerate(selectors):
        origin = f"--selector #{index + 1}" if index < from_user else "selector"
        try:
            compile_selector(expression, target)
        except CelError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise UsageError(f"{origin}: {exc}{hint}") from None
        # Valid CEL can still be wrong for the driver: never write what `audit` would flag.
        problems = selector_problems(expression, nvidia_class=True)
        if problems:
            raise UsageError(f"{origin}: {problems[0].message}")


Note = Callable[[str], None]  # one line for the user as it happens (the CLI: on stderr)


@dataclass(frozen=True)
class ConvertResult:
    """What a run did. `report` is None when --from-cluster found nothing to export: then
    `exported` holds what could not be read and `skipped` the GPU pods left out (and why)."""

    request: ConvertRequest  # as run: each path once; --from-cluster: the exported tree
    report: ConvertReport | None
    summary: ConvertSummary | None
    exit_code: ExitCode
    exported: tuple[InputError, ...] = ()
    skipped: tuple[WorkloadResult, ...] = ()

    @property
    def errors(self) -> tuple[InputError, ...]:
        """Every input or write error, in the order they are reported."""
        return self.exported if self.report is None else self.report.errors


def _deliver(report: ConvertReport, request: ConvertRequest, note: Note
             ) -> tuple[list[InputError], set[str]]:
    """Write the converted text where the request says (a copy, the files themselves; stdin's
    text, a diff or a check write nothing: the caller shows them); returns the write errors and
    unwritten files."""
    if request.paths == ("-",) or request.diff:
        return [], set()
    if request.output_dir is not None:
        return _write_copy(report, request, request.output_dir)
    if not request.check:
        return _write_in_place(report, request, note)
    return [], set()


def convert(request: ConvertRequest, *, stdin: Callable[[], bytes] | None = None,
            note: Note = lambda line: None,
            on_finished: Callable[[int], None] = lambda written: None) -> ConvertResult:
    """Plan and write what `request` asks. Raises UsageError for bad options (before anything
    is read), ConfigError for a bad config, a ClusterError when --from-cluster cannot read the
    cluster; every other problem is an error of the result. `note` hears what the user must
    know as it happens (a run interrupted while writing); `on_finished`, the number of files
    an interrupted run had left, written first (the CLI says so unless -q)."""
    request = replace(request, paths=distinct_paths(request.paths))
    config = request.context.config
    today = request.context.day
    options = replace(build_options(request), waivers=config.waiver_set(today),
                      vouches=config.vouch_set(today))
    table = WorkloadTable().with_kinds(config.workloads)
    exported: tuple[InputError, ...] = ()
    skipped: tuple[WorkloadResult, ...] = ()
    reads: list[ClusterRead] = []  # --from-cluster: which cluster, and when
    if request.context.cluster is not None:
        exported, skipped, count, tainted, version = export_cluster(request, table, reads)
        if request.context.target is None:  # written for the release the cluster runs
            live = live_target(version.minor, version.git_version)
            options = replace(options, target=build_options(
                replace(request, context=replace(request.context, target=live))).target)
        if request.add_toleration is None:  # the cluster says whether pods need it
            options = replace(options, add_toleration=tainted)
        if count == 0:  # nothing written: nothing to convert
            return ConvertResult(request, None, None,
                                 ExitCode.INPUT_ERROR if exported else ExitCode.OK,
                                 exported, skipped)
        # The exported tree is converted in place, as any tree in --output-dir would be.
        request = replace(request, paths=(str(request.output_dir),), output_dir=None)
    resumed: list[InputError] = []
    if request.paths != ("-",) and request.context.cluster is None:
        in_place = not (request.diff or request.check or request.output_dir)
        resumed = _finish_interrupted(request, on_finished) if in_place else \
            _interrupted_run(request)
    report = convert_paths(request.paths, options, table=table,
                           excludes=(*config.exclude, *request.excludes),
                           claims_file=request.claims_file, stdin=stdin,
                           leave_out=_copy_inside(request),
                           keep_inputs=request.output_dir is not None)
    if exported or skipped or resumed:
        report = replace(report, errors=exported + tuple(resumed) + report.errors,
                         results=skipped + report.results)
    write_errors, unwritten = _deliver(report, request, note)
    if write_errors:
        report = replace(report, errors=report.errors + tuple(write_errors),
                         unwritten=frozenset(unwritten))
    written = not (request.diff or request.check) and request.paths != ("-",)
    summary = ConvertSummary(report, written=written, with_diffs=request.diff,
                             cluster=reads[0] if reads else None)
    return ConvertResult(request, report, summary, _exit_code(report, request))


def distinct_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """`paths` without those another one covers (`t/sub` after or before `t`, `t` twice, a
    file under a directory given): each file is planned once, whatever names it."""
    real = {raw: os.path.realpath(raw) for raw in paths if raw != "-"}
    directories = [r for r in real.values() if os.path.isdir(r)]
    kept: list[str] = []
    seen: set[str] = set()
    for raw in paths:
        if raw == "-":
            kept.append(raw)
            continue
        path = real[raw]
        if path in seen or any(path.startswith(d.rstrip(os.sep) + os.sep)
                               for d in directories if d != path):
            continue
        seen.add(path)
        kept.append(raw)
    return tuple(kept)


def _copy_inside(request: ConvertRequest) -> str | None:
    """--output-dir when it lies inside a scanned directory: the copy an earlier run wrote
    there is output, never input (a second run would convert the copy and copy it again)."""
    if request.output_dir is None:
        return None
    out = Path(os.path.realpath(request.output_dir))
    for raw in request.paths:
        root = Path(os.path.realpath(raw)) if raw != "-" else None
        if root is not None and root.is_dir() and out != root and out.is_relative_to(root):
            return str(out)
    return None


def _write_in_place(report: ConvertReport, request: ConvertRequest, note: Note
                    ) -> tuple[list[InputError], set[str]]:
    """Write every change, definitions before what refers to them (_write_order), under a
    journal when there are several (gpudra.convert.journal). A file that cannot be written is
    reported and the others still are, except those that depend on it. Returns the errors and
    the labels of the changes not written."""
    changes = sorted((c for c in report.changes if c.path is not None),
                     key=lambda c: _write_order(c, request.claims_file))
    roots = _write_roots(request.paths)
    writes = PlannedWrites(roots)
    for directory in {c.path.parent for c in changes if c.path is not None}:  # a killed run's temp files
        remove_stale_temps(directory)
    journal_file = None
    if len(changes) > 1:
        try:
            journal_file = journal.begin(roots, (journal.Entry(
                os.path.abspath(cast(Path, c.path)), None if c.created else journal.digest(c.old), c.new)
                for c in changes))
        except (OSError, journal.JournalRefused):
            journal_file = None  # no cache directory: the order alone keeps every state valid
    errors: list[InputError] = []
    unwritten: set[str] = set()
    blocker: str | None = None
    done = 0
    try:
        for change in changes:
            if blocker is not None:
                unwritten.add(change.label)
                errors.append(InputError(change.label, f"not written: it depends on {blocker}, "
                                         "which could not be written"))
                continue
            try:
                writes.write(cast(Path, change.path), None if change.created else change.old, change.new)
                done += 1
            except (OSError, WriteRefused) as exc:
                unwritten.add(change.label)
                reason = str(exc) if isinstance(exc, WriteRefused) else \
                    f"cannot write: {exc.strerror or exc}"
                errors.append(InputError(change.label, reason))
                if _write_order(change, request.claims_file) < _REFERRERS:
                    blocker = quote_name(change.label)
    except KeyboardInterrupt:
        if journal_file is not None and done:
            note(f"interrupted after writing {done} of {plural(len(changes), 'file')}; run "
                 "the same command again to finish")
        raise
    if journal_file is not None:
        journal.end(journal_file)
    return errors, unwritten


# Files that define objects (a --claims-file, any new file) are written first, then the
# kustomizations that list them, then the workloads that refer to them: a run stopped at any
# point leaves no reference to a template that does not exist.
_DEFINITIONS, _LISTINGS, _REFERRERS = 0, 1, 2


def _write_order(change: FileChange, claims_file: str | None) -> int:
    if change.created or (claims_file is not None and change.path is not None
                          and change.path.name == claims_file):
        return _DEFINITIONS
    if change.path is not None and change.path.name in KUSTOMIZATION_FILES:
        return _LISTINGS
    return _REFERRERS


def _write_roots(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Where convert may write, every symlink resolved: the directories given, and for a file
    given the file itself and its directory (its claims file, kustomization and the bridge
    DeviceClass go next to it)."""
    roots = []
    for path in real_roots(paths):
        roots += [path] if os.path.isdir(path) else [path, os.path.dirname(path)]
    return tuple(roots)


def _finish_interrupted(request: ConvertRequest, on_finished: Callable[[int], None]
                        ) -> list[InputError]:
    """Finish a run a kill or Ctrl-C stopped (its journal), before planning anew; what it
    could not write. `on_finished` hears how many files it wrote, when it wrote any."""
    written, problems = journal.finish(_write_roots(request.paths))
    if written:
        on_finished(written)
    return [InputError(journal.relative_label(path), problem) for path, problem in problems]


def _interrupted_run(request: ConvertRequest) -> list[InputError]:
    """--diff/--check write nothing: an unfinished run is reported, not finished."""
    roots = _write_roots(request.paths)
    try:
        path = journal.journal_path(roots)
    except OSError:
        return []  # no cache directory: no run could have left a journal
    where = journal.relative_label(str(path))
    try:
        entries = journal.journal_of(path, roots)
    except journal.JournalRefused as exc:
        return [InputError(where, f"an interrupted convert's journal: {exc}")]
    if not entries:
        return []
    return [InputError(where, f"an interrupted convert left up to "
                              f"{plural(len(entries), 'file')} to write: run `gpudra convert` "
                              "without --diff/--check to finish it")]


def _exit_code(report: ConvertReport, request: ConvertRequest) -> ExitCode:
    """What is left after this run, most urgent first: an incomplete result (3); changes that
    were not written, under --check/--diff (1); workloads only a human can convert (4)."""
    if report.errors or report.nothing_read:
        return ExitCode.INPUT_ERROR
    if (request.check or request.diff) and report.changes:
        return ExitCode.FINDINGS
    if report.blocked:
        return ExitCode.BLOCKED
    return ExitCode.OK


def stdin_result(report: ConvertReport) -> str:
    """The converted stream of `convert -`; a new file (the bridge DeviceClass) follows as more
    documents."""
    change = next((c for c in report.changes if c.label == "-"), None)
    text = change.new.decode("utf-8") if change is not None else \
        report.stdin_data.decode("utf-8", "replace")  # unchanged: echo it
    return text + "".join(("" if text.endswith("\n") else "\n") + "---\n"
                          + extra.new.decode("utf-8")
                          for extra in (c for c in report.changes if c.label != "-"))


def _write_copy(report: ConvertReport, request: ConvertRequest,
                out: Path) -> tuple[list[InputError], set[str]]:
    """Every scanned manifest (converted or not) and every new file, under `out`, at its path
    as named relative to the inputs' common directory, so two inputs never share a copy (a
    link that leads out of the tree gets its own). Returns the errors and the labels of the
    changes not written."""
    changed = {c.label: c for c in report.changes}
    base = _lexical_base(request.paths)
    errors: list[InputError] = []
    unwritten: set[str] = set()
    planned: dict[str, str] = {}  # copy -> the label it is the copy of
    sources = [(e.label, Path(e.path)) for e in report.inputs if e.path is not None]
    sources += [(c.label, c.path) for c in report.changes
                if c.path is not None and c.label not in {label for label, _ in sources}]
    for label, source in sources:
        relative = os.path.relpath(os.path.abspath(source), base)
        first = planned.setdefault(relative, label)
        if first != label:  # never one copy for two inputs, one lost while called written
            if label in changed:
                unwritten.add(label)
            errors.append(InputError(label, f"cannot write a copy: {quote_name(first)} has "
                                            f"the same copy, {relative}; not written"))
            continue
        try:
            data = changed[label].new if label in changed else read_regular(str(source))
            if not _may_replace(out / relative, data, source):
                if label in changed:
                    unwritten.add(label)
                errors.append(InputError(label, f"cannot write a copy: {quote_name(relative)} "
                                                "in --output-dir holds a file gpudra did not "
                                                "write; kept, not replaced"))
                continue
            write_under(out, relative, data)
        except (OSError, WriteRefused, UnreadableInputError) as exc:
            if label in changed:
                unwritten.add(label)
            reason = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
            errors.append(InputError(label, f"cannot write a copy: {reason}"))
    return errors, unwritten


def _may_replace(target: Path, data: bytes, source: Path) -> bool:
    """Whether the copy may go to `target`: nothing regular is there, or what is there is
    this copy already or the input itself (a copy of the input an earlier run left); anything
    else is a file of the user's, which a copy never replaces."""
    if target.is_symlink() or not target.is_file():
        return True  # nothing there; a link or a FIFO is write_under's to refuse
    existing = read_regular(str(target))
    return existing == data or existing == read_regular(str(source))


def _lexical_base(paths: tuple[str, ...]) -> str:
    """The common directory of the paths as named (a link in them is kept, not resolved: the
    copy mirrors the names the inputs were read by)."""
    roots = [path if os.path.isdir(path) else os.path.dirname(path)
             for path in (os.path.abspath(raw) for raw in paths if raw != "-")]
    return os.path.commonpath(roots) if roots else os.getcwd()
