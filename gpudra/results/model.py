"""Frozen records shared by sources, rules and renderers: the public result model.

Nothing here knows how findings are produced or shown. The JSON report (docs/report-schema.json)
is a direct projection of these records, so field names are part of the public contract.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

# The one verdict scale is the diagnostic record's (Finding.diagnostic is a finding's view of
# it); its names stay importable from here, where the result records have found them. The
# record itself is imported when a finding is viewed as one: every command's start-up loads
# this module, and most never build a Diagnostic.
from gpudra.results.levels import Level as Level, Leveled as Leveled

if TYPE_CHECKING:
    from gpudra.results.diagnostic import Diagnostic


class Severity(str, enum.Enum):
    """How bad a finding is. Ordered: info < warning < error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def level(self) -> Level:
        return _SEVERITY_LEVEL[self]

    @property
    def rank(self) -> int:
        return int(self.level)


_SEVERITY_LEVEL = {Severity.INFO: Level.INFO, Severity.WARNING: Level.WARN,
                   Severity.ERROR: Level.FAIL}
# The order reports list severities in (sections, counts).
MOST_SEVERE_FIRST = (Severity.ERROR, Severity.WARNING, Severity.INFO)


class FailOn(str, enum.Enum):
    """`--fail-on`, for every command: the lowest level that makes the run exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    UNAVAILABLE = "unavailable"
    NEVER = "never"

    @classmethod
    def parse(cls, text: str) -> FailOn:
        """`--fail-on`: the severities, or preflight's words for them (`warn`, `fail`), so one
        vocabulary works for every command. Raises ValueError."""
        word = text.strip().lower()
        return cls(FAIL_ON_SYNONYMS.get(word, word))

    @property
    def threshold(self) -> Level | None:
        """The lowest level that fails; None: nothing does."""
        return _THRESHOLD[self]

    @property
    def outcome_word(self) -> str:
        """The word of verdict reports (preflight's `fail_on`): fail, warn, unavailable, ..."""
        return self.threshold.word if self.threshold is not None else self.value

    def triggered_by(self, verdict: Level | Leveled) -> bool:
        """Does a verdict at this level (a Level, or anything with a `level`: a Severity, a
        preflight CheckOutcome, a verdict command's Outcome) fail the run?"""
        level = verdict if isinstance(verdict, Level) else verdict.level
        return self.threshold is not None and level >= self.threshold


_THRESHOLD = {FailOn.ERROR: Level.FAIL, FailOn.WARNING: Level.WARN, FailOn.INFO: Level.INFO,
              FailOn.UNAVAILABLE: Level.UNAVAILABLE, FailOn.NEVER: None}
# preflight's and plan's outcome words -> audit's severities: both are accepted everywhere.
FAIL_ON_SYNONYMS = {"warn": "warning", "fail": "error"}


class ExitCode(enum.IntEnum):
    """The exit-code contract (docs/exit-codes.md)."""

    OK = 0
    FINDINGS = 1  # audit: findings at or above --fail-on; convert: changes not written
    USAGE = 2
    INPUT_ERROR = 3
    BLOCKED = 4  # convert only: nothing left to convert, but blocked workloads remain
    INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT death


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What the cluster says of a live object beyond its manifest.

    A finding about a pod template belongs to the top controller (Pod -> ReplicaSet ->
    Deployment), reported once with the pods it runs; `managed_by` names the tool that owns the
    object's manifest (Helm, Argo CD, kubectl apply): that is where a change must be made.
    """

    replicas: int | None = None   # pods it runs at once (all of its groups); None: unknown
    running_pods: int | None = 0  # None: unknown (the pods, or a kind between, were unreadable)
    nodes: tuple[str, ...] = ()   # nodes running its pods that hold device-plugin GPUs
    managed_by: str | None = None
    gpu_holders: tuple[str, ...] = ()  # for a node: its pods that hold device-plugin GPUs
    bridge_pods: int = 0  # its pods whose nvidia.com/gpu DRA serves (KEP-5004, pod status)
    controller_gone: str | None = None  # "ReplicaSet/x": its controller no longer exists
    # (namespace, kind, name) of every controller whose pods are its pods (itself, its
    # ReplicaSets, a JobSet's Jobs, ...): how verify finds a workload's pods
    members: frozenset[tuple[str, str, str]] = frozenset()

    @property
    def on_bridge(self) -> bool:
        """Every GPU pod it runs is served by DRA through a DeviceClass's extendedResourceName:
        some are, and none holds device-plugin GPUs."""
        return self.bridge_pods > 0 and not self.nodes


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem, located as precisely as the source allows.

    `line` is 1-based and points at the offending key; `path` is the dotted path to it inside the
    object (for example ``spec.template.spec.containers[0].resources.limits``).
    """

    rule: str
    severity: Severity
    message: str
    file: str | None
    line: int | None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    container: str | None = None
    resource: str | None = None
    quantity: int | None = None
    hint: str | None = None
    path: str | None = None
    template: str | None = None
    source: str = "file"          # file | cluster
    cluster: ClusterInfo | None = None  # replicas, pods, nodes, manager of a live object
    context: str | None = None  # the kube context it was read from, in a multi-cluster audit

    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file or "", self.line or 0, self.rule, self.container or "")

    @property
    def diagnostic(self) -> Diagnostic:
        """The finding as the formats every command shares read it (SARIF, JUnit, GitHub): its
        rule, level, message, place, the object it is about and the hint; what only the audit
        reports (container, resource, quantity, template, the live facts) stays here."""
        from gpudra.results.diagnostic import Diagnostic, Location

        unplaced = self.file is None and self.line is None and self.path is None
        place = None if unplaced else Location(self.file, self.line, self.path)
        subject = "/".join(x for x in (self.context, self.namespace, self.kind, self.name) if x)
        return Diagnostic(self.rule, self.severity.level, self.message, place, subject or None,
                          self.hint)


@dataclass(frozen=True, slots=True)
class Waived:
    """A finding a `.gpudra.yaml` waiver covers: not counted, but listed with the reason."""

    finding: Finding
    reason: str
    owner: str | None = None
    expires: str | None = None  # ISO date


@dataclass(frozen=True, slots=True)
class BaselineCounts:
    """`--baseline FILE`: findings it already holds (not reported) and entries now fixed."""

    file: str
    known: int
    fixed: int


@dataclass(frozen=True, slots=True)
class InputError:
    """An input that could not be read or parsed. The rest of the run goes on."""

    file: str | None
    message: str
    line: int | None = None
    object: str | None = None
    context: str | None = None  # the kube context, in a multi-cluster audit

    @property
    def where(self) -> str:
        """`file:line`, else the file, else the object: how every format names the input
        (a file name that is unsafe to print is quoted, gpudra.printable); in a multi-cluster
        audit after the context it belongs to."""
        from gpudra.printable import file_name

        if self.file and self.line:
            where = f"{file_name(self.file)}:{self.line}"
        else:
            where = file_name(self.file) if self.file else self.object or ""
        if self.context is not None:
            return f"{self.context}: {where}" if where else self.context
        return where or "-"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A document that was read but is no Kubernetes object (a CI, values or tool config
    file): not audited or converted as one, counted, and listed with -v."""

    file: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    """A workload object that runs GPU pods, and which route it uses today."""

    file: str | None
    kind: str
    name: str | None
    namespace: str | None
    device_plugin: bool
    dra: bool
    source: str = "file"
    bridge: bool = False  # asks the device plugin's name, which DRA serves (live pods show it)
    # NVIDIA devices it asks the device plugin for, per replica, as written (the counts its
    # GPU101-GPU103 findings carry); None when a count is not a whole number or it has none
    gpus: int | None = None
    context: str | None = None  # the kube context, in a multi-cluster audit
    # A custom resource that gpudra's controller registry does not list (docs/controllers.md):
    # convert blocks it unless .gpudra.yaml vouches for the kind (then `vouched`).
    unchecked: bool = False
    vouched: bool = False

    @property
    def state(self) -> str:
        """device_plugin, bridge or claims: how the migration summary counts it."""
        if self.bridge:
            return "bridge"
        return "claims" if self.dra and not self.device_plugin else "device_plugin"


@dataclass(frozen=True, slots=True)
class NotRead:
    """A cluster-scoped read that a namespaced role may not make (`audit -n NS`): a normal
    limit of such a role, not an input error; `adds` says what the read would have added.
    `notes_only`: a refused read the command makes only for notes (live_reads.Read.notes_only),
    never an input error, whatever the scope."""

    object: str
    message: str
    adds: str
    notes_only: bool = False

    def note(self) -> str:
        """The one line a command's notes say for it."""
        return f"not read (forbidden): {self.object} — {self.adds}"


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """Catalogue entry of a rule: what `gpudra rules` and `gpudra explain` print."""

    id: str
    name: str
    severity: Severity
    summary: str
    explanation: str
    hint: str
    category: str


@dataclass(frozen=True)
class ClusterAudit:
    """One cluster of a multi-cluster audit: its report, or (`error`) why it could not be read
    at all; such a cluster's report is empty but for that error."""

    name: str  # the kube context
    report: Report
    error: str | None = None


@dataclass(frozen=True)
class Report:
    """Everything one audit produced. Renderers read only this."""

    findings: tuple[Finding, ...]
    errors: tuple[InputError, ...]
    workloads: tuple[WorkloadStatus, ...]
    files_scanned: int
    documents_parsed: int
    suppressed: int
    rules: tuple[RuleInfo, ...]
    disabled_rules: frozenset[str] = field(default_factory=frozenset)
    source: str = "file"      # file | cluster
    objects_read: int = 0     # live objects read (cluster source)
    not_read: tuple[NotRead, ...] = ()  # refused cluster-scoped reads of a namespaced role
    skipped: tuple[Skipped, ...] = ()  # documents that are no Kubernetes objects
    waived: tuple[Waived, ...] = ()  # findings .gpudra.yaml waivers cover
    baseline: BaselineCounts | None = None  # --baseline: what it held back
    # A multi-cluster audit: each cluster's own report, in the order asked for; the fields
    # above then hold all of them together, each finding and error with its context.
    clusters: tuple[ClusterAudit, ...] = ()
    cluster_read: ClusterRead | None = None  # a live audit: the cluster read, and when
    advice: str | None = None  # the strategy recommendation (gpudra.dra.strategy_advice)

    @property
    def nothing_read(self) -> bool:
        """Nothing could be read: such a run never passes (exit 3)."""
        return self.files_scanned == 0 and self.objects_read == 0

    @property
    def nothing_read_message(self) -> str:
        if self.source == "cluster":
            return "nothing could be read from the cluster"
        return "no manifests found (looked for *.yaml, *.yml, *.json)"

    def counts_by_severity(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def exit_code(self, fail_on: FailOn) -> ExitCode:
        """An unreadable input or an empty scan wins over findings: the result is incomplete."""
        if self.errors or self.nothing_read:
            return ExitCode.INPUT_ERROR
        if any(fail_on.triggered_by(f.severity) for f in self.findings):
            return ExitCode.FINDINGS
        return ExitCode.OK


@dataclass(frozen=True, slots=True)
class ClusterRead:
    """Which cluster a live report read, and when: every live report names it in each of its
    formats, so a report pasted into a ticket says where it came from.

    Built by gpudra.cluster.records.cluster_read from the connection; `server` is already
    redacted (no userinfo, no token), so it may be shown anywhere."""

    context: str | None  # the kubeconfig context; None: the in-cluster service account
    server: str          # the API server URL, credentials redacted
    read_at: str         # when the read began, UTC ISO 8601 to the second: 2026-12-07T13:04:27Z

    @property
    def who(self) -> str:
        return f'context "{self.context}"' if self.context is not None else \
            "the in-cluster service account"

    def describe(self) -> str:
        """`cluster: context "prod" (https://api.example:6443), read 2026-12-07T13:04:27Z`."""
        return f"cluster: {self.who} ({self.server}), read {self.read_at}"

    def as_data(self) -> dict[str, str | None]:
        """The JSON form, one key `cluster` of every live JSON report."""
        return {"context": self.context, "server": self.server, "read_at": self.read_at}
