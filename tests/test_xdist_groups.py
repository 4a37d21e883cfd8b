"""The groups .ci/run's two pytest workers share tests by (tests/support/workers.py): one
group per directory that shares clusters, one per other module, the longest groups first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support import workers

TESTS = workers.TESTS

GROUPS = [
    ("tests/journey/test_gke_journey.py::test_the_runbook_runs", "journey"),
    ("tests/journey/test_kwok.py::test_kwok_runs_device_plugin_and_dra_pods", "journey"),
    ("tests/controlplane/test_dry_run.py::test_golden_output_is_accepted[mig]", "controlplane"),
    ("tests/controlplane/test_client.py::test_x[a::b]", "controlplane"),
    ("tests/cluster/test_cluster_audit.py::test_y[tests/journey/x.py]",
     "cluster/test_cluster_audit.py"),
    ("tests/test_docs_commands.py::test_documented_command_runs[docs/cluster.md:12]",
     "test_docs_commands.py"),
]


@pytest.mark.parametrize(("nodeid", "group"), GROUPS)
def test_group_of_a_test(nodeid: str, group: str) -> None:
    assert workers.group_of_node(nodeid) == group


ORDERS = [
    # collection order -> the order a worker hands over (journey, then controlplane, then the
    # rest as collected; each group's tests in their own order)
    (["cluster/a.py", "controlplane/b.py", "dra/c.py", "journey/d.py", "journey/e.py",
      "controlplane/f.py", "test_g.py"],
     ["journey/d.py", "journey/e.py", "controlplane/b.py", "controlplane/f.py",
      "cluster/a.py", "dra/c.py", "test_g.py"]),
    (["test_a.py", "test_b.py"], ["test_a.py", "test_b.py"]),
    ([], []),
]


@pytest.mark.parametrize(("collected", "handed"), ORDERS)
def test_whole_directories_go_first(collected: list[str], handed: list[str]) -> None:
    items = [SimpleNamespace(path=TESTS / path) for path in collected]
    ordered = workers.reorder(items)
    assert [Path(item.path).relative_to(TESTS).as_posix() for item in ordered] == handed


MODULES = ["tests/test_plurals.py", "tests/test_printable.py", "tests/test_stdin_name.py",
           "tests/test_reading.py"]
# reads a line of a table longer than 80 columns whole: it failed on a worker, which had
# COLUMNS=80 where the run had none
WIDE = "::test_skipped_documents_are_counted_and_listed_with_verbose"


def test_two_workers_run_each_module_on_one_of_them(tmp_path: Path) -> None:
    """The suite's own wiring (tests/conftest.py's hooks) on four small modules, as .ci/run
    runs pytest, with no COLUMNS: every test passes, and a module's tests report from the
    same worker."""
    pytest.importorskip("xdist")
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", "--no-loadscope-reorder", "-v",
                           "--basetemp", str(tmp_path / "inner"), *MODULES[:-1],
                           MODULES[-1] + WIDE],
                          capture_output=True, text=True, cwd=TESTS.parent, timeout=300,
                          env=environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers_of: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", done.stdout,
                                     re.M):
        workers_of.setdefault(nodeid.split("::")[0], set()).add(worker)
    assert sorted(workers_of) == sorted(MODULES)
    assert {module: len(found) for module, found in workers_of.items()} == {
        module: 1 for module in MODULES}


TERMINALS = [
    # (the controller's environment, the worker's before) -> the worker's after
    ({}, {"COLUMNS": "80", "LINES": "24", "HOME": "/h"}, {"HOME": "/h"}),
    ({"COLUMNS": "132"}, {"COLUMNS": "80", "LINES": "24"}, {"COLUMNS": "132"}),
    ({"COLUMNS": "100", "LINES": "40"}, {}, {"COLUMNS": "100", "LINES": "40"}),
]


@pytest.mark.parametrize(("controller", "worker", "after"), TERMINALS)
def test_a_worker_gets_the_controllers_terminal_variables(
        controller: dict[str, str], worker: dict[str, str], after: dict[str, str]) -> None:
    handed = workers.terminal_environment({**controller, "HOME": "/c"})
    workers.restore_terminal_environment(worker, handed)
    assert worker == after
