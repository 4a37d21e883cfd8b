"""The host-root abstraction: chroot-style path resolution, reads, globs, commands."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudra.preflight.node.host import (
    CommandResult,
    FakeRunner,
    HostReadError,
    LocalHost,
    SubprocessRunner,
)


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "run" / "cdi").mkdir(parents=True)
    (tmp_path / "run" / "cdi" / "a.yaml").write_text("a")
    (tmp_path / "var").mkdir()
    os.symlink("/run", tmp_path / "var" / "run")  # absolute: must stay inside the root
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "rel").symlink_to("../run/cdi")
    (tmp_path / "etc" / "escape").symlink_to("../../../../../../../../etc")
    (tmp_path / "etc" / "loop").symlink_to("loop")
    return tmp_path


def test_absolute_symlink_is_resolved_under_the_root(root: Path) -> None:
    host = LocalHost(root)
    assert host.read_text("/var/run/cdi/a.yaml") == "a"
    assert host.real_path("/var/run/cdi") == "/run/cdi"


def test_relative_symlink_and_dotdot(root: Path) -> None:
    host = LocalHost(root)
    assert host.real_path("/etc/rel") == "/run/cdi"
    assert host.read_text("/etc/rel/a.yaml") == "a"
    assert host.real_path("/etc/../../../run/cdi/a.yaml") == "/run/cdi/a.yaml"


def test_symlink_cannot_escape_the_root(root: Path) -> None:
    host = LocalHost(root)
    # ../../.. past the root stops at the root: /etc inside the fake root, not the real /etc
    assert host.real_path("/etc/escape") == "/etc"
    assert host.list_dir("/etc/escape") == ["escape", "loop", "rel"]


def test_symlink_loop_is_a_read_error(root: Path) -> None:
    host = LocalHost(root)
    with pytest.raises(HostReadError, match="too many levels of symbolic links"):
        host.read_text("/etc/loop")
    assert not host.exists("/etc/loop")


def test_missing_and_unreadable(root: Path) -> None:
    host = LocalHost(root)
    assert host.read_text("/etc/nothing") is None
    assert host.read_text("/etc/nothing/below") is None
    assert host.list_dir("/nothing") is None
    with pytest.raises(HostReadError, match="is a directory"):
        host.read_text("/run/cdi")


def test_relative_host_paths_are_refused(root: Path) -> None:
    with pytest.raises(ValueError):
        LocalHost(root).read_text("etc/containerd/config.toml")


def test_glob_per_component(root: Path) -> None:
    (root / "etc" / "containerd" / "conf.d").mkdir(parents=True)
    for name in ("99-nvidia.toml", "10-base.toml", "notes.txt"):
        (root / "etc" / "containerd" / "conf.d" / name).write_text("")
    host = LocalHost(root)
    assert host.glob("/etc/containerd/conf.d/*.toml") == [
        "/etc/containerd/conf.d/10-base.toml", "/etc/containerd/conf.d/99-nvidia.toml"]
    assert host.glob("/etc/*/conf.d/9?-*.toml") == ["/etc/containerd/conf.d/99-nvidia.toml"]
    assert host.glob("/etc/nothing/*.toml") == []


def test_commands_only_under_the_real_root(root: Path) -> None:
    runner = FakeRunner({"crictl info": CommandResult(("crictl", "info"), 0, "{}", "")})
    assert LocalHost(root, runner).run(("crictl", "info")) is None  # root is not /
    enabled = LocalHost(root, runner, run_commands=True)
    assert enabled.run(("crictl", "info")).stdout == "{}"
    assert enabled.run(("nvidia-smi",)) is None  # not listed: does not exist
    assert runner.calls == [("crictl", "info"), ("nvidia-smi",)]


def test_real_root_enables_commands_by_default() -> None:
    host = LocalHost("/", FakeRunner({}))
    assert host.commands_enabled


def test_subprocess_runner_reports_missing_programs_and_failures() -> None:
    runner = SubprocessRunner(extra_dirs=(), timeout=10)
    assert runner(("gpudra-no-such-program-xyz",)) is None
    done = runner(("sh", "-c", "echo out; echo err >&2; exit 3"))
    assert done is not None and done.returncode == 3
    assert done.stdout == "out\n" and done.failure() == "`sh -c echo out; echo err >&2; exit 3` " \
        "exited 3: err"
