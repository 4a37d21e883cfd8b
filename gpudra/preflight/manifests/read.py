"""Read a manifest tree for the manifests tier: its objects and the audit's findings.

The audit keeps no objects, so the tree is scanned twice (once for the objects, once by the
audit); stdin is read once and replayed. Both passes share the pre-scan that skips files
without GPU or DRA content.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from gpudra.audit import AuditRequest, run_audit
from gpudra.model import InputError
from gpudra.objects import ManifestObject
from gpudra.preflight.manifests.checks import ManifestInput
from gpudra.sources.files import STDIN, ScanStats, scan


def read_manifests(request: AuditRequest,
                   stdin: Callable[[], bytes] | None = None) -> ManifestInput:
    """Objects, findings and input errors of every path in `request`; never raises for input."""
    if STDIN in request.paths:
        data = (stdin or (lambda: sys.stdin.buffer.read()))()
        stdin = lambda: data  # noqa: E731 - replay the same bytes to both passes
    stats = ScanStats()
    objects: list[ManifestObject] = []
    errors: list[InputError] = []
    excludes = (*request.config.exclude, *request.excludes)
    for item in scan(request.paths, excludes, stats=stats, stdin=stdin):
        if isinstance(item, InputError):
            errors.append(item)
        elif isinstance(item, ManifestObject):
            objects.append(item)
    report = run_audit(request, stdin=stdin)
    return ManifestInput(tuple(objects), report.findings, tuple(errors), stats.files)
