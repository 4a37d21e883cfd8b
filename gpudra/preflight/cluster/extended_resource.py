"""CLUSTER009: DeviceClasses that map an extended resource (KEP-5004) against the release's gate.

Facts (docs/dra-reference.md section 5; facts-turn2 section 4; gpudra.dra.versions):
`DeviceClass.spec.extendedResourceName` exists from 1.34. Gate `DRAExtendedResource` on
kube-apiserver, kube-scheduler, kube-controller-manager and kubelet: alpha and off in 1.34 and
1.35, beta and on in 1.36, GA and locked on in 1.37 (1.37 pre-release gate table and KEP-5004
`kep.yaml`; no 1.37.0 tag was available). If two classes map the same name, the newer class
wins (ties broken by name). A node must not offer the same name through a device plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.k8s.objects import dig, plural
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.bridge import Problem, bridge_problems, winning_class
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions, judged_release
from gpudra.preflight.cluster.snapshot import (
    DEVICECLASSES,
    RESOURCECLAIMS,
    ClusterSnapshot,
    unreadable,
)

GATE = "DRAExtendedResource"
GATE_COMPONENTS = "kube-apiserver, kube-scheduler, kube-controller-manager and every kubelet"

CLUSTER009 = check(
    "CLUSTER009", "extendedResourceName matches the DRAExtendedResource gate", Tier.CLUSTER,
    "DeviceClasses with `extendedResourceName` only work where the KEP-5004 gate is on.",
    """
**Why it matters.** A DeviceClass with `extendedResourceName: nvidia.com/gpu` lets pods that
still request `nvidia.com/gpu: N` run on DRA nodes: the scheduler turns the request into a
claim on that class (KEP-5004, only plain counts: no selectors or sharing). The NVIDIA DRA
driver's chart sets it on `gpu.nvidia.com`; the GPU Operator's GPUCluster does not. It needs
the `DRAExtendedResource` feature gate on kube-apiserver, kube-scheduler,
kube-controller-manager and every kubelet:

| Kubernetes | DRAExtendedResource |
|---|---|
| 1.34, 1.35 | alpha, off by default |
| 1.36 | beta, on by default |
| 1.37 | GA, always on |

On nodes that still offer `nvidia.com/gpu` through the device plugin, the device plugin keeps
serving those pods; the class serves them only on nodes without it. If two classes map the
same name, the newer one wins.

With `--target-version`, the gate is judged at the planned release.

**Outcomes.** *pass*: no class maps an extended resource (nothing depends on the gate), or
the release turns the gate on by default. *warn*: the gate is alpha (1.34/1.35: the field is
only honoured where the gate was turned on everywhere), or two classes map the same name.
*fail*: the release has no such field (before 1.34). *unavailable*: DeviceClasses or the
Kubernetes version could not be read.

**Fix.** On 1.34/1.35 enable `DRAExtendedResource=true` on all the components above, or
upgrade to 1.36+; give each extended resource name one class.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def mapped_classes(classes: tuple[Mapping[str, Any], ...]) -> list[tuple[str, str]]:
    """(class name, extended resource name) of every class that sets one, sorted."""
    found = []
    for obj in classes:
        name = dig(obj, "spec", "extendedResourceName")
        if isinstance(name, str) and name:
            found.append((str(dig(obj, "metadata", "name")), name))
    return sorted(found)


def check_extended_resource(snapshot: ClusterSnapshot,
                            options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    classes = snapshot.listing(DEVICECLASSES)
    if classes.items is None or classes.served is False:
        return unreadable(CLUSTER009, "DeviceClasses", classes, "deviceclasses.resource.k8s.io")
    mapped = mapped_classes(classes.items)
    details = [f"{cls} maps {name}" for cls, name in mapped]
    release = judged_release(snapshot, options)
    problems = bridge_problems(classes.items, mapped, snapshot.listing(RESOURCECLAIMS).items,
                               snapshot.node_facts)
    details += [f"{p.outcome.value}: {p.message}" for p in problems[1:]]
    if problems and (not mapped or problems[0].outcome is CheckOutcome.FAIL):
        return _problem(problems[0], details)
    if not mapped:
        bridge = ""
        if release is not None and release.minor >= 36:
            bridge = (f"; {release.name} has {GATE} on, so a class with extendedResourceName: "
                      "nvidia.com/gpu would let unconverted pods use DRA nodes")
        return result(CLUSTER009, CheckOutcome.PASS,
                      "no DeviceClass maps an extended resource: pods requesting nvidia.com/gpu "
                      f"are served by the device plugin only{bridge}")
    if release is None:
        return result(CLUSTER009, CheckOutcome.UNAVAILABLE,
                      f"{plural(len(mapped), 'DeviceClass', 'DeviceClasses')} "
                      f"{'maps' if len(mapped) == 1 else 'map'} extended resources, but the "
                      f"Kubernetes version is unknown: {snapshot.version_problem()}",
                      "run `kubectl version`, or pass --target-version", details=details)
    features = release.features
    support = features.supports("extendedResourceName") if features else None
    what = ", ".join(f"{cls} -> {name}" for cls, name in mapped)
    if support is None or not support.available:
        return result(CLUSTER009, CheckOutcome.FAIL,
                      f"{what}: {release.name} has no extendedResourceName field (from 1.34); "
                      "the API server drops it", "upgrade to 1.36 or newer", details=details)
    if not support.default_on:
        return result(CLUSTER009, CheckOutcome.WARN,
                      f"{what}: {GATE} is {support.stage} and off by default in {release.name}; "
                      "pods requesting the name are served from DRA only if the gate is on for "
                      "every component",
                      f"enable feature gate {GATE}=true on {GATE_COMPONENTS}, or upgrade to "
                      "1.36+", details=details)
    by_name: dict[str, list[str]] = {}
    for cls, name in mapped:
        by_name.setdefault(name, []).append(cls)
    shared = {name: owners for name, owners in by_name.items() if len(owners) > 1}
    if shared:
        objects = {str(dig(c, "metadata", "name")): c for c in classes.items}
        clash = "; ".join(
            f"{name} by {', '.join(owners)}: the scheduler uses "
            f"{winning_class(objects[o] for o in owners)}"
            for name, owners in shared.items())
        return result(CLUSTER009, CheckOutcome.WARN,
                      f"more than one DeviceClass maps the same extended resource ({clash}; "
                      "the newest class wins, of two created at once the name sorted first)",
                      "keep one class per extended resource name: clear extendedResourceName "
                      "on the others", details=details)
    stage = "GA" if support.stage == "GA" else f"{support.stage} and on by default"
    return result(CLUSTER009, CheckOutcome.PASS,
                  f"{what}: {GATE} is {stage} in {release.name}", details=details)


def _problem(problem: Problem, details: list[str]) -> CheckResult:
    return result(CLUSTER009, problem.outcome, problem.message, problem.remediation,
                  details=details)
