"""The rule framework: catalogue entries, checkers, and the emitter that turns hits into Findings.

A *rule* is a catalogue entry (stable id, default severity, docs, fix hint). A *checker* walks
objects for one concern and may raise several related rules in one pass (the device-request
checker looks at each container once and can raise GPU101..GPU109). Severity overrides,
disabled rules and suppression annotations are applied here, once, before a Finding exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from gpudra.controllers.registry import registry
from gpudra.dra.versions import DEFAULT, TargetVersion
from gpudra.k8s.gpu_use import ObjectUse, read_object
from gpudra.results.model import Finding, InputError, RuleInfo, Severity, WorkloadStatus
from gpudra.k8s.objects import PathT, SourceObject, TemplateText, format_path
from gpudra.sources import FileTree
from gpudra.results.vouches import VouchSet
from gpudra.k8s.workloads import PodSpecRef, WorkloadTable

SUPPRESS_ANNOTATION = "gpudra.io/ignore"
META_RULE = "GPU901"
_EXPLANATIONS = resources.files(__package__) / "explanations"


def rule(id: str, name: str, severity: Severity, category: str, summary: str, hint: str, *,
         explanation: str | None = None) -> RuleInfo:
    """Declare a catalogue entry. Its explanation (Markdown, shown by `gpudra explain`) is the
    file `explanations/<id>.md` beside this module, or `explanation` for a text composed of
    parts that several rules share."""
    if explanation is None:
        explanation = (_EXPLANATIONS / f"{id}.md").read_text(encoding="utf-8")
    return RuleInfo(id, name, severity, summary, explanation.strip(), hint, category)


class Checker:
    """One concern. Subclasses list the rules they may raise and override the hooks they need.

    A new instance is made for every run, so a checker may keep state across objects (for
    checks that need the whole tree, done in `finish`).
    """

    rules: tuple[RuleInfo, ...] = ()

    def check_object(self, obj: SourceObject, ctx: AuditContext) -> None:
        """Called for every object (List items included, the List itself excluded)."""

    def check_document(self, obj: SourceObject, ctx: AuditContext) -> None:
        """Called once per parsed document, for rules that read its text."""

    def check_template(self, text: TemplateText, ctx: AuditContext) -> None:
        """Called for text that cannot be parsed as manifests (Helm templates, values files)."""

    def finish(self, ctx: AuditContext) -> None:
        """Called after the last input, for checks that need the whole tree."""


@dataclass(frozen=True, slots=True)
class RuleSettings:
    disabled: frozenset[str] = frozenset()
    severities: Mapping[str, Severity] = field(default_factory=dict)


@dataclass
class AuditContext:
    """What checkers share during one run: settings, the workload table, and the results."""

    catalogue: Mapping[str, RuleInfo]
    settings: RuleSettings
    table: WorkloadTable
    target: TargetVersion = DEFAULT  # the release DRA objects are judged against (GPU611)
    findings: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    kubernetes_minor: int | None = None  # a cluster audit: the cluster's release (1.<minor>)
    inline_suppressions: bool = True  # False under --strict: annotations suppress nothing
    workloads: dict[tuple[object, ...], WorkloadStatus] = field(default_factory=dict)  # by identity
    tree: FileTree | None = None  # a file source's inputs, set once every item is read
    vouches: VouchSet | None = None  # .gpudra.yaml vouches: kinds convert may convert unchecked
    input_errors: list[InputError] = field(default_factory=list)  # found by finish() hooks
    # One-slot caches: checkers visit one object in a row. Keyed by identity of the data they
    # hold on to, so a recycled id() can never return another object's results.
    _gpu_use: tuple[Any, ObjectUse] | None = None
    _suppressions: tuple[Any, Mapping[str, str]] | None = None

    def enabled(self, rule_id: str) -> bool:
        return rule_id not in self.settings.disabled

    def gpu_use(self, obj: SourceObject) -> ObjectUse:
        """How `obj` uses GPUs (gpudra.k8s.gpu_use), read once for every checker."""
        if self._gpu_use is None or self._gpu_use[0] is not obj.data:
            self._gpu_use = (obj.data, read_object(self.table, obj.group, obj.kind, obj.data))
        return self._gpu_use[1]

    def pod_specs(self, obj: SourceObject) -> list[PodSpecRef]:
        return [pod.spec for pod in self.gpu_use(obj).pods]

    def note_workload(self, obj: SourceObject, *, device_plugin: bool = False,
                      dra: bool = False) -> None:
        key = obj.identity
        old = self.workloads.get(key)
        if old is not None:
            device_plugin, dra = device_plugin or old.device_plugin, dra or old.dra
        bridge = obj.cluster is not None and obj.cluster.on_bridge
        unchecked = registry().is_unchecked(obj.api_version, obj.kind)
        vouched = unchecked and self.vouches is not None and \
            self.vouches.vouch_for(obj.api_version, obj.kind) is not None
        self.workloads[key] = WorkloadStatus(obj.file, obj.kind, obj.name, obj.namespace,
                                             device_plugin, dra, source=obj.source,
                                             bridge=bridge and device_plugin,
                                             gpus=self.gpu_use(obj).device_plugin_gpus,
                                             unchecked=unchecked and not vouched,
                                             vouched=vouched)

    def note_variant(self, key: tuple[object, ...], *, device_plugin: bool, dra: bool) -> None:
        """Another form of the workload counted at `key` (a Kustomize overlay's patch of it):
        still one workload, on the device plugin or on DRA if either form is."""
        old = self.workloads[key]
        self.workloads[key] = replace(old, device_plugin=old.device_plugin or device_plugin,
                                      dra=old.dra or dra)

    def note_template(self, text: TemplateText) -> None:
        """Template text (a chart, a templated document) that asks the device plugin for
        devices: one workload per chart, or per file outside a chart, never on DRA."""
        where = text.chart or text.file
        self.workloads[("template", where)] = WorkloadStatus(
            where, "HelmChart" if text.chart else "Template", os.path.basename(where) or where,
            None, True, False)

    def emit(self, rule: RuleInfo, where: SourceObject | TemplateText, message: str, *,
             path: PathT = (), line: int | None = None, container: str | None = None,
             resource: str | None = None, quantity: int | None = None,
             hint: str | None = None) -> None:
        """Record a hit of `rule` (the declared constant, never its id) unless the rule is
        disabled or the object suppresses it. `hint` replaces the rule's own where the fix
        depends on the place."""
        rule_id = rule.id
        if rule_id in self.settings.disabled:
            return
        info = self.catalogue[rule_id]
        if isinstance(where, SourceObject):
            if self._is_suppressed(where, rule_id):
                self.suppressed += 1
                return
            finding = Finding(
                rule=rule_id, severity=self.settings.severities.get(rule_id, info.severity),
                message=message, file=where.file,
                line=line if line is not None else where.line_of(path),
                kind=where.kind or None, name=where.name, namespace=where.namespace,
                container=container, resource=resource, quantity=quantity, hint=info.hint,
                path=format_path(path) if path else None, template=where.template,
                source=where.source, cluster=where.cluster)
        else:
            finding = Finding(
                rule=rule_id, severity=self.settings.severities.get(rule_id, info.severity),
                message=message, file=where.file, line=line, resource=resource,
                quantity=quantity, hint=hint or info.hint, template=where.chart)
        self.findings.append(finding)

    def _is_suppressed(self, obj: SourceObject, rule_id: str) -> bool:
        if not self.inline_suppressions:
            return False
        if self._suppressions is None or self._suppressions[0] is not obj.data:
            self._suppressions = (obj.data,
                                  parse_suppressions(obj.annotations.get(SUPPRESS_ANNOTATION)))
        rules = self._suppressions[1]
        # `all` must not hide problems with the suppression itself.
        return rule_id in rules or ("all" in rules and rule_id != META_RULE)


def parse_suppressions(value: Any) -> Mapping[str, str]:
    """``"GPU101,GPU301: reason; GPU401: other reason"`` -> {rule: reason}.

    An entry without a reason suppresses nothing: the reason is what makes it reviewable.
    Malformed entries are reported by the suppression rule (GPU901).
    """
    out: dict[str, str] = {}
    for entry in split_suppression_entries(value):
        ids, sep, reason = entry.partition(":")
        if not sep or not reason.strip():
            continue
        for rule_id in ids.split(","):
            rule_id = rule_id.strip()
            if rule_id:
                out[rule_id if rule_id == "all" else rule_id.upper()] = reason.strip()
    return out


def split_suppression_entries(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    return [e.strip() for e in value.replace("\n", ";").split(";") if e.strip()]


def all_rules(checkers: Iterable[type[Checker]]) -> dict[str, RuleInfo]:
    catalogue: dict[str, RuleInfo] = {}
    for checker in checkers:
        for info in checker.rules:
            if info.id in catalogue:
                raise ValueError(f"duplicate rule id {info.id}")
            catalogue[info.id] = info
    return dict(sorted(catalogue.items()))
