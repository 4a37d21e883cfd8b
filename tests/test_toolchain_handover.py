"""The Go parts a run needs are built once, by the pytest-xdist controller, on the terminal
(tests/support/handover.py): the workers say what their collection needs, the controller builds
it before any test is handed out, and in CI a part that cannot be built stops the run there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oracle import client as oracle
from tests.support import handover, toolchain

ROOT = Path(__file__).resolve().parent.parent
ORACLE_137 = toolchain.ORACLES["1.37"]
PLANE = next(iter(toolchain.PLANES.values()))

RECORDS = [
    # what a worker's collection needs -> what the controller reads back
    ({}, {}),
    ({PLANE.name: (PLANE, 3)}, {PLANE.name: 3}),
    ({PLANE.name: (PLANE, 1), toolchain.KWOK.name: (toolchain.KWOK, 7),
      ORACLE_137.name: (ORACLE_137, 2)},
     {PLANE.name: 1, toolchain.KWOK.name: 7, ORACLE_137.name: 2}),
]


@pytest.mark.parametrize(("wanted", "counts"), RECORDS)
def test_the_controller_reads_what_a_worker_recorded(tmp_path: Path, wanted: dict,
                                                     counts: dict[str, int]) -> None:
    handover.record({handover.WORKERINPUT_KEY: str(tmp_path), "workerid": "gw1"}, wanted)
    read = handover.read(tmp_path, "gw1")
    assert {name: count for name, (_, count) in read.items()} == counts
    assert all(read[name][0] is toolchain.TOOLS[name] for name in read)


@pytest.mark.parametrize(("written", "counts"), [
    (None, {}),  # the worker's collection failed before it wrote
    ('{"a tool of another checkout": 4, "' + PLANE.name + '": 2}', {PLANE.name: 2}),
], ids=["nothing written", "unknown name"])
def test_what_the_controller_leaves_out(tmp_path: Path, written: str | None,
                                        counts: dict[str, int]) -> None:
    if written is not None:
        (tmp_path / "gw0.json").write_text(written)
    assert {name: count for name, (_, count) in handover.read(tmp_path, "gw0").items()} == counts


# One oracle test: the cheapest Go part (seconds with a warm Go build cache), built into an
# empty cache so the run must build it.
ONE_ORACLE_TEST = "tests/oracle/test_oracle.py::test_strict_decoding_words_errors_as_the_api_server"
BUILDING = "building the Kubernetes 1.37 oracle"


def _inner_run(tmp_path: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PATH": path, "GPUDRA_ORACLE_CACHE": str(tmp_path / "cache"),
                   "GPUDRA_REQUIRE_GO": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--basetemp", str(tmp_path / "inner"), *args, ONE_ORACLE_TEST],
                          capture_output=True, text=True, cwd=ROOT, env=environment,
                          timeout=900)


def test_two_workers_build_once_on_the_controller_before_the_tests(tmp_path: Path) -> None:
    """The README's command (two workers by addopts) on a cold cache: the build's lines reach
    the terminal once, before xdist hands out the tests, and the test finds the binary."""
    if shutil.which("go") is None:
        pytest.skip("Go is not on PATH")
    done = _inner_run(tmp_path, path=os.environ["PATH"])
    output = done.stdout
    assert done.returncode == 0, output[-3000:] + done.stderr[-3000:]
    assert "created: 2/2 workers" in output
    assert output.count(BUILDING) == 1  # by the controller, not once a worker
    assert output.index(BUILDING) < output.index("2 workers [1 item]")
    assert "built the Kubernetes 1.37 oracle" in output
    assert [path.name for path in (tmp_path / "cache").iterdir()] == \
        [oracle.cached_path("1.37").name]


def _path_without_go() -> str:
    kept = [folder for folder in os.environ["PATH"].split(os.pathsep)
            if folder and not (Path(folder) / "go").exists()]
    return os.pathsep.join([str(Path(sys.executable).parent), *kept])


@pytest.mark.parametrize("workers", ["2", "0"])
def test_in_ci_a_part_that_cannot_be_built_stops_the_run_before_the_tests(
        tmp_path: Path, workers: str) -> None:
    done = _inner_run(tmp_path, "-n", workers, path=_path_without_go())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "the tests need what could not be built" in done.stdout + done.stderr
    assert "no tests ran" in done.stdout
