"""The verify use case: read the cluster, judge every GPU workload and the decommission gate,
and turn the result into a report and an exit code. Streams and the terminal stay in the CLI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpudra.dra.versions import MAX_MINOR, MIN_MINOR, TargetVersion
from gpudra.errors import UsageError
from gpudra.results.model import ClusterRead, ExitCode, FailOn, InputError, Level
from gpudra.k8s.objects import as_mapping, dig
from gpudra.report.outcomes import OutcomeReport
from gpudra.results.diagnostic import as_details
from gpudra.results.outcome import GateVerdict, Outcome, WorkloadFacts
from gpudra.run_context import RunContext
from gpudra.verify.collect import ClusterState, read_cluster
from gpudra.verify.explain import live_inventory
from gpudra.verify.gate import Gate, gate_for, whole_cluster
from gpudra.verify.expected import MovedWorkload, read_wave
from gpudra.verify.judge import CLAIMS, DEVICE_PLUGIN, Verdict, judge_workload
from gpudra.verify.moved import held_to_waves
from gpudra.k8s.workloads import WorkloadTable
from gpudra.sources.live_session import cluster_session

if TYPE_CHECKING:
    from gpudra.cluster.listing import ProgressHook

_TERM = re.compile(r"^\s*(?P<not>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
                   r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9_.-]*))?\s*$")


@dataclass(frozen=True)
class VerifyRequest:
    context: RunContext = field(default_factory=RunContext)  # its target is the cluster's own
    selector: str | None = None    # a label selector on the workloads (their own labels)
    decommission: bool = False     # the gate fails the run while it is not safe
    waves: tuple[str, ...] = ()    # --wave-of: wave folders applied; what they move must move


@dataclass(frozen=True)
class VerifyResult:
    verdicts: tuple[Verdict, ...]
    gate: Gate
    errors: tuple[InputError, ...]
    read: int
    decommission: bool = False
    missing: tuple[MovedWorkload, ...] = ()  # moved by a wave, but not in the cluster
    cluster: ClusterRead | None = None  # which cluster was read, and when

    def exit_code(self) -> ExitCode:
        """3 when something could not be read (or nothing was); 1 when a workload on claims
        (or the bridge) is not allocated and running, or with --decommission while the gate
        is closed; else 0."""
        if self.errors or self.read == 0:
            return ExitCode.INPUT_ERROR
        if any(v.failing for v in self.verdicts) or self.missing:
            return ExitCode.FINDINGS
        if self.decommission and not self.gate.safe:
            return ExitCode.FINDINGS
        return ExitCode.OK


def parse_selector(text: str) -> list[tuple[str, str, str | None]]:
    """`app=x,tier!=y,gpu,!legacy` as (key, op, value); op is =, != , exists or !exists."""
    terms: list[tuple[str, str, str | None]] = []
    for part in text.split(","):
        match = _TERM.match(part)
        if not part.strip() or match is None or (match["not"] and match["op"]):
            raise UsageError(f"--selector {text!r}: {part.strip() or 'an empty term'!r} is not "
                             "key=value, key!=value, key or !key")
        op = match["op"]
        if op is None:
            terms.append((match["key"], "!exists" if match["not"] else "exists", None))
        else:
            terms.append((match["key"], "!=" if op == "!=" else "=", match["value"]))
    return terms


def selected(terms: list[tuple[str, str, str | None]], labels: Mapping[str, Any]) -> bool:
    for key, op, value in terms:
        have = None if labels.get(key) is None else str(labels.get(key))
        if not {"exists": have is not None, "!exists": have is None, "=": have == value,
                "!=": have != value}[op]:
            return False
    return True


def run_verify(request: VerifyRequest, *, on_page: ProgressHook | None = None
               ) -> VerifyResult:
    """Raises UsageError for a bad selector, gpudra.cluster.ClusterError when the cluster
    cannot be reached."""

    terms = parse_selector(request.selector) if request.selector else []
    waves = tuple(read_wave(folder) for folder in request.waves)  # before any network call
    table = WorkloadTable().with_kinds(request.context.config.workloads)
    options = request.context.cluster  # None: every namespace of the current context
    whole = whole_cluster(options is None or options.all_namespaces, bool(terms))
    if request.decommission and not whole:
        raise UsageError("--decommission judges the whole cluster (the device plugin serves "
                         "every namespace): drop -n and --selector")
    with cluster_session(options) as session:
        read = session.read
        version = session.cluster.server_version()
        state = read_cluster(session.cluster, table, on_page=on_page)
        namespace = session.cluster.target.list_namespace
    result = replace(judge(state, table, release_of(version.minor), terms,
                           request.decommission, whole), cluster=read)
    if not waves:
        return result
    verdicts, missing = held_to_waves(result.verdicts, waves, namespace, not terms)
    return replace(result, verdicts=verdicts, missing=missing)


def release_of(minor: int) -> TargetVersion:
    """The release whose DRA CEL environment the cluster's scheduler uses, within the range
    gpudra knows (an older or newer server is judged by the nearest one)."""
    return TargetVersion(min(max(minor, MIN_MINOR), MAX_MINOR))


def judge(state: ClusterState, table: WorkloadTable, target: TargetVersion,
          terms: list[tuple[str, str, str | None]] | None = None, decommission: bool = False,
          whole: bool = True) -> VerifyResult:
    """Every selected workload's verdict, and the gate (judged only when `whole`: see
    gate.whole_cluster, decided once by the caller)."""
    inventory = live_inventory(state)
    workloads = [w for w in state.workloads
                 if not terms or selected(terms, as_mapping(dig(w.data, "metadata", "labels")))]
    verdicts = tuple(judge_workload(w, state, inventory, table, target) for w in
                     sorted(workloads, key=lambda w: (w.namespace or "", w.kind, w.name or "")))
    gate = gate_for(state, verdicts, whole)
    return VerifyResult(verdicts, gate, tuple(state.errors), state.read, decommission)


GATE_ID = "decommission"
MISSING = "missing"  # the state of a workload a wave moves that the cluster does not have
MISSING_REMEDY = "kubectl create -f the wave's converted/recreate/ (the runbook's step)"

_REMEDY = {
    DEVICE_PLUGIN: "gpudra convert (or gpudra cutover for the order), then apply",
    CLAIMS: "fix what the reasons name; kubectl describe pod shows the same events",
}


def as_report(result: VerifyResult) -> OutcomeReport:
    outcomes = []
    for v in result.verdicts:
        status = Level.PASS if v.ok else Level.FAIL if v.failing else Level.WARN
        remedy = None if v.ok else _REMEDY.get(v.state, _REMEDY[CLAIMS])
        outcomes.append(Outcome(
            v.workload.name or "", v.workload.kind, status, v.message, remedy, v.subject,
            as_details(v.reasons),
            workload=WorkloadFacts(v.state, v.pods, v.pods_fine, v.claims, v.claims_allocated,
                                   v.workload.kind, v.workload.name, v.workload.namespace,
                                   v.must_move)))
    for m in result.missing:
        outcomes.append(Outcome(
            m.name, m.kind, Level.FAIL, "moved by a wave that was applied, but not in the cluster",
            MISSING_REMEDY, "/".join(x for x in (m.namespace, m.kind, m.name) if x),
            as_details([f"the wave creates it on claims ({m.file}): the runbook's kubectl "
                        "create was not run, or failed"]),
            workload=WorkloadFacts(MISSING, 0, 0, 0, 0, m.kind, m.name, m.namespace or None,
                                   m.file)))
    gate = result.gate
    gate_status = (Level.UNAVAILABLE if not gate.judged else
                   (Level.WARN if gate.warnings else Level.PASS) if gate.safe
                   else Level.FAIL if result.decommission else Level.WARN)
    remedy = ("clear each line, then run gpudra verify again" if gate.judged and not gate.safe
              else "gpudra guard | kubectl apply -f - (docs/guard.md)" if gate.warnings
              else None)
    verdict = GateVerdict(Outcome(GATE_ID, "Decommission gate", gate_status, gate.message,
                                  remedy, None, as_details(gate.blockers + gate.warnings)),
                          gate.safe, gate.judged, gate.blockers, gate.warnings)
    states = {s: sum(1 for v in result.verdicts if v.state == s)
              for s in (DEVICE_PLUGIN, "bridge", CLAIMS)}
    summary = {"workloads": len(result.verdicts),
               "ok": sum(1 for v in result.verdicts if v.ok),
               "not_ok": sum(1 for v in result.verdicts if v.failing) + len(result.missing),
               **{f"on_{k.replace(' ', '_')}": n for k, n in states.items()},
               "missing": len(result.missing),
               "safe_to_remove_device_plugin": gate.safe, "objects_read": result.read}

    # The gate is a row of every human format, but in JSON only `.decommission`: it is not a
    # workload, and `.workloads` holds workloads alone.
    return OutcomeReport("verify", "workloads", tuple(outcomes), result.errors, summary,
                         FailOn.ERROR, "gpudra verify", gate=verdict, cluster=result.cluster)
