"""What leaving a workload to the bridge (KEP-5004, `--strategy bridge`) keeps and loses.

Under the bridge a pod keeps its `nvidia.com/gpu: N` and the scheduler serves it from the
DeviceClass with `extendedResourceName: nvidia.com/gpu`: any N devices of that class on the
node. The pod cannot select devices by attribute. Its GFD node labels still pick nodes, as long
as GPU Feature Discovery labels the DRA nodes (the DRA driver does not write those labels);
convert says so per workload. Two things would change what the pod gets, and they are not
left to the bridge:

* MIG "single" strategy labels: `nvidia.com/gpu` there is a MIG slice, and the DRA driver
  publishes only MIG devices for a MIG-enabled GPU, which a whole-GPU class never serves; such
  a workload is rewritten to a `mig.nvidia.com` claim instead.
* `NVIDIA_VISIBLE_DEVICES` on a GPU container: the device plugin overrode it with the devices
  it allocated; under DRA, CDI injects the allocated devices and the variable stays, and a
  runtime that honours it can hand the container GPUs it was not allocated. Blocked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpudra.convert.placement import plan_placement
from gpudra.convert.records import Blocked
from gpudra.convert.requests import DeviceNeed, container_label
from gpudra.dra.selectors import is_gfd_label
from gpudra.dra.versions import TargetVersion
from gpudra.k8s.objects import PathT, dig
from gpudra.k8s.workloads import PodSpecRef

HIDE_ENV = "NVIDIA_VISIBLE_DEVICES"
MIG_NOTE = ("rewritten, not bridged: the bridge serves whole GPUs, and on MIG single-strategy "
            "nodes the DRA driver publishes only MIG devices")


def bridge_notes(found: list[tuple[PodSpecRef, list[DeviceNeed]]], base: PathT,
                 target: TargetVersion) -> tuple[str, ...] | None:
    """The notes of a workload left to the bridge; None when it must be rewritten instead
    (MIG single strategy). Raises Blocked where the bridge would give it other devices."""
    labels: list[str] = []
    for spec, needs in found:
        for need in needs:
            env = need.container.data.get("env")
            if any(isinstance(v, Mapping) and v.get("name") == HIDE_ENV
                   for v in (env if isinstance(env, list) else ())):
                raise Blocked(f"{HIDE_ENV} is set on {container_label(need.container)!r}: the "
                              "bridge leaves it, and under DRA a runtime that honours it can "
                              "give the container GPUs it was not allocated; use --strategy "
                              f"rewrite (which removes it) or remove {HIDE_ENV}")
        if plan_placement(spec, base + spec.path, keep_labels=True).mig is not None:
            return None
        labels += [label for label in _gfd_labels(spec.data) if label not in labels]
    notes = ["left unchanged: the DeviceClass with extendedResourceName nvidia.com/gpu serves "
             "it from DRA (KEP-5004)"]
    support = target.supports("extendedResourceName")
    if not support.default_on:  # 1.34/1.35: the field exists but its gate is off
        notes.append(f"Kubernetes {target}: {support.note}")
    if labels:
        notes.append(f"the bridge cannot select devices by attribute: {', '.join(labels)} stay "
                     "node labels, which pick nodes only while GPU Feature Discovery labels "
                     "the DRA nodes (the DRA driver does not write them); --strategy rewrite "
                     "moves them into CEL selectors on the claim")
    return tuple(notes)


def _gfd_labels(spec: Mapping[str, Any]) -> Iterator[str]:
    selector = spec.get("nodeSelector")
    yield from (str(k) for k in (selector if isinstance(selector, Mapping) else ())
                if is_gfd_label(str(k)))
    affinity = dig(spec, "affinity", "nodeAffinity")
    affinity = affinity if isinstance(affinity, Mapping) else {}
    required = dig(affinity, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    terms = [*(required if isinstance(required, list) else ()),
             *(dig(p, "preference") for p in (preferred if isinstance(preferred, list) else ())
               if isinstance(p, Mapping))]
    for term in terms:
        for expr in (dig(term, "matchExpressions") or []) if isinstance(term, Mapping) else ():
            if isinstance(expr, Mapping) and is_gfd_label(str(expr.get("key"))):
                yield str(expr.get("key"))
