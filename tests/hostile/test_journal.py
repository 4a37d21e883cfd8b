"""Issue 31, family 1: the convert journal is an input like any other. A journal committed to
the tree is never read (journals live in the user's cache), and the one in the cache is read
without following a link, capped, typed, and only for files under the paths given whose bytes
are what the interrupted run read or wrote."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.convert import journal
from tests.support.manifests import gpu_job
from tests.support.run import invoke, said

JOB = gpu_job(namespace="ml")
GIT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n"
HOSTILE_CONFIG = GIT_CONFIG + b"\tfsmonitor = touch /tmp/pwned\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/t (a tree with a .git) and tmp/outside; cwd is tmp."""
    monkeypatch.chdir(tmp_path)
    for name in ("t/.git", "outside"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "t" / ".git" / "config").write_bytes(GIT_CONFIG)
    (tmp_path / "t" / "a.yaml").write_text(JOB.format(name="a"))
    (tmp_path / "t" / "b.yaml").write_text(JOB.format(name="b"))
    return tmp_path


def roots(work: Path) -> tuple[str, ...]:
    return (os.path.realpath(work / "t"),)


def document(work: Path, entries: list[tuple[Path, bytes | None, bytes]], **head: object) -> bytes:
    """A journal as an interrupted `convert t` in `work` would have left it."""
    body = {"version": 2, "host": os.uname().nodename, "roots": list(roots(work)),
            "files": [{"path": str(path), "old": None if old is None else
                       hashlib.sha256(old).hexdigest(),
                       "new": base64.b64encode(new).decode()} for path, old, new in entries]}
    body.update(head)
    return json.dumps(body).encode()


def plant(work: Path, data: bytes) -> Path:
    """`data` where journals go now (the cache), and its files, in the format journals had
    there, where they went before (the tree: a commit could carry one)."""
    cached = journal.journal_path(roots(work))
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    try:
        files = json.loads(data)["files"]
    except (ValueError, KeyError, TypeError):
        files = []
    (work / "t" / ".gpudra-convert.journal").write_text(json.dumps({"version": 1,
                                                                    "files": files}))
    return cached


def convert(work: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """convert in a child process: a journal that hangs it fails the test, not the suite."""
    return subprocess.run([sys.executable, "-m", "gpudra", "convert", "t", *args], cwd=work,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "NO_COLOR": "1"})


def test_a_journal_naming_git_config_does_not_rewrite_it(work: Path) -> None:
    config = work / "t" / ".git" / "config"
    plant(work, document(work, [(config, GIT_CONFIG, HOSTILE_CONFIG)], roots=["/"]))
    result = convert(work)
    assert config.read_bytes() == GIT_CONFIG
    assert result.returncode == 3, result.stderr
    assert "journal: written for other paths; not read" in result.stderr
    assert "resourceClaimTemplateName" in (work / "t" / "a.yaml").read_text()  # still converts


def test_a_journal_entry_outside_the_tree_is_neither_read_nor_written(work: Path) -> None:
    far = work / "outside" / "far.yaml"
    far.write_text("kind: ConfigMap\n")
    fifo = work / "outside" / "pipe.yaml"
    os.mkfifo(fifo)
    stale = work / "outside" / ".far.yaml.999999999.abcd.gpudra-tmp"
    stale.write_text("not ours\n")
    plant(work, document(work, [(fifo, b"", b"x"), (far, b"kind: ConfigMap\n", b"owned\n")]))
    result = convert(work)
    assert far.read_text() == "kind: ConfigMap\n" and stale.exists()
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("outside the paths given") == 2, result.stderr


def test_the_in_tree_journal_is_never_written_through_a_link(work: Path) -> None:
    os.symlink("../outside/journal", work / "t" / ".gpudra-convert.journal")  # dangling
    result = convert(work)
    assert result.returncode == 0, result.stderr
    assert list((work / "outside").iterdir()) == []


@pytest.mark.parametrize("kind", ["link-out", "dangling", "fifo", "dev-zero", "directory"])
def test_a_cached_journal_that_is_no_regular_file_is_refused_in_one_line(
        work: Path, kind: str) -> None:
    cached = journal.journal_path(roots(work))
    cached.parent.mkdir(parents=True)
    target = work / "outside" / "journal.json"
    if kind == "link-out":
        target.write_bytes(document(work, []))
        os.symlink(target, cached)
    elif kind == "dangling":
        os.symlink(target, cached)
    elif kind == "fifo":
        os.mkfifo(cached)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", cached)
    else:
        cached.mkdir()
    for mode in ("--check", None):
        result = convert(work, *([mode] if mode else []))
        assert result.returncode == 3, result.stderr
        lines = [line for line in result.stderr.splitlines() if "journal" in line]
        assert len(lines) == 1 and "not read" in lines[0], result.stderr
        assert "internal error" not in result.stderr
    assert not target.exists() or target.read_bytes() == document(work, [])
    assert "resourceClaimTemplateName" in (work / "t" / "a.yaml").read_text()


@pytest.mark.parametrize("head", [{"host": "elsewhere"}, {"version": 1}, {"files": "x"},
                                  {"roots": [], "extra": 1}])
def test_a_journal_of_another_host_version_or_shape_is_refused(work: Path, head: dict) -> None:
    a = work / "t" / "a.yaml"
    before = a.read_bytes()
    plant(work, document(work, [(a, before, b"kind: Pod\n")], **head))
    result = convert(work, "--check")
    assert result.returncode == 3
    assert "journal" in result.stderr and "not read" in result.stderr, result.stderr
    assert a.read_bytes() == before


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_another_users_journal_is_refused(work: Path) -> None:
    a = work / "t" / "a.yaml"
    before = a.read_bytes()
    path = plant(work, document(work, [(a, before, b"kind: Pod\n")]))
    os.chown(path, 12345, 12345)
    with pytest.raises(journal.JournalRefused, match="not written by this user"):
        journal.journal_of(path, roots(work))


def test_an_oversized_journal_is_refused_unread(work: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "JOURNAL_LIMIT", 100)
    path = plant(work, document(work, [(work / "t" / "a.yaml", None, b"x" * 200)]))
    with pytest.raises(journal.JournalRefused, match="over the 100-byte cap"):
        journal.journal_of(path, roots(work))


def test_a_plan_over_the_limit_writes_no_journal_and_still_converts(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "JOURNAL_LIMIT", 100)
    result = invoke("convert", "t")
    assert result.exit_code == 0, said(result)
    assert not journal.journal_path(roots(work)).exists()
    assert not list(journal.journal_path(roots(work)).parent.iterdir())  # no temp left


def test_a_journal_finishes_only_files_still_as_planned(work: Path) -> None:
    a, b = work / "t" / "a.yaml", work / "t" / "b.yaml"
    old_a, old_b = a.read_bytes(), b.read_bytes()
    path = plant(work, document(work, [(a, old_a, old_a + b"# done\n"),
                                       (b, b"something else", old_b + b"# done\n")]))
    written, problems = journal.finish(roots(work))
    assert written == 1 and a.read_bytes() == old_a + b"# done\n"
    assert b.read_bytes() == old_b
    assert problems == [(str(b), "changed since an interrupted convert planned it; "
                                 "left as it is")]
    assert not path.exists()


JOURNAL_BYTES = st.one_of(
    st.binary(max_size=200),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                 lambda inner: st.lists(inner, max_size=4) |
                 st.dictionaries(st.sampled_from(["version", "host", "roots", "files", "path",
                                                  "old", "new"]), inner, max_size=5),
                 max_leaves=20).map(lambda value: json.dumps(value).encode()))


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=JOURNAL_BYTES)
def test_any_journal_bytes_give_entries_or_one_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "journal.json"
    path.write_bytes(data)
    try:
        entries = journal.journal_of(path, (str(tmp_path),))
    except journal.JournalRefused as exc:
        assert "\n" not in str(exc)
    else:
        assert entries is not None and all(os.path.isabs(e.path) for e in entries)


def test_without_a_home_directory_no_journal_goes_into_the_tree(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GPUDRA_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "relative")
    result = invoke("convert", "t")
    assert result.exit_code == 0, said(result)
    assert "resourceClaimTemplateName" in (work / "t" / "b.yaml").read_text()
    assert sorted(p.name for p in work.iterdir()) == ["outside", "t"]


def test_a_relative_cache_directory_is_no_place_for_a_journal() -> None:
    """GPUDRA_CACHE_DIR=cache would put the journal inside whatever tree convert runs in."""
    from gpudra.convert.journal import cache_directory

    with pytest.raises(FileNotFoundError):
        cache_directory({"GPUDRA_CACHE_DIR": "cache", "HOME": "/home/u"})
    assert str(cache_directory({"GPUDRA_CACHE_DIR": "/var/cache/g"})) == "/var/cache/g"
