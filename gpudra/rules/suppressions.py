"""GPU9xx: suppressions themselves (annotations, waivers) must be well formed and accountable."""

from __future__ import annotations

import re

from gpudra.results.model import Severity
from gpudra.k8s.objects import SourceObject
from gpudra.rules.base import (
    SUPPRESS_ANNOTATION,
    AuditContext,
    Checker,
    rule,
    split_suppression_entries,
)

GPU901 = rule(
    "GPU901", "invalid-suppression", Severity.WARNING, "meta",
    "A gpudra.io/ignore annotation is malformed, names an unknown rule, or gives no reason.",
    "Write the annotation as `RULE[,RULE]: reason`.",
)

GPU902 = rule(
    "GPU902", "expired-waiver", Severity.WARNING, "meta",
    "A .gpudra.yaml waiver is past its expires date: it suppresses nothing any more.",
    "Fix what the waiver covered, or renew it with a new `expires` date and a reason that "
    "still holds.",
)

_ID = re.compile(r"^(?:GPU\d{3}|all)$", re.IGNORECASE)


class Suppressions(Checker):
    rules = (GPU901, GPU902)

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        value = obj.annotations.get(SUPPRESS_ANNOTATION)
        if value is None:
            return
        path = ("metadata", "annotations", SUPPRESS_ANNOTATION)
        if not isinstance(value, str):
            ctx.emit(GPU901, obj, f"{SUPPRESS_ANNOTATION} must be a string", path=path)
            return
        for entry in split_suppression_entries(value):
            ids, sep, reason = entry.partition(":")
            if not sep or not reason.strip():
                ctx.emit(GPU901, obj, f"suppression {entry!r} has no reason; it suppresses "
                         "nothing", path=path)
                continue
            for rule_id in (i.strip() for i in ids.split(",") if i.strip()):
                if not _ID.match(rule_id) or (rule_id.lower() != "all"
                                              and rule_id.upper() not in ctx.catalogue):
                    ctx.emit(GPU901, obj, f"suppression names unknown rule {rule_id!r}",
                             path=path)
