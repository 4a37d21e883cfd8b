"""Whether a repaired object is right, judged by the audit's own DRA rules (GPU601-GPU612 of
gpudra.rules.dra_objects), so that convert never reports `repair` for an object the next audit
still calls an error, or the API server still rejects (the control-plane dry-run tests hold the
rules to the server).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpudra.dra.versions import TargetVersion
from gpudra.results.model import Severity
from gpudra.k8s.objects import ManifestObject, PathT, dig
from gpudra.rules import catalogue
from gpudra.rules.base import AuditContext, RuleSettings
from gpudra.rules.dra_objects import DraObjects
from gpudra.k8s.workloads import WorkloadTable
from gpudra.yamledit.ops import Op, apply_to_data


def errors_after(document: Any, base: PathT, ops: Sequence[Op], table: WorkloadTable,
                 target: TargetVersion) -> list[str]:
    """The audit's errors on the object at `base` of `document` once `ops` are applied; the
    references between objects (GPU607) are the tree's, not the object's, and not judged."""
    data = dig(apply_to_data(document, ops), *base) if base else apply_to_data(document, ops)
    if not isinstance(data, Mapping):
        return []
    ctx = AuditContext(catalogue(), RuleSettings(), table, target)
    DraObjects().check_object(ManifestObject(dict(data), "", 1, {}, "", ()), ctx)
    return list(dict.fromkeys(f"{f.rule}: {f.message}" for f in ctx.findings
                              if f.severity is Severity.ERROR))
