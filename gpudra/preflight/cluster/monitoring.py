"""CLUSTER015: Prometheus alerting and recording rules that read device-plugin GPU metrics.

kube-state-metrics exports container requests and limits with the resource name sanitised,
so `nvidia.com/gpu` appears as `resource="nvidia_com_gpu"`; pods with claims request no such
resource (the audit rule GPU501 explains it; the matcher is shared with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.object_fields import workload_name
from gpudra.k8s.objects import as_list, dig, plural
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import PROMETHEUSRULES, ClusterSnapshot, unreadable

CLUSTER015 = check(
    "CLUSTER015", "PrometheusRules on device-plugin GPU metrics", Tier.CLUSTER,
    "Alerts and recording rules that read `nvidia_com_gpu` go quiet as pods move to claims.",
    """
**Why it matters.** kube-state-metrics reports container resource requests and limits with
the resource name sanitised, so `nvidia.com/gpu` becomes `resource="nvidia_com_gpu"` (for
example in `kube_pod_container_resource_limits`). Pods that get GPUs from claims request no
such resource: as workloads migrate, these series vanish, alerts stop firing and recording
rules report zero GPU use. gpudra reads every PrometheusRule (`monitoring.coreos.com/v1`,
Prometheus Operator) and names the rules whose expression reads those metrics (the same
matcher as the audit rule GPU501).

**Outcomes.** *pass*: the Prometheus Operator is not installed, or no rule reads the
metrics. *warn*: the message names the rules. *unavailable*: PrometheusRules could not be
listed.

**Fix.** Rebase the expressions on metrics that survive the migration: the DCGM exporter's
per-pod GPU metrics, or ResourceClaim metrics where available.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.UNAVAILABLE))


def gpu_metric_rules(rule_object: Mapping[str, Any]) -> list[str]:
    """`group/alert-or-record` of every rule whose expression reads device-plugin GPU metrics."""
    # Imported here: gpudra.rules loads every audit rule (and the CEL engine), which the
    # check catalogue and the other checks do not need.
    from gpudra.rules.monitoring import reads_gpu_metric

    hits = []
    for group in as_list(dig(rule_object, "spec", "groups")):
        if not isinstance(group, Mapping):
            continue
        for rule in as_list(group.get("rules")):
            if not isinstance(rule, Mapping):
                continue
            expr = str(rule.get("expr", ""))
            if any(reads_gpu_metric(line) for line in expr.splitlines() or [expr]):
                name = rule.get("alert") or rule.get("record") or "(unnamed)"
                hits.append(f"{group.get('name', '(unnamed)')}/{name}")
    return hits


def check_prometheus_rules(snapshot: ClusterSnapshot,
                           options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    rules = snapshot.listing(PROMETHEUSRULES)
    if rules.served is False:
        return result(CLUSTER015, CheckOutcome.PASS,
                      "no PrometheusRule API (Prometheus Operator not installed)")
    if rules.items is None:
        return unreadable(CLUSTER015, "PrometheusRules", rules,
                          "prometheusrules.monitoring.coreos.com")
    found = {workload_name(obj): hits for obj in rules.items if (hits := gpu_metric_rules(obj))}
    if not found:
        return result(CLUSTER015, CheckOutcome.PASS,
                      f"none of {plural(len(rules.items), 'PrometheusRule')} reads nvidia_com_gpu")
    details = [f"{obj}: {', '.join(hits)}" for obj, hits in sorted(found.items())]
    count = sum(len(h) for h in found.values())
    return result(CLUSTER015, CheckOutcome.WARN,
                  f"{count} rule(s) in {named(sorted(found))} read the nvidia_com_gpu resource "
                  "metric, which pods with claims no longer produce",
                  "rebase them on DCGM exporter or ResourceClaim metrics", details=details)
