"""One --fail-on for every command (issue 35, item 3): FailOn is a threshold on
gpudra.results.model.Level, which audit's severities and the verdict commands' outcomes map
onto. The table is the contract
each command's --help states: the words each accepts and what fails at each."""

from __future__ import annotations

import pytest

from gpudra.errors import UsageError
from gpudra.results.model import FailOn, Level, Severity
from gpudra.preflight.check_records import CheckOutcome
from gpudra.preflight.run import fail_on_level

# (--fail-on word, the verdicts that fail the run): severities for audit, outcomes for preflight
FAILS = [
    ("error", {Severity.ERROR, CheckOutcome.FAIL}),
    ("fail", {Severity.ERROR, CheckOutcome.FAIL}),
    ("warning", {Severity.ERROR, Severity.WARNING, CheckOutcome.FAIL, CheckOutcome.WARN}),
    ("warn", {Severity.ERROR, Severity.WARNING, CheckOutcome.FAIL, CheckOutcome.WARN}),
    ("unavailable", {Severity.ERROR, Severity.WARNING, CheckOutcome.FAIL, CheckOutcome.WARN,
                     CheckOutcome.UNAVAILABLE}),
    ("info", {Severity.ERROR, Severity.WARNING, Severity.INFO, CheckOutcome.FAIL,
              CheckOutcome.WARN, CheckOutcome.UNAVAILABLE}),
    ("never", set()),
]
VERDICTS = [*Severity, *CheckOutcome]


@pytest.mark.parametrize(("word", "failing"), FAILS, ids=[w for w, _ in FAILS])
def test_each_word_fails_at_its_level(word: str, failing: set) -> None:
    fail_on = FailOn.parse(word)
    assert {v for v in VERDICTS if fail_on.triggered_by(v)} == failing


@pytest.mark.parametrize(("word", "shown"), [("fail", "fail"), ("error", "fail"),
                                             ("warn", "warn"), ("WARNING", "warn"),
                                             ("unavailable", "unavailable")])
def test_preflight_takes_both_vocabularies_and_names_its_own(word: str, shown: str) -> None:
    assert fail_on_level(word).outcome_word == shown  # a FailOn, shown by its outcome word


@pytest.mark.parametrize("word", ["info", "never", "sometimes", ""])
def test_preflight_refuses_levels_it_has_no_outcome_for(word: str) -> None:
    with pytest.raises(UsageError, match="must be one of fail, warn, unavailable"):
        fail_on_level(word)


def test_outcomes_and_severities_share_one_order() -> None:
    assert [o.level for o in CheckOutcome] == [Level.PASS, Level.UNAVAILABLE, Level.WARN,
                                               Level.FAIL]
    assert sorted(Severity, key=lambda s: s.level) == [Severity.INFO, Severity.WARNING,
                                                       Severity.ERROR]
    assert [o.value for o in CheckOutcome] == [o.level.word for o in CheckOutcome]
