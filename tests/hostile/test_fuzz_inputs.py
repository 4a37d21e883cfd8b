"""Every kind of input gpudra reads, fuzzed: gpudra refuses a hostile input with a one-line
error (exit 2 or 3) or reads it, and never fails on it (an internal error, a traceback, another
exit code) nor runs past a time limit.

The kinds and their generators are tests/hostile/fuzz_kinds.py's: manifests for audit and
convert, `plan --inventory`, `cutover --from`, cluster objects served by the fake API server to
verify, plan, cutover and audit (and `gpudra guard`'s objects to verify's gate, and the
objects cutover's notes read around the pods: Cluster API node groups, Kueue flavors), reports for `report merge`, baselines, `.gpudra.yaml` and the
convert journal. A bounded, derandomized sample per kind (GPUDRA_FUZZ_EXAMPLES scales it);
benchmarks/fuzz_campaign.py runs thousands per kind, each in a child with a memory limit.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

from tests.hostile import fuzz_kinds as fk

# Examples per kind: up to about five seconds each on the shared two-core machine (the five
# kinds that pass on their own branch take 13 s at load average 5), under a minute in all.
EXAMPLES = {"audit": 120, "convert": 100, "inventory": 80, "cutover": 50, "cluster": 25,
            "merge": 100, "baseline": 80, "config": 50, "journal": 80, "guard": 25,
            "around": 25}
SCALE = float(os.environ.get("GPUDRA_FUZZ_SCALE", "1"))
SECONDS = 20.0  # one example past this is a hang


def _settings(kind: str) -> settings:
    return settings(max_examples=max(1, int(EXAMPLES[kind] * SCALE)), derandomize=True,
                    database=None, deadline=None, report_multiple_bugs=False,
                    # No shrinking: a case is a seed's draws, and its reproducer is printed
                    # whole; shrinking a memory or time bomb would rerun it dozens of times.
                    phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=list(HealthCheck))


def _check(kind: str, rng: random.Random) -> None:
    case = fk.KINDS[kind](rng)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            outcome = fk.run_case(case, Path(tmp), SECONDS)
        except fk.Unservable:
            reject()
    assert outcome.problem is None, f"{outcome.problem}\n\n{fk.describe(case)}"


@pytest.mark.parametrize("kind", sorted(fk.KINDS))
def test_every_kind_of_input_is_read_or_refused_never_failed_on(kind: str) -> None:
    @_settings(kind)
    @given(st.randoms(use_true_random=False))
    def fuzz(rng: random.Random) -> None:
        _check(kind, rng)

    fuzz()


def test_every_input_kind_has_a_generator() -> None:
    """The kinds issue 31 names: none may be dropped without this failing."""
    assert set(fk.KINDS) == set(EXAMPLES) == {"audit", "convert", "inventory", "cutover",
                                              "cluster", "merge", "baseline", "config",
                                              "journal", "guard", "around"}


def test_the_generators_are_deterministic() -> None:
    """A campaign's seed names one case, so its reproducer can be replayed."""
    for kind, make in fk.KINDS.items():
        assert fk.describe(make(random.Random(7))) == fk.describe(make(random.Random(7))), kind


def test_a_failure_is_caught() -> None:
    """The judge calls what the suite must never see a failure (it cannot pass vacuously)."""
    assert fk.judge(3, "gpudra: error: internal error: KeyError: 'x' (please report it)\n",
                    None)
    assert fk.judge(None, "", ValueError("x"))
    assert fk.judge(134, "", SystemExit(134))
    assert fk.judge(3, "gpudra: error: a.yaml: not UTF-8 text (byte 3)\n", SystemExit(3)) is None
