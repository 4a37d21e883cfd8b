"""The command seam: the CLI parses every option once into core values (a RunContext and the
command's typed request); the run reads no text option again."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from gpudra.cli import plan as plan_cli
from gpudra.cli import preflight as preflight_cli
from gpudra.cli.options import Connection, OutcomeWord
from gpudra.config import Config
from gpudra.dra.versions import TargetVersion
from gpudra.plan.synthesis import Shares
from gpudra.results.model import FailOn
from gpudra.preflight.check_records import Tier
from gpudra.run_context import RunContext

DAY = datetime.date(2026, 1, 31)


def test_the_day_is_the_one_given_else_the_clock_s() -> None:
    assert RunContext(today=DAY).day == DAY
    assert RunContext().day == datetime.date.today()
    assert RunContext().config == Config() and RunContext().target is None


@pytest.mark.parametrize(("words", "tier", "fail_on"), [
    ({}, Tier.CLUSTER, FailOn.ERROR),
    ({"node": True, "fail_on": OutcomeWord.WARNING}, Tier.NODE, FailOn.WARNING),
    ({"manifests": ("m",), "fail_on": OutcomeWord.UNAVAILABLE}, Tier.MANIFESTS,
     FailOn.UNAVAILABLE),
])
def test_preflight_s_request_holds_core_values(tmp_path: Path, words: dict, tier: Tier,
                                               fail_on: FailOn) -> None:
    options = {"node": False, "host_root": "/", "manifests": (), "target_version": "1.34",
               "require_migrated": False, "skip": (), "fail_on": OutcomeWord.FAIL,
               "config": None, "strict": False, "baseline": None,
               "connection": Connection(context="prod"), **words}
    if options["node"] or options["manifests"]:
        options["connection"] = Connection()
    request = preflight_cli._request(**options)
    assert (request.tier, request.fail_on) == (tier, fail_on)
    assert request.context.target == TargetVersion.parse("1.34")
    assert isinstance(request.context.config, Config)
    # the cluster tier alone connects
    assert (request.context.cluster is not None) == (tier is Tier.CLUSTER)


@pytest.mark.parametrize(("shares", "parsed"), [
    (None, None), ("memory", Shares("memory")), ("4", Shares("count", 4)),
])
def test_plan_s_request_holds_core_values(shares: str | None, parsed: Shares | None) -> None:
    request = plan_cli._request(paths=("m",), inventory=(), target_version="1.33",
                                consumable_shares=shares, full_matches=False, config=None,
                                connection=Connection())
    assert request.consumable_shares == parsed
    assert request.context.target == TargetVersion.parse("1.33")
    assert request.context.cluster is None  # no connection flag: no connection options
