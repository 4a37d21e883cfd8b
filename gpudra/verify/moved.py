"""Verdicts held against the waves that were applied (verify --wave-of): a workload a wave
moves must be on claims. Still on the device plugin, it fails with the reason; one the wave
deletes and creates again (a Job, JobSet or Pod) that is not in the cluster at all is reported
missing. (A replaced workload verify does not find is not: the wave never removes it.)"""

from __future__ import annotations

from dataclasses import replace

from gpudra.verify.expected import ExpectedWave, MovedWorkload
from gpudra.verify.judge import DEVICE_PLUGIN, Verdict


def held_to_waves(verdicts: tuple[Verdict, ...], waves: tuple[ExpectedWave, ...],
                  namespace: str | None, every_workload: bool
                  ) -> tuple[tuple[Verdict, ...], tuple[MovedWorkload, ...]]:
    """The verdicts with those of moved workloads still on the device plugin failing, and the
    moved workloads verify did not find. `namespace`: only that namespace was read (None: all);
    `every_workload` False under --selector, where a workload not shown may merely not match."""
    moved = {w.key: w for wave in waves for w in wave.workloads
             if namespace is None or w.namespace == namespace}
    out = []
    for verdict in verdicts:
        w = verdict.workload
        expected = moved.get((w.namespace or "", w.kind, w.name or ""))
        if expected is not None and verdict.state == DEVICE_PLUGIN:
            reason = (f"the wave moves it ({expected.file}) but it is still on the device "
                      "plugin: its converted manifest was not applied, or did not take (kubectl "
                      "replace or create it as the runbook says, or roll the wave back)")
            if expected.bridged:
                reason = (f"the wave leaves it unchanged for the bridge ({expected.file}) but "
                          "it is still on the device plugin: a node it may run on still "
                          "advertises nvidia.com/gpu, or its pods did not start again after "
                          "the switch (the runbook's drain, or delete and create), or no "
                          "DeviceClass maps nvidia.com/gpu")
            verdict = replace(verdict, must_move=expected.file,
                              message=f"not moved: {verdict.message}",
                              reasons=(reason, *verdict.reasons))
        out.append(verdict)
    found = {(v.workload.namespace or "", v.workload.kind, v.workload.name or "")
             for v in verdicts}
    missing = tuple(w for key, w in sorted(moved.items()) if key not in found and w.recreated) \
        if every_workload else ()
    return tuple(out), missing
