"""Audit a manifest tree: source -> objects -> checkers -> Report. No CLI or terminal code here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpudra.config import Config
from gpudra.kustomize.audit import check_overlays
from gpudra.model import Finding, InputError, Report
from gpudra.objects import ManifestObject, TemplateText
from gpudra.rules import CHECKERS, AuditContext, catalogue
from gpudra.sources.files import ScanStats, scan
from gpudra.workloads import WorkloadTable


@dataclass(frozen=True)
class AuditRequest:
    paths: Sequence[str]
    config: Config = field(default_factory=Config)
    excludes: Sequence[str] = ()


def run_audit(request: AuditRequest, *, stdin: Callable[[], bytes] | None = None,
              on_file: Callable[[str], None] | None = None) -> Report:
    """Audit every input under `request.paths`. Input errors are collected, never raised."""
    rules = catalogue()
    table = WorkloadTable().with_kinds(request.config.workloads)
    ctx = AuditContext(rules, request.config.settings, table)
    checkers = [checker() for checker in CHECKERS]
    stats = ScanStats()
    errors: list[InputError] = []
    excludes = (*request.config.exclude, *request.excludes)
    read: list[str] = []

    def seen(label: str) -> None:
        read.append(label)
        if on_file is not None:
            on_file(label)

    for item in scan(request.paths, excludes, stats=stats, stdin=stdin, on_file=seen):
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, TemplateText):
            for checker in checkers:
                checker.check_template(item, ctx)
        else:
            _check(item, checkers, ctx)
    # Kustomize trees: patches the file scan cannot read as objects, and rendered overlays.
    check_overlays(request.paths, read, ctx)
    for checker in checkers:
        checker.finish(ctx)
    return Report(
        findings=tuple(sorted(_unique(ctx.findings), key=Finding.sort_key)),
        errors=tuple(errors),
        workloads=tuple(ctx.workloads.values()),
        files_scanned=stats.files,
        documents_parsed=stats.documents,
        suppressed=ctx.suppressed,
        rules=tuple(rules.values()),
        disabled_rules=request.config.settings.disabled,
    )


def _check(obj: ManifestObject, checkers: list, ctx: AuditContext) -> None:
    if not obj.in_list:
        for checker in checkers:
            checker.check_document(obj, ctx)
    if not obj.listing:
        for checker in checkers:
            checker.check_object(obj, ctx)


def _unique(findings: list[Finding]) -> list[Finding]:
    # The same key reached through two table paths must be reported once.
    return list(dict.fromkeys(findings))
