"""Data-driven node-tier tests: tests/preflight/node_cases/<CHECK>.yaml.

Each case builds a fake host root in a temporary directory and runs every node check against
it; the result of the file's check is compared with `expect`. A case may give:

- `files`: host path -> text (a path ending in `/` makes an empty directory);
- `symlinks`: host path -> link target (written as given, absolute or relative);
- `commands`: "argv joined by spaces" -> {stdout, stderr, rc}; programs not listed do not
  exist (the fake runner never runs anything);
- `commands_disabled: true`: behave like a host root other than `/` (no commands at all);
- `options`: NodeOptions fields (for example `container_runtime_version`);
- `expect`: `outcome`, and fragments that must appear in `message`, `remediation` and
  `details` (each detail fragment must appear in some detail line); `no_details` fragments
  must appear in none.

Every node check must have a case for every outcome it declares.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gpudra.preflight.node import NODE_CHECKS, NodeOptions, run_node_checks
from gpudra.preflight.node.host import CommandResult, FakeRunner, LocalHost
from tests.preflight.cluster_case_data import assert_expected

CASES_DIR = Path(__file__).parent / "node_cases"


def _case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("*.yaml"))


def _load_cases():
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        for case in spec["cases"]:
            yield pytest.param(spec["check"], case, id=f"{spec['check']}-{case['name']}")


def build_root(root: Path, case: dict) -> None:
    for host_path, text in (case.get("files") or {}).items():
        target = root / host_path.lstrip("/")
        if host_path.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for host_path, link in (case.get("symlinks") or {}).items():
        target = root / host_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, target)


def make_host(root: Path, case: dict) -> LocalHost:
    if case.get("commands_disabled"):
        return LocalHost(root, run_commands=False)
    outputs = {argv: CommandResult(tuple(argv.split()), out.get("rc", 0), out.get("stdout", ""),
                                   out.get("stderr", ""))
               for argv, out in (case.get("commands") or {}).items()}
    return LocalHost(root, FakeRunner(outputs), run_commands=True)


@pytest.mark.parametrize(("check_id", "case"), list(_load_cases()))
def test_node_case(check_id: str, case: dict, tmp_path: Path) -> None:
    build_root(tmp_path, case)
    results = run_node_checks(make_host(tmp_path, case), NodeOptions(**case.get("options", {})))
    assert [r.id for r in results] == [c.id for c in NODE_CHECKS]
    got = next(r for r in results if r.id == check_id)
    assert_expected(got, case["expect"])


def test_every_node_check_has_a_case_per_outcome() -> None:
    covered: dict[str, set[str]] = {}
    for path in _case_files():
        spec = yaml.safe_load(path.read_text())
        assert path.stem == spec["check"], path
        covered[spec["check"]] = {c["expect"]["outcome"] for c in spec["cases"]}
    for info in NODE_CHECKS:
        declared = {o.value for o in info.outcomes}
        assert info.id in covered, f"{info.id} has no tests/preflight/node_cases/{info.id}.yaml"
        assert declared <= covered[info.id], (info.id, declared - covered[info.id])
        assert covered[info.id] <= declared, (info.id, "a case expects an undeclared outcome")


def test_no_command_runs_outside_the_fake_runner(tmp_path: Path) -> None:
    """A host root other than / never runs commands, even real ones on PATH."""
    host = LocalHost(tmp_path)
    assert not host.commands_enabled
    assert host.run(("true",)) is None
