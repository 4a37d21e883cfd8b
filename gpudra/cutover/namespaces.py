"""Which namespaces each wave finishes: after the wave that moves a namespace's last workload on
the device plugin, the runbook labels it as migrated (gpudra.guard.policy.MIGRATED_LABEL), which
is what `gpudra guard`'s binding selects; the wave's rollback removes the label first, so that
the device-plugin originals it puts back are not refused."""

from __future__ import annotations

import shlex
from collections import Counter

from gpudra.cutover.pools import Fleet
from gpudra.cutover.waves import CutoverPlan
from gpudra.guard.policy import MIGRATED_LABEL, MIGRATED_VALUE


def guard_prerequisite(bridge: bool) -> str:
    """The runbook's one-time step for `gpudra guard`, with the strategy the cutover uses: under
    the bridge, the unchanged workloads keep asking nvidia.com/gpu, which the guard must let
    through."""
    command = "gpudra guard --strategy bridge" if bridge else "gpudra guard"
    return (f"The namespace ratchet: `{command} --action warn | kubectl apply -f -` (later "
            "`--action deny`). It acts only on namespaces labelled "
            f"`{MIGRATED_LABEL}={MIGRATED_VALUE}`, which the wave that moves a namespace's last "
            "workload on the device plugin writes: from then on a new workload there that asks "
            "the device plugin is warned about, then refused (docs/guard.md).")


def finished_namespaces(result: CutoverPlan, fleet: Fleet) -> dict[int, tuple[str, ...]]:
    """Per wave number, the namespaces none of whose GPU workloads is left on the device plugin
    once the wave is done (a workload convert cannot move keeps its namespace unfinished)."""
    remaining: Counter[str] = Counter(w.namespace for w in fleet.workloads if not w.on_claims)
    remaining.update(label.split("/", 1)[0] for label in fleet.unconvertible)
    out: dict[int, tuple[str, ...]] = {}
    for wave in result.waves:
        moved = sorted({w.namespace for w in wave.moved if w.namespace})
        remaining.subtract(w.namespace for w in wave.moved)
        done = tuple(n for n in moved if remaining[n] <= 0)
        if done:
            out[wave.number] = done
    return out


def label_step(namespaces: tuple[str, ...]) -> str:
    names = " ".join(shlex.quote(n) for n in namespaces)
    return (f"kubectl label namespace {names} {MIGRATED_LABEL}={MIGRATED_VALUE} --overwrite   "
            "# no GPU workload left on the device plugin here: gpudra guard's binding now "
            "selects it")


def unlabel_step(namespaces: tuple[str, ...]) -> str:
    names = " ".join(shlex.quote(n) for n in namespaces)
    return (f"kubectl label namespace {names} {MIGRATED_LABEL}-   # first: gpudra guard "
            "would refuse the device-plugin originals put back below")
