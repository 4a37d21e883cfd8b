"""Before the first test runs: build (or find cached) the control planes, kwok and the Go oracle
the collected tests need, saying so on the terminal past pytest's output capture (issue 36: the README's
second command sat silent for a quarter of an hour inside the first control-plane test).

tests/conftest.py calls `prepare` once collection is done. Which tests need what is read from
the tests themselves: a test using the `control_plane` fixture needs the newest release, one
using `control_plane_1_33` the 1.33 one, every test under tests/journey the releases and
kwok (its clusters are built by its modules' own fixtures), and one using `oracle`,
`oracle_132` or `oracles` the oracle of its release (tests/oracle). What cannot be built is
said here and left to the fixtures, which skip or, in CI, fail with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpudra.k8s.objects import plural
from tests.controlplane import build, progress
from tests.controlplane.releases import NEWEST, RELEASES, V1_33, Release
from tests.journey import kwok
from tests.oracle import client as oracle

JOURNEY = Path(__file__).resolve().parents[1] / "journey"


@dataclass(frozen=True)
class Tool:
    """Something the tests need built: its name in messages, how long a cold build takes,
    where it is cached (raising one of UNAVAILABLE without Go) and how to build it."""

    name: str
    estimate: str
    cached: Callable[[], Path]
    make: Callable[[progress.Say], Path]


def _plane(release: Release) -> Tool:
    return Tool(f"the Kubernetes {release.name} control plane", build.ESTIMATE,
                lambda: build.cached_path(release), lambda say: build.binary(release, say))


def _oracle(release: str) -> Tool:
    return Tool(f"the Kubernetes {release} oracle", oracle.ESTIMATE,
                lambda: oracle.cached_path(release), lambda say: oracle.build(release, say))


PLANES = {release.name: _plane(release) for release in RELEASES}
KWOK = Tool(f"kwok {kwok.VERSION}", kwok.ESTIMATE, kwok.cached_path, kwok.binary)
ORACLES = {release: _oracle(release) for release in oracle.RELEASES}
# fixture name -> the tools a test using it needs
BY_FIXTURE = {"control_plane": (PLANES[NEWEST.name],),
              "control_plane_1_33": (PLANES[V1_33.name],),
              "oracle": (ORACLES["1.37"],), "oracle_132": (ORACLES["1.32"],),
              "oracles": tuple(ORACLES.values())}  # picks one when it runs
# What a tool that cannot be built here raises (no Go, a failed build).
UNAVAILABLE = (build.Unavailable, oracle.GoMissing, oracle.OracleError)
JOURNEY_TOOLS = (*PLANES.values(), KWOK)
# every tool by its name (tests/support/handover.py: what a worker's collection needs, by name)
TOOLS = {tool.name: tool for tool in (*PLANES.values(), KWOK, *ORACLES.values())}


def needed(items: Iterable[Any]) -> dict[str, tuple[Tool, int]]:
    """Tool name -> (tool, how many of `items` need it), in build order (control planes,
    kwok, oracles)."""
    counts: dict[str, int] = {}
    for item in items:
        tools = [tool for name in getattr(item, "fixturenames", ())
                 for tool in BY_FIXTURE.get(name, ())]
        if JOURNEY in Path(str(getattr(item, "path", ""))).parents:
            tools += JOURNEY_TOOLS
        for tool in {tool.name: tool for tool in tools}.values():
            counts[tool.name] = counts.get(tool.name, 0) + 1
    return {name: (tool, counts[name]) for name, tool in TOOLS.items() if name in counts}


def prepare(items: Iterable[Any], say: progress.Say, *, make: bool = True) -> list[str]:
    """Say what the collected tests need, and (`make`) build what the cache does not have;
    what `provide` returns."""
    return provide(needed(items), say, make=make)


def provide(wanted: dict[str, tuple[Tool, int]], say: progress.Say, *,
            make: bool = True) -> list[str]:
    """Each tool: cached (where), unavailable (why), or built now with progress. Returns
    the lines saying which needed tools are missing (no Go, a failed build)."""
    missing: list[str] = []
    skipped = {tool.name for tool in (*PLANES.values(), KWOK)}
    if os.environ.get("GPUDRA_SKIP_CONTROLPLANE") and not os.environ.get("CI") and \
            skipped & wanted.keys():
        say("control plane: GPUDRA_SKIP_CONTROLPLANE is set: the tests that need it skip")
        wanted = {name: entry for name, entry in wanted.items() if name not in skipped}
    for tool, count in wanted.values():
        try:
            path = tool.cached()
        except UNAVAILABLE as error:
            say(f"{tool.name}: {error}; {_tests(count, 'needs', 'need')} it and "
                f"{'skips' if count == 1 else 'skip'} (fail in CI or under GPUDRA_REQUIRE_GO)")
            missing.append(f"{tool.name}: {error}")
            continue
        if path.exists():
            say(f"{tool.name}: cached ({path}), for {plural(count, 'test')}")
            continue
        if not make:
            say(f"{tool.name}: not built yet; {_tests(count, 'needs', 'need')} it "
                f"({tool.estimate})")
            continue
        say(f"{tool.name}: not built yet and {_tests(count, 'needs', 'need')} it: building "
            f"it now, before the tests ({tool.estimate}; `python -m tests.controlplane build` and "
            "`python -m tests.journey build` do it ahead of the suite)")
        try:
            tool.make(say)
        except UNAVAILABLE as error:
            say(f"{tool.name} could not be built: {error}")
            missing.append(f"{tool.name} could not be built: {error}")
    return missing


def stop_if_required(missing: list[str]) -> None:
    """In CI (or under GPUDRA_REQUIRE_GO) a needed tool that is missing ends the run before the
    first test, exit 1, as a failed build did when .ci/run built ahead of pytest: the tests
    needing it would fail one by one, each fixture trying the build again."""
    if missing and oracle.go_required():
        pytest.exit("the tests need what could not be built (CI, GPUDRA_REQUIRE_GO): "
                    + "; ".join(missing), returncode=1)


def _tests(count: int, one: str, many: str) -> str:
    """`1 test needs`, `2 tests need`."""
    return f"{plural(count, 'test')} {one if count == 1 else many}"


def terminal(config: Any) -> progress.Say:
    """A `say` that writes a line on pytest's terminal even while output is captured."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")

    def say(line: str) -> None:
        if capture is None or reporter is None:
            progress.to_stderr(line)
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
            reporter.flush()

    return say
