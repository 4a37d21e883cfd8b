"""A long build says what it builds, how long it usually takes and how far it is; a lock held by
another run says who holds it and that this run waits (issue 36 item 1). Fake build steps and
fake clocks: no Go, no waiting."""

from __future__ import annotations

import fcntl
import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.controlplane import progress
from tests.controlplane.releases import NEWEST, V1_33
from tests.support import toolchain

EVERY = 30.0
# A build step in the shape of `go build -v`: module notes, then one import path per package
# on stderr; what it prints on stdout is the step's result.
FAKE_GO_BUILD = """
import sys
print("go: downloading example.com/a v1.0.0", file=sys.stderr)
for package in ("example.com/a", "example.com/b", "example.com/c"):
    print(package, file=sys.stderr, flush=True)
print("done")
"""
FAILING_BUILD = """
import sys
print("example.com/a", file=sys.stderr)
print("b/b.go:3:1: syntax error: unexpected }", file=sys.stderr)
sys.exit(1)
"""


def fast_clock(step: float = EVERY):
    """A clock that moves `step` seconds each time it is read: every loop of the build's wait
    is a heartbeat's worth of time."""
    ticks = itertools.count(0.0, step)
    return lambda: next(ticks)


def test_a_build_says_what_it_builds_how_long_it_takes_and_how_far_it_is() -> None:
    said: list[str] = []
    out = progress.run_build([sys.executable, "-c", FAKE_GO_BUILD], "the fake plane",
                             "~2 min", said.append, every=EVERY, clock=fast_clock())
    assert out == "done\n"
    assert said[0] == "building the fake plane (usually ~2 min); a line every 30s until done"
    beats = said[1:-1]
    assert beats and all(line.startswith("still building the fake plane: ") for line in beats)
    assert any("3 packages compiled (last: example.com/c)" in line for line in beats), beats
    assert said[-1].startswith("built the fake plane in ")
    assert said[-1].endswith("(3 packages compiled)")


def test_a_failed_build_says_its_last_lines() -> None:
    with pytest.raises(progress.BuildFailed, match="syntax error: unexpected"):
        progress.run_build([sys.executable, "-c", FAILING_BUILD], "the fake plane", "~2 min",
                           [].append, clock=fast_clock())


def test_a_build_past_its_timeout_is_killed_and_says_so() -> None:
    hanging = "import time\nprint('example.com/a', flush=True)\ntime.sleep(600)"
    with pytest.raises(progress.BuildFailed, match="took more than 1m00s"):
        progress.run_build([sys.executable, "-c", hanging], "the fake plane", "~2 min",
                           [].append, timeout=60, clock=fast_clock())


def test_a_lock_another_run_holds_is_waited_on_out_loud(tmp_path: Path) -> None:
    path = tmp_path / "controlplane.lock"
    other_run = open(path, "a+")  # another open file: flock treats it as another process
    fcntl.flock(other_run, fcntl.LOCK_EX)
    other_run.write("pid 4242 (building the Kubernetes v1.37.2 control plane) since 15:00:00 UTC")
    other_run.flush()
    naps: list[float] = []

    def sleep(seconds: float) -> None:  # the other run lets go during the second nap
        naps.append(seconds)
        if len(naps) == 2:
            fcntl.flock(other_run, fcntl.LOCK_UN)

    said: list[str] = []
    with progress.held_lock(path, "building kwok v0.8.0", said.append, every=EVERY,
                            clock=fast_clock(), sleep=sleep):
        held_note = path.read_text()
    other_run.close()
    assert said[0].startswith(f"waiting for {path}: held by pid 4242 (building the Kubernetes "
                              "v1.37.2 control plane) since 15:00:00 UTC; this run goes on")
    assert said[1].startswith(f"still waiting for {path} (") and "pid 4242" in said[1]
    assert said[2].startswith(f"got {path} after ")
    assert len(said) == 3 and len(naps) == 2
    assert held_note.startswith("pid ") and "(building kwok v0.8.0) since " in held_note
    assert path.read_text() == ""  # released: no stale note for the next run to quote


def test_a_free_lock_is_taken_without_a_word(tmp_path: Path) -> None:
    said: list[str] = []
    with progress.held_lock(tmp_path / "kwok.lock", "building kwok", said.append,
                            sleep=lambda _: pytest.fail("no wait on a free lock")):
        pass
    assert said == []


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0s"), (59.9, "59s"), (60, "1m00s"),
                                                (905, "15m05s"), (3720, "1h02m")])
def test_durations_read_as_people_say_them(seconds: float, shown: str) -> None:
    assert progress.duration(seconds) == shown


# --- before the suite: what the collected tests need (tests/support/toolchain.py) -----------

def _item(path: Path, *fixtures: str) -> SimpleNamespace:
    return SimpleNamespace(path=path, fixturenames=fixtures)


CONTROLPLANE = Path(__file__).resolve().parent
PLANE, PLANE_133 = (toolchain.PLANES[r.name].name for r in (NEWEST, V1_33))


@pytest.mark.parametrize(("items", "want"), [
    ([_item(CONTROLPLANE / "test_releases.py", "release")], {}),
    ([_item(CONTROLPLANE / "test_dry_run.py", "control_plane")] * 3, {PLANE: 3}),
    ([_item(CONTROLPLANE / "test_dry_run_1_33.py", "control_plane_1_33", "tmp_path")],
     {PLANE_133: 1}),
    ([_item(toolchain.JOURNEY / "test_kwok.py", "journey_cluster"),
      _item(CONTROLPLANE / "test_live.py", "reader", "control_plane")],
     {PLANE: 2, PLANE_133: 1, toolchain.KWOK.name: 1}),
    ([_item(CONTROLPLANE.parent / "oracle" / "test_oracle.py", "oracle"),
      _item(CONTROLPLANE.parent / "convert" / "test_golden.py", "oracles")],
     {toolchain.ORACLES["1.37"].name: 2, toolchain.ORACLES["1.32"].name: 1}),
], ids=["unit-tests-need-nothing", "newest", "1.33", "journey-needs-everything", "oracles"])
def test_what_the_collected_tests_need(items: list[SimpleNamespace],
                                       want: dict[str, int]) -> None:
    assert {name: count for name, (_, count) in toolchain.needed(items).items()} == want


def test_the_suite_says_what_is_cached_missing_or_unavailable_before_the_tests(
        tmp_path: Path) -> None:
    cached, missing = tmp_path / "cached", tmp_path / "missing"
    cached.touch()

    def build_missing(say: progress.Say) -> Path:
        say("(the build's own progress)")
        missing.touch()
        return missing

    def no_go() -> Path:
        raise toolchain.build.Unavailable("Go is not installed")

    tools = [toolchain.Tool("plane A", "~15 min", lambda: cached, lambda say: cached),
             toolchain.Tool("plane B", "~15 min", lambda: missing, build_missing),
             toolchain.Tool("kwok", "~5 min", no_go, lambda say: pytest.fail("no Go"))]
    said: list[str] = []
    toolchain.provide({tool.name: (tool, count) for tool, count in zip(tools, (1, 2, 2))},
                      said.append)
    assert said == [
        f"plane A: cached ({cached}), for 1 test",
        "plane B: not built yet and 2 tests need it: building it now, before the tests "
        "(~15 min; `python -m tests.controlplane build` and `python -m tests.journey build` do "
        "it ahead of the suite)",
        "(the build's own progress)",
        "kwok: Go is not installed; 2 tests need it and skip (fail in CI or under "
        "GPUDRA_REQUIRE_GO)",
    ]
    assert missing.exists()


def test_skipping_the_control_plane_still_prepares_the_oracle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDRA_SKIP_CONTROLPLANE", "1")
    monkeypatch.delenv("CI", raising=False)
    oracle = toolchain.Tool("the oracle", "~3 min", lambda: Path(__file__), lambda say: None)
    plane = toolchain.PLANES[NEWEST.name]
    said: list[str] = []
    toolchain.provide({plane.name: (plane, 3), oracle.name: (oracle, 2)}, said.append)
    assert said == ["control plane: GPUDRA_SKIP_CONTROLPLANE is set: the tests that need it skip",
                    f"the oracle: cached ({Path(__file__)}), for 2 tests"]
