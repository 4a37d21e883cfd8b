"""CLUSTER016: the NVIDIA DRA driver's feature gates, against the GPU sharing the cluster uses.

Facts (gpudra.dra.sharing): the driver reads its gates from `FEATURE_GATES` (the chart renders
`featureGates` into that variable of the kubelet-plugin and controller containers) or
`--feature-gates`, and `--consumable-shares` from `CONSUMABLE_SHARES` (default `disabled`).
It refuses to start with an exclusive pair on, or with `--consumable-shares` set while the
ConsumableShares gate is off (cmd/gpu-kubelet-plugin/main.go); MPS claims fail to prepare
while consumable shares are on (device_state.go). Sharing in use today is what the device
plugin advertises: GFD's `nvidia.com/gpu.replicas` above 1, a `-SHARED` product, or a
`.shared` resource on a node.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpudra.dra.sharing import EXCLUSIVE_GATES, NO_REPLICAS, REQUIRED_GATES
from gpudra.k8s.object_fields import Container, containers, flag_value
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.driver import (
    CHECK_BY_HAND,
    UNRECOGNISED,
    driver_daemonsets,
    driver_unrecognised,
)
from gpudra.preflight.cluster.nodes import named
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import DAEMONSETS, ClusterSnapshot, unreadable

SHARING_GATES = ("TimeSlicingSettings", "MPSSupport", "ConsumableShares")

CLUSTER016 = check(
    "CLUSTER016", "DRA driver feature gates fit GPU sharing", Tier.CLUSTER,
    "The NVIDIA DRA driver's gates are a valid combination and cover the sharing in use.",
    """
**Why it matters.** The device plugin shares a GPU by advertising it several times
(time-slicing or MPS `replicas`). The NVIDIA DRA driver has no replica count: its
`TimeSlicing` strategy only sets the interval (alpha gate `TimeSlicingSettings`), `MPS` needs
the alpha gate `MPSSupport`, and several claims get one GPU only with the alpha gate
`ConsumableShares` and `--consumable-shares` (`memory`, `unlimited` or a share count), which
does not work with MPS. Some gates exclude each other (DynamicMIG with PassthroughSupport,
NVMLDeviceHealthCheck or MPSSupport; PassthroughSupport with NVMLDeviceHealthCheck; MPSSupport
with NVMLDeviceHealthCheck), and the driver does not start with such a pair on. gpudra reads
the gates from the kubelet plugin's `FEATURE_GATES` (or `--feature-gates`) and
`CONSUMABLE_SHARES` (or `--consumable-shares`), and the sharing from the nodes' labels and
resources.

**Outcomes.** *pass*: no NVIDIA DRA driver DaemonSet, or a valid combination (with a sharing
gate where GPUs are shared today). *warn*: GPUs are shared today and no sharing gate is on;
MPSSupport together with consumable shares. *fail*: an exclusive pair, a missing required
gate, or `--consumable-shares` without the ConsumableShares gate. *unavailable*: DaemonSets
could not be read, or slices from `gpu.nvidia.com` exist but no DaemonSet could be recognised
as the driver (as CLUSTER006 says).

**Fix.** Set the driver chart's `featureGates` (and `consumableShares`) to one valid
combination: decide per workload between one shared ResourceClaim, ConsumableShares and MPS.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def driver_gates(ctrs: tuple[Container, ...]) -> tuple[dict[str, bool], str]:
    """The driver's feature gates and its --consumable-shares value, from its containers."""
    gates: dict[str, bool] = {}
    shares = "disabled"
    for ctr in ctrs:
        raw = flag_value(ctr, "--feature-gates") or ctr.env.get("FEATURE_GATES", "")
        for entry in raw.split(","):
            name, sep, value = entry.strip().partition("=")
            if sep and value.lower() in ("true", "false"):
                gates[name] = value.lower() == "true"
        shares = flag_value(ctr, "--consumable-shares") or ctr.env.get("CONSUMABLE_SHARES") \
            or shares
    return gates, shares.strip().lower() or "disabled"


def _shared_nodes(snapshot: ClusterSnapshot) -> list[str]:
    shared = []
    for facts in snapshot.node_facts or ():
        labels: Mapping[str, str] = facts.labels
        replicas = str(labels.get("nvidia.com/gpu.replicas", "1"))
        if (replicas.isascii() and replicas.isdigit() and int(replicas) > 1) or \
                str(labels.get("nvidia.com/gpu.product", "")).endswith("-SHARED") or \
                any(name.endswith(".shared") for name in facts.device_plugin_resources):
            shared.append(facts.name)
    return sorted(shared)


def check_sharing_gates(snapshot: ClusterSnapshot,
                        options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    daemonsets = snapshot.listing(DAEMONSETS)
    if daemonsets.items is None:
        return unreadable(CLUSTER016, "DaemonSets", daemonsets, "daemonsets.apps in all namespaces")
    found = driver_daemonsets(daemonsets.items)
    drivers = [d for d in found if d.serves_gpus]
    if not found and driver_unrecognised(snapshot):
        # as CLUSTER006 says of the same cluster: a driver runs, its gates cannot be read
        return result(CLUSTER016, CheckOutcome.UNAVAILABLE,
                      f"{UNRECOGNISED}: its feature gates cannot be read", CHECK_BY_HAND)
    if not drivers:
        return result(CLUSTER016, CheckOutcome.PASS,
                      "no NVIDIA DRA driver DaemonSet serves GPUs: no driver gates to judge")
    driver = drivers[0]
    gates, shares = driver_gates(containers(driver.obj))
    on = sorted(name for name, value in gates.items() if value)
    details = [f"{driver.name}: gates on: {', '.join(on) or 'none'}; consumable shares: {shares}"]
    problems = [f"{a} and {b} exclude each other" for a, b in EXCLUSIVE_GATES
                if gates.get(a) and gates.get(b)]
    problems += [f"{a} needs {b}" for a, b in REQUIRED_GATES if gates.get(a) and not gates.get(b)]
    if shares != "disabled" and not gates.get("ConsumableShares"):
        problems.append(f"--consumable-shares={shares} needs the ConsumableShares gate")
    if problems:
        return result(CLUSTER016, CheckOutcome.FAIL,
                      f"{driver.name}: {'; '.join(problems)}: the driver does not start",
                      "set one valid combination in the chart's featureGates (docs: "
                      "dra-driver-nvidia-gpu reference/feature-gates)", details=details)
    if gates.get("MPSSupport") and shares != "disabled":
        return result(CLUSTER016, CheckOutcome.WARN,
                      f"{driver.name}: MPSSupport with --consumable-shares={shares}: claims "
                      "with an MPS sharing strategy fail to prepare while consumable shares are on",
                      "use either MPS or consumable shares", details=details)
    shared = _shared_nodes(snapshot)
    sharing = [g for g in SHARING_GATES if gates.get(g)]
    if shared and not sharing:
        return result(CLUSTER016, CheckOutcome.WARN,
                      f"the device plugin shares GPUs on {len(shared)} node(s) "
                      f"({named(shared)}), and {driver.name} has no sharing gate on: "
                      f"{NO_REPLICAS}",
                      "decide per workload: one ResourceClaim shared by its pods, or turn on "
                      "ConsumableShares with consumableShares (not with MPS), or MPSSupport",
                      details=details)
    return result(CLUSTER016, CheckOutcome.PASS,
                  f"{driver.name}: a valid gate combination"
                  + (f" with {', '.join(sharing)} for the GPUs shared today" if shared else ""),
                  details=details)
