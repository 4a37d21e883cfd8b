"""plan and cutover judge a workload as convert does, vouches included: a kind outside the
controller registry stays on the device plugin (placed as its plain pods) unless .gpudra.yaml
vouches for it (issue 34)."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from gpudra.cutover.pools import blocked_reason
from gpudra.dra.versions import DEFAULT
from gpudra.results.vouches import Vouch, VouchSet
from gpudra.k8s.workloads import WorkloadTable

TRAINER = yaml.safe_load("""
apiVersion: example.com/v1
kind: Trainer
metadata: {name: llm, namespace: ml}
spec:
  template:
    spec:
      containers:
        - name: c
          image: x
          resources: {limits: {nvidia.com/gpu: 2}}
""")
VOUCHED = VouchSet((Vouch("Trainer", "ml-platform", "copies the template"),), dt.date(2026, 12, 7))
EXPIRED = VouchSet((Vouch("Trainer", "ml-platform", "copies the template", None,
                          dt.date(2026, 1, 1)),), dt.date(2026, 12, 7))


@pytest.mark.parametrize("vouches, reason", [
    (None, "has not checked whether Trainer's controller reads nvidia.com/gpu"),
    (EXPIRED, "expired on 2026-01-01"),
    (VOUCHED, None),
])
def test_cutover_keeps_unchecked_kinds_unless_vouched(vouches, reason) -> None:
    got = blocked_reason(TRAINER, WorkloadTable(), DEFAULT, vouches)
    assert (got is None) if reason is None else (reason in got), got
