"""Why a pod's claims are not allocated: the plan engine run against the live devices.

Two runs of :func:`gpudra.plan.engine.plan` for the pod and its claims:

1. on the devices that are free (every live device minus those the other allocated claims
   hold): which selector term rejects which devices, which nodes have enough matching free
   devices, matching devices a taint keeps from the request;
2. on the devices other claims hold, each placed on a pseudo-node named after its holder: the
   nodes that run-1 cannot offer are then the claims that hold the matching devices.

Checked outside the engine, which falls back to the NVIDIA chart's classes for unknown names:
a DeviceClass the cluster does not have, and nodes the pod may use where no DRA driver
publishes devices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpudra.dra.cel import default_engine
from gpudra.dra.versions import TargetVersion
from gpudra.k8s.objects import as_mapping, dig
from gpudra.plan.engine import PlanOptions, plan
from gpudra.plan.inventory import Inventory, parse_inventory
from gpudra.plan.report import WorkloadReport
from gpudra.verify.collect import ClusterState, DeviceKey, PodState
from gpudra.verify.eligible import eligible_nodes, where
from gpudra.k8s.workloads import WorkloadTable

MAX_NAMED = 5


def live_inventory(state: ClusterState) -> Inventory:
    return parse_inventory([*state.slices, *state.nodes], "cluster")


def held_devices(state: ClusterState, own: set[tuple[str, str]]) -> dict[DeviceKey, str]:
    """Device -> `namespace/claim` (several, comma-separated) for devices allocated to claims
    other than `own`."""
    held: dict[DeviceKey, list[str]] = {}
    for key, claim in sorted(state.claims.items()):
        if key not in own:
            for device in claim.devices:
                held.setdefault(device, []).append(f"{claim.namespace}/{claim.name}")
    return {device: ", ".join(names) for device, names in held.items()}


def explain_pod(pod: PodState, state: ClusterState, inventory: Inventory,
                table: WorkloadTable | None, target: TargetVersion
                ) -> list[str]:
    """Reasons, most telling first; empty when the pod has no claims to explain. Selectors are
    judged in `target`'s DRA CEL environment (the cluster's release)."""
    if pod.data is None or all(r.claim and (c := state.claims.get((pod.namespace, r.claim)))
                               is not None and c.allocated for r in pod.claims):
        return []  # nothing to allocate: what is wrong is said by the pod's own problems
    # No driver on any node the pod may use says more than any count of devices elsewhere.
    reasons = _missing_classes(pod, state) + _driverless_nodes(pod, state, inventory)
    own = {(pod.namespace, r.claim) for r in pod.claims if r.claim}
    held = held_devices(state, own)
    objects = _objects(pod, state)
    free = replace(inventory, devices=tuple(d for d in inventory.devices
                                            if (d.driver, d.pool, d.name) not in held))
    options = PlanOptions.for_target(target, table=table, engine=default_engine(target))
    report = plan(objects, free, options).workloads
    if report:
        reasons += _free_reasons(report[0])
    if state.other_claims_unread:
        reasons.append("devices held by other namespaces' claims are not known (their "
                       f"claims could not be read cluster-wide: {state.other_claims_unread}): "
                       "some devices counted free here may be taken")
    holders = Inventory(tuple(replace(d, node=held[(d.driver, d.pool, d.name)])
                              for d in inventory.devices if (d.driver, d.pool, d.name) in held),
                        inventory.counter_sets, {}, "cluster")
    if holders.devices:
        taken = plan(objects, holders, options).workloads
        for request in taken[0].requests if taken else ():
            if request.matching_devices:
                reasons.append(
                    f"claim {request.claim} request {request.name}: "
                    f"{request.matching_devices} matching devices are held by other claims: "
                    f"{_named(request.nodes)}")
    return list(dict.fromkeys(reasons))


def _objects(pod: PodState, state: ClusterState) -> list[Mapping[str, Any]]:
    """The pod (its generated claims named directly, so plan reads them as they are), its
    claims and templates, and the cluster's DeviceClasses."""
    data = dict(pod.data or {})
    spec = dict(as_mapping(data.get("spec")))
    entries = []
    for entry, ref in zip(spec.get("resourceClaims") or (), pod.claims):
        if ref.claim and (pod.namespace, ref.claim) in state.claims:
            entries.append({"name": ref.entry, "resourceClaimName": ref.claim})
        else:
            entries.append(entry)
    spec["resourceClaims"] = entries
    spec.pop("nodeName", None)  # a pod bound to a node is judged there by its nodeSelector
    data.update(apiVersion="v1", kind="Pod", spec=spec)
    claims = [c.data for r in pod.claims if r.claim
              and (c := state.claims.get((pod.namespace, r.claim))) is not None
              and c.data is not None]
    return [data, *claims, *state.templates, *state.classes]


def _free_reasons(workload: WorkloadReport) -> list[str]:
    reasons = []
    if not workload.satisfiable and workload.reason:
        reasons.append(f"with the devices free now: {workload.reason}")
    for request in workload.requests:
        for alternative in request.subrequests or (request,):
            reasons += [f"claim {request.claim} request {alternative.name}: {r}"
                        for r in alternative.rejections]
        if request.nodes:
            reasons.append(f"claim {request.claim} request {request.name}: "
                           f"{request.matching_devices} free matching devices on "
                           f"{_named(request.nodes)}")
        elif not request.matching_devices:
            reasons.append(f"claim {request.claim} request {request.name}: no free device "
                           "matches")
    reasons += list(workload.warnings)
    if workload.satisfiable:
        reasons.append("the plan finds room for it on the free devices: the scheduler may "
                       "not have retried yet, or something other than devices keeps it off "
                       "(node affinity, taints, CPU or memory)")
    return reasons


def _missing_classes(pod: PodState, state: ClusterState) -> list[str]:
    known = {str(dig(c, "metadata", "name")) for c in state.classes}
    wanted: set[str] = set()
    specs = [dig(c.data, "spec") for r in pod.claims if r.claim
             and (c := state.claims.get((pod.namespace, r.claim))) is not None and c.data]
    templates = {r.template for r in pod.claims if r.template and not r.claim}
    specs += [dig(t, "spec", "spec") for t in state.templates
              if dig(t, "metadata", "namespace") == pod.namespace
              and dig(t, "metadata", "name") in templates]
    for spec in specs:
        for request in dig(spec, "devices", "requests") or ():
            if not isinstance(request, Mapping):
                continue
            for body in (request, as_mapping(request.get("exactly")),
                         *(a for a in request.get("firstAvailable") or ()
                           if isinstance(a, Mapping))):
                name = as_mapping(body).get("deviceClassName")
                if name:
                    wanted.add(str(name))
    return [f"DeviceClass {name} does not exist: the scheduler cannot allocate a claim that "
            "names it (install the DRA driver's chart, or fix deviceClassName)"
            for name in sorted(wanted - known)]


def _driverless_nodes(pod: PodState, state: ClusterState, inventory: Inventory) -> list[str]:
    eligible = eligible_nodes(pod, state)
    with_devices = {d.node for d in inventory.devices if d.node}
    without = [n for n in eligible if n not in with_devices]
    if eligible and len(without) == len(eligible):
        return [(f"no DRA driver publishes devices on any node the pod may use{where(pod)}: "
                 f"{_named(without)} (not switched: the wave's label step starts the DRA "
                 "driver's kubelet plugin there, and its ResourceSlices follow)")]
    return []


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
