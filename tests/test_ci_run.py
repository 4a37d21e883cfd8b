""".ci/run and the README's second quickstart command are one command (`python -m pytest`, two
workers from pyproject.toml's addopts), and .ci/run's exit status, stage timings and smoke stage
behave as docs/ci.md says: .ci/run runs here on stand-ins for python3, pip, ruff, mypy and pytest
(each exits as the case says and notes how it was called), so no install and no suite runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / ".ci" / "run"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
WORKER_FLAGS = "-n 2 --dist loadgroup --no-loadscope-reorder"


def _second_quickstart_command(page: Path) -> str:
    """The `... && python -m pytest...` line of a page's sh blocks."""
    lines = [line for line in page.read_text().splitlines()
             if "pip install -e '.[test]'" in line and "pytest" in line]
    assert len(lines) == 1, f"{page.name}: {lines}"
    return lines[0].split("&&")[-1].strip()


def _ci_pytest_commands() -> list[str]:
    return [line.strip() for line in CI.read_text().splitlines()
            if re.match(r"\s*python3? -m pytest\b", line)]


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md"])
def test_the_pages_test_command_is_what_ci_runs(page: str) -> None:
    assert _ci_pytest_commands() == [_second_quickstart_command(ROOT / page)]


def test_the_worker_flags_are_in_pytests_addopts() -> None:
    addopts = PYPROJECT["tool"]["pytest"]["ini_options"]["addopts"]
    assert WORKER_FLAGS in addopts
    assert any(dep.startswith("pytest-xdist") for dep in
               PYPROJECT["project"]["optional-dependencies"]["test"])


# --- .ci/run on stand-ins ------------------------------------------------------------------

# The real tools .ci/run uses besides the stand-ins (apt-get stays out: chromium is a stand-in).
REAL_TOOLS = ("bash", "dirname", "basename", "date", "mktemp", "tar", "cat", "rm", "mkdir", "cp")
STAND_INS = ("python3", "ruff", "mypy", "chromium")
CALLS = "calls.log"
# A stand-in for python3, for the venv's python and pip, and for ruff and mypy: it notes its
# name and arguments, exits with $FAKE_<NAME>_RC (pytest and smoke for python's two uses) and
# makes a venv (bin/activate puts its bin first on PATH; bin/python and bin/pip are stand-ins).
STAND_IN = r"""#!/bin/sh
name=$(basename "$0")
echo "$name $*" >> "$CALLS_LOG"
case "$name $1 $2" in
  "python3 -m venv")
    mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && cp "$0" "$3/bin/pip" &&
      echo "PATH=\"$PWD/$3/bin:\$PATH\"" > "$3/bin/activate"
    exit "${FAKE_VENV_RC:-0}" ;;
  "python -m pytest") exit "${FAKE_PYTEST_RC:-0}" ;;
  "python .ci/smoke.py"*) exit "${FAKE_SMOKE_RC:-0}" ;;
  "pip install -e") exit "${FAKE_TEST_INSTALL_RC:-0}" ;;
  "pip install -q") exit "${FAKE_PLAIN_INSTALL_RC:-0}" ;;
  "ruff "*) exit "${FAKE_RUFF_RC:-0}" ;;
  "mypy "*) exit "${FAKE_MYPY_RC:-0}" ;;
esac
exit 0
"""


@dataclass(frozen=True)
class Case:
    name: str
    codes: dict[str, str]  # FAKE_<NAME>_RC -> its exit code
    status: int  # .ci/run's
    said: tuple[str, ...] = ()  # on its stderr
    ran_pytest: bool = True


CASES = [
    Case("green", {}, 0),
    Case("failed tests", {"PYTEST": "1"}, 1),
    Case("pytest usage error", {"PYTEST": "4"}, 4),
    Case("no tests collected", {"PYTEST": "5"}, 1, ("ci: pytest collected no tests",)),
    Case("smoke stage failed", {"SMOKE": "1"}, 1, ("ci: smoke stage failed",)),
    Case("plain install failed", {"PLAIN_INSTALL": "1"}, 1, ("ci: smoke stage failed",)),
    Case("ruff failed: the tests run all the same", {"RUFF": "1"}, 1, ("ci: ruff check failed",)),
    Case("mypy failed", {"MYPY": "1"}, 1, ("ci: mypy failed",)),
    Case("test install failed: no tests", {"TEST_INSTALL": "1"}, 1,
         ("ci: could not install gpudra with its test extras",), ran_pytest=False),
]
STAGES = ("chromium", "test install", "ruff and mypy", "pytest", "waiting for the smoke stage")


def _stand_in_path(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in REAL_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is not on PATH"
        (bin_dir / tool).symlink_to(found)
    for name in STAND_INS:
        (bin_dir / name).write_text(STAND_IN)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _run_ci(tmp_path: Path, case: Case) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy2(CI, checkout / ".ci" / "run")
    (checkout / "README.md").write_text("a checkout\n")
    calls = tmp_path / CALLS
    environment = {"PATH": str(_stand_in_path(tmp_path)), "CALLS_LOG": str(calls),
                   "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
                   **{f"FAKE_{name}_RC": code for name, code in case.codes.items()}}
    done = subprocess.run([str(checkout / ".ci" / "run")], capture_output=True, text=True,
                          cwd=tmp_path, env=environment, timeout=60)
    return done, calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_ci_run_exits_as_its_stages_did(tmp_path: Path, case: Case) -> None:
    done, calls = _run_ci(tmp_path, case)
    assert done.returncode == case.status, done.stdout + done.stderr
    for line in case.said:
        assert line in done.stderr
    pytest_calls = [call for call in calls if " -m pytest" in call]
    # the README's command, as it is: no flag of .ci/run's own
    assert pytest_calls == (["python -m pytest"] if case.ran_pytest else [])
    # the smoke stage ran beside, and its log is printed whatever happened
    assert any(call.startswith("pip install -q ") for call in calls)
    assert "ci: smoke stage (in the background):" in done.stdout
    # its log and its copy of the checkout are removed: only what the run was given is left
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bin", "checkout", CALLS])


def test_ci_run_prints_every_stages_seconds_and_the_total(tmp_path: Path) -> None:
    done, _ = _run_ci(tmp_path, CASES[0])
    timed = re.findall(r"^ci: (.+): \d+ s$", done.stderr, re.M)
    assert timed == list(STAGES)
    assert re.search(r"^ci: whole run: \d+ s, exit 0$", done.stderr, re.M)

