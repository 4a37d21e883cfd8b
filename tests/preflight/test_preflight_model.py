"""The check model: outcomes, results, the catalogue, skips and the worst outcome."""

from __future__ import annotations

import re

import pytest

from gpudra.errors import UsageError
from gpudra.preflight import catalogue
from gpudra.preflight.check_records import (
    Catalogue,
    CheckOutcome,
    CheckResult,
    Tier,
    apply_skips,
    check,
    count_outcomes,
    result,
    worst,
)

INFO = check("NODE901", "Example", Tier.NODE, "An example.", "Why.",
             (CheckOutcome.PASS, CheckOutcome.FAIL))


def _res(check_id: str, outcome: CheckOutcome) -> CheckResult:
    fix = None if outcome is CheckOutcome.PASS else "do something"
    return CheckResult(check_id, "t", outcome, "m", fix)


def test_outcomes_are_ordered_for_worst() -> None:
    ranked = sorted(CheckOutcome, key=lambda o: o.rank)
    assert ranked == [CheckOutcome.PASS, CheckOutcome.UNAVAILABLE, CheckOutcome.WARN,
                      CheckOutcome.FAIL]
    assert CheckOutcome("unavailable") is CheckOutcome.UNAVAILABLE and CheckOutcome.FAIL == "fail"


@pytest.mark.parametrize(("outcomes", "expected"), [
    ([], CheckOutcome.PASS),
    ([CheckOutcome.PASS, CheckOutcome.PASS], CheckOutcome.PASS),
    ([CheckOutcome.PASS, CheckOutcome.UNAVAILABLE], CheckOutcome.UNAVAILABLE),
    ([CheckOutcome.UNAVAILABLE, CheckOutcome.WARN], CheckOutcome.WARN),
    ([CheckOutcome.FAIL, CheckOutcome.WARN, CheckOutcome.PASS], CheckOutcome.FAIL),
])
def test_worst(outcomes: list[CheckOutcome], expected: CheckOutcome) -> None:
    assert worst([_res("NODE001", o) for o in outcomes]) is expected


def test_check_ids_must_match_their_tier() -> None:
    with pytest.raises(ValueError):
        check("CLUSTER001", "x", Tier.NODE, "s", "e", (CheckOutcome.PASS,))
    with pytest.raises(ValueError):
        check("NODE1", "x", Tier.NODE, "s", "e", (CheckOutcome.PASS,))
    assert check("MANIFEST001", "x", Tier.MANIFESTS, "s", "e", (CheckOutcome.PASS,)).docs_anchor \
        == "manifest001"


def test_result_links_the_docs_when_no_remediation_is_given() -> None:
    failed = result(INFO, CheckOutcome.FAIL, "broke")
    assert failed.remediation == "docs/checks.md#node901"
    assert result(INFO, CheckOutcome.PASS, "fine").remediation is None


def test_results_keep_their_invariants() -> None:
    with pytest.raises(ValueError, match="no remediation"):
        CheckResult("NODE001", "t", CheckOutcome.PASS, "m", "fix")
    with pytest.raises(ValueError, match="one line"):
        CheckResult("NODE001", "t", CheckOutcome.WARN, "two\nlines", "fix")


def test_catalogue_rejects_duplicates_and_is_sorted() -> None:
    with pytest.raises(ValueError, match="duplicate check id NODE901"):
        Catalogue([INFO, INFO])
    other = check("CLUSTER001", "c", Tier.CLUSTER, "s", "e", (CheckOutcome.PASS,))
    cat = Catalogue([INFO, other])
    assert list(cat) == ["CLUSTER001", "NODE901"]
    assert cat.in_tier(Tier.NODE) == (INFO,)


def test_skip_list_parsing() -> None:
    cat = catalogue()
    assert cat.parse_skip_list(["node003, node005", "NODE006"]) == \
        frozenset({"NODE003", "NODE005", "NODE006"})
    assert cat.parse_skip_list(["All"]) == frozenset({"all"})
    assert cat.parse_skip_list(["", " , "]) == frozenset()
    with pytest.raises(UsageError, match="unknown check 'NODE999'"):
        cat.parse_skip_list(["NODE003,NODE999"])


def test_skipped_fail_is_shown_as_warn_and_does_not_count() -> None:
    results = [_res("NODE001", CheckOutcome.PASS), _res("NODE003", CheckOutcome.FAIL),
               _res("NODE005", CheckOutcome.UNAVAILABLE)]
    skipped = apply_skips(results, frozenset({"NODE003"}))
    assert [r.outcome for r in skipped] == [CheckOutcome.PASS, CheckOutcome.WARN,
                                            CheckOutcome.UNAVAILABLE]
    assert [r.skipped for r in skipped] == [False, True, False]
    assert "reported as a warning because the check is skipped" in skipped[1].message
    assert worst(results) is CheckOutcome.FAIL
    assert worst(skipped) is CheckOutcome.UNAVAILABLE
    assert count_outcomes(skipped) == {"pass": 1, "unavailable": 1, "warn": 1, "fail": 0,
                                       "skipped": 1}


def test_skip_all_marks_everything() -> None:
    skipped = apply_skips([_res("NODE001", CheckOutcome.FAIL), _res("NODE002", CheckOutcome.PASS)],
                          frozenset({"all"}))
    assert all(r.skipped for r in skipped)
    assert worst(skipped) is CheckOutcome.PASS


# --- the real catalogue: documented well enough to generate docs/checks.md from -------------

@pytest.mark.parametrize("check_id", list(catalogue()))
def test_every_check_is_documented(check_id: str) -> None:
    info = catalogue()[check_id]
    assert re.fullmatch(r"(CLUSTER|NODE|MANIFEST)\d{3}", info.id)
    assert info.summary.endswith(".") and info.title and info.title == info.title.strip()
    for heading in ("**Why it matters.**", "**Outcomes.**", "**Fix.**"):
        assert heading in info.explanation, (check_id, heading)
    outcomes_text = info.explanation.split("**Outcomes.**", 1)[1].split("**Fix.**", 1)[0]
    for outcome in info.outcomes:
        assert f"*{outcome.value}*" in outcomes_text, (check_id, outcome)
    assert CheckOutcome.PASS in info.outcomes
    assert info.docs_url == f"docs/checks.md#{info.id.lower()}"


def test_titles_are_unique() -> None:
    titles = [info.title for info in catalogue().values()]
    assert len(titles) == len(set(titles))
