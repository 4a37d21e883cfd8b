"""Quotas that cap device-plugin GPUs gain the per-DeviceClass DRA keys that cap claims.

Planned after every workload: whether the old keys may go depends on whether workloads that stay
on the device plugin (blocked or bridged) may still run in the quota's namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudra.convert.edits import prune
from gpudra.convert.ignore import QUOTA_RULES, skip_reason
from gpudra.convert.records import ObjectPlan, result_for
from gpudra.dra import emit
from gpudra.k8s.gpu_use import quota_keys, quota_path
from gpudra.k8s.objects import PathT, dig
from gpudra.results.waivers import WaiverSet
from gpudra.yamledit.ops import Append, Delete


def plan_quota(file: str, data: Mapping[str, Any], base: PathT, *, keep: bool,
               asked: bool, mig: frozenset[str] = frozenset(),
               waivers: WaiverSet | None = None,
               keep_names: frozenset[str] = frozenset()) -> ObjectPlan:
    """`keep`: the device-plugin keys stay (asked for, or device-plugin pods may remain).
    `keep_names`: device-plugin names whose keys stay all the same (`nvidia.com/gpu` while the
    bridge serves pods of the namespace unchanged: `requests.nvidia.com/gpu` counts them).
    `mig`: how workloads of the quota's namespace now ask for MIG devices ("single": their
    nvidia.com/gpu requests are MIG slices; "mixed": nvidia.com/mig-* requests)."""
    hard_path = quota_path(data)
    if hard_path is None:
        return ObjectPlan()
    hard = dig(data, *hard_path)
    # Per class: the sum of the requests. keys, and of the limits./bare keys.
    enforced: dict[str, int] = {}
    stated: dict[str, int] = {}
    old: list[str] = []
    kept: list[str] = []  # of `old`, those keep_names holds
    profiles: set[str] = set()
    for quota in quota_keys(data):
        if not quota.device.is_nvidia_device_plugin:
            continue
        count = quota.count
        if count.value is None:
            return ObjectPlan(result=result_for(
                file, data, "blocked", reason=f"quota {quota.key}: {quota.value!r} is not a "
                "whole number"))
        old.append(quota.key)
        if quota.resource in keep_names:
            kept.append(quota.key)
        if quota.device.mig_profile is not None:
            profiles.add(quota.device.mig_profile)
        cls = emit.MIG_CLASS if quota.device.mig_profile is not None else emit.GPU_CLASS
        sums = enforced if quota.scope == "requests" else stated
        sums[cls] = sums.get(cls, 0) + count.value
    if not old:
        return ObjectPlan()
    skip = skip_reason(data, QUOTA_RULES, file, waivers)
    if skip:
        return ObjectPlan(result=result_for(file, data, skip[0], reason=skip[1]))
    # Kubernetes only ever enforced requests.<extended resource>; a limits./bare key is the
    # user's stated cap all the same, so it becomes the DRA cap where no requests. key is.
    unenforced = [cls for cls in stated if cls not in enforced]
    totals = {**enforced, **{cls: stated[cls] for cls in unenforced}}
    plan = ObjectPlan()
    path = base + hard_path
    additions = _dra_keys(totals)
    notes: list[str] = []
    mig_cap = f"{emit.MIG_CLASS}{emit.QUOTA_CLASS_SUFFIX}"
    if mig and emit.GPU_CLASS in totals and emit.MIG_CLASS not in totals and mig_cap not in hard:
        # Claims are charged per DeviceClass: without this key the MIG claims escape the cap.
        additions[mig_cap] = str(totals[emit.GPU_CLASS])
        notes.append(_mig_note(mig, totals[emit.GPU_CLASS]))
    for key, value in additions.items():
        if key not in hard:
            plan.ops.append(Append(path, key, value))
    if not keep:
        plan.ops += [Delete(path + (key,)) for key in old if key not in kept]
    if not plan.ops:
        return ObjectPlan()
    notes += _notes(asked, keep, profiles, bool(unenforced))
    if kept and not keep:
        notes.append(f"kept {', '.join(kept)}: the bridge serves pods of this namespace "
                     "unchanged, and this key still caps them")
    plan.result = result_for(file, data, "quota", notes=tuple(notes))
    prune(data, base, plan.ops)
    return plan


def _dra_keys(totals: Mapping[str, int]) -> dict[str, str]:
    """The DRA quota keys that cap `totals` (devices per class). No claim count: it would cap
    every ResourceClaim of the namespace, of classes the quota never limited too (a quota on
    `nvidia.com/mig-1g.10gb` would then refuse a whole-GPU Job's claim: issue 32's sharing
    journey), and the device keys already cap what the quota capped."""
    return {key: value for cls, count in totals.items()
            for key, value in emit.quota_keys(cls, count).items()
            if key != emit.QUOTA_CLAIM_COUNT}


def _notes(asked: bool, keep: bool, profiles: set[str], unenforced: bool) -> list[str]:
    """What the user should know about a converted quota beyond its new keys."""
    notes = []
    if asked:
        notes.append("kept the device-plugin keys (--keep-device-plugin-quota): they still "
                     "count device-plugin pods")
    elif keep:
        notes.append("kept the device-plugin keys: workloads that stay on the device plugin "
                     "(blocked or bridged) may run in this namespace, and these keys cap them")
    if len(profiles) > 1:
        notes.append(f"the MIG profiles {', '.join(sorted(profiles))} share one "
                     "mig.nvidia.com cap: quota counts devices per DeviceClass, not per "
                     "profile, so the limit is looser than before")
    if profiles:
        # The device plugin counted each nvidia.com/mig-<profile> on its own; a claim of any
        # profile is a mig.nvidia.com device.
        notes.append(f"claims of every MIG profile now count against the mig.nvidia.com cap, "
                     f"not only {', '.join(sorted(profiles))}: raise it by the slices of "
                     "other profiles this namespace runs")
    if unenforced:
        notes.append("Kubernetes never enforced the limits./bare device-plugin keys of this "
                     "quota (only requests.<resource>); their value is now the DRA cap")
    return notes


def _mig_note(mig: frozenset[str], count: int) -> str:
    cap = f"{emit.MIG_CLASS}{emit.QUOTA_CLASS_SUFFIX}: {count}"
    if mig == {"mixed"}:
        return (f"added {cap}: workloads of this namespace now claim mig.nvidia.com devices, "
                "which no key of this quota would cap; the device plugin did not count "
                "nvidia.com/mig-* requests against requests.nvidia.com/gpu either, so set it to "
                "the MIG slices you mean to allow")
    return (f"added {cap}: workloads of this namespace request nvidia.com/gpu on MIG single-"
            "strategy nodes, which the DRA driver serves as mig.nvidia.com devices; quota "
            "counts devices per DeviceClass, so whole GPUs and MIG slices are now capped "
            "separately, each at the old count")
