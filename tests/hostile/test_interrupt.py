"""Item 3: a --claims-file convert killed (SIGKILL, SIGTERM) or interrupted (SIGINT) at a
random point of its writes leaves a valid tree (no workload refers to a template that is not
there), and running it again gives exactly the tree of an uninterrupted run, with no temp file
left.

Bounded: 4 kustomize directories x 30 Jobs; the kill points are drawn from a seeded random
generator over the measured write phase, so the cases are the same on every run.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.convert import journal as journal_module
from tests.support.manifests import gpu_job

DIRS, JOBS = 4, 30
TRIALS = 4  # per signal
JOB = gpu_job("job-{index}", gpus="{count}", container="main", image="cuda",
              restart_never=True)
COMMAND = ["convert", "t", "--claims-file", "gpu-claims.yaml", "-q"]


def make_tree(root: Path) -> None:
    for d in range(DIRS):
        directory = root / "t" / f"app{d}"
        directory.mkdir(parents=True)
        names = []
        for i in range(JOBS):
            (directory / f"job-{i}.yaml").write_text(JOB.format(index=i, count=1 + i % 4))
            names.append(f"job-{i}.yaml")
        (directory / "kustomization.yaml").write_text(
            f"namespace: team-{d}\nresources:\n" + "".join(f"- {n}\n" for n in names))


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "t").rglob("*")) if p.is_file()}


def start(root: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gpudra", *COMMAND], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=environment(root))


def environment(root: Path) -> dict[str, str]:
    """gpudra's environment for a tree in `root`: its cache (the journal) in `root/cache`."""
    return {**os.environ, "NO_COLOR": "1", "GPUDRA_CACHE_DIR": str(root / "cache")}


def journal_of_tree(root: Path) -> Path:
    """Where the journal of `convert t` in `root` goes."""
    return journal_module.journal_path((os.path.realpath(root / "t"),), environment(root))


def until_writing(process: subprocess.Popen, root: Path, timeout: float = 60) -> float:
    """Wait for the journal (written just before the first file); the time it appeared."""
    journal = journal_of_tree(root)
    deadline = time.monotonic() + timeout
    while not journal.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("convert ended before it began writing")
        time.sleep(0.001)
    return time.monotonic()


def assert_valid(root: Path) -> None:
    """Every template a workload names is in its directory's claims file, which its
    kustomization lists."""
    for d in range(DIRS):
        directory = root / "t" / f"app{d}"
        claims = directory / "gpu-claims.yaml"
        defined = set(re.findall(r"^  name: (\S+)$", claims.read_text(), re.M)) \
            if claims.exists() else set()
        for job in directory.glob("job-*.yaml"):
            for name in re.findall(r"resourceClaimTemplateName: (\S+)", job.read_text()):
                assert name in defined, f"{job} names {name}, which is nowhere"
                assert "gpu-claims.yaml" in (directory / "kustomization.yaml").read_text()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], float]:
    """The uninterrupted result, and how long its writes took."""
    root = tmp_path_factory.mktemp("reference")
    make_tree(root)
    process = start(root)
    began = until_writing(process, root)
    assert process.wait(timeout=120) == 0, process.stderr.read()
    return snapshot(root), max(time.monotonic() - began, 0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM],
                         ids=["SIGKILL", "SIGINT", "SIGTERM"])
def test_rerun_after_an_interruption_gives_the_uninterrupted_result(
        tmp_path: Path, reference: tuple[dict[str, bytes], float], sig: signal.Signals) -> None:
    expected, write_time = reference
    rng = random.Random(f"issue-15-{sig.name}")
    interrupted = 0
    for trial in range(TRIALS):
        root = tmp_path / f"trial{trial}"
        make_tree(root)
        process = start(root)
        until_writing(process, root)
        time.sleep(rng.uniform(0, 0.6) * write_time)  # early: trials run faster than the first
        if process.poll() is None:
            process.send_signal(sig)
            interrupted += 1
        code = process.wait(timeout=60)
        stderr = process.stderr.read().decode()
        assert "internal error" not in stderr, stderr
        if sig == signal.SIGINT and code == 130:
            assert "interrupted" in stderr
        assert_valid(root)
        rerun = subprocess.run([sys.executable, "-m", "gpudra", *COMMAND], cwd=root,
                               env=environment(root),
                               capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert snapshot(root) == expected, f"trial {trial}: the rerun differs"
        leftovers = [p.name for p in (root / "t").rglob(".*") if p.is_file()]
        assert leftovers == [], leftovers
        assert not journal_of_tree(root).exists()
        shutil.rmtree(root)
    print(f"{sig.name}: {interrupted} of {TRIALS} trials stopped a run mid-write "
          f"(writes take {write_time:.2f} s)")
    assert interrupted >= 1, "no trial stopped the run while it was writing"


def test_check_and_diff_report_an_unfinished_run(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUDRA_CACHE_DIR", str(tmp_path / "cache"))
    process = start(tmp_path)
    until_writing(process, tmp_path)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    if not journal_of_tree(tmp_path).exists():
        pytest.skip("the run finished before the kill")
    for mode in ("--check", "--diff"):
        result = CliRunner().invoke(app, ["convert", "t", mode, "--claims-file",
                                          "gpu-claims.yaml"])
        assert result.exit_code == 3
        assert "interrupted convert" in result.stdout + result.stderr
    assert journal_of_tree(tmp_path).exists()  # --check writes nothing, not even that


def test_the_journal_is_written_one_entry_at_a_time_and_read_back(tmp_path: Path) -> None:
    import json

    from gpudra.convert import journal

    taken: list[int] = []
    roots = (str(tmp_path),)

    def entries():  # noqa: ANN202 - the spool hands out one file's bytes at a time
        for i in range(3):
            taken.append(i)
            yield journal.Entry(str(tmp_path / f"f{i}.yaml"), None if i else "d" * 64,
                                f"kind: Job # é {i}\n".encode())

    path = journal.begin(roots, entries())
    assert taken == [0, 1, 2] and path == journal.journal_path(roots)
    assert not path.is_relative_to(tmp_path)  # in the cache, never in the tree
    written = path.read_bytes()
    document = json.loads(written)
    assert written == json.dumps(document).encode()  # what json.dumps gives
    assert document["roots"] == [str(tmp_path)] and document["version"] == 2
    assert journal.journal_of(path, roots) == list(entries())
    assert not list(path.parent.glob("*.gpudra-tmp"))
