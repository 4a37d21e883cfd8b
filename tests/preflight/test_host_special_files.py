"""Issue 31, family 7: `preflight --node --host-root` reads only regular files. A FIFO where
containerd's config, a CDI spec or an imported file should be is refused at once with a
one-line result (before, the open waited for a writer forever); so is a socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpudra.preflight.node.host import HostReadError, LocalHost

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "config.toml")
    with pytest.raises(HostReadError, match=r"not a regular file \(a FIFO\)"):
        LocalHost(tmp_path).read_text("/etc/config.toml")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / "s.yaml"
    with socket.socket(socket.AF_UNIX) as server:
        try:
            server.bind(str(path))
        except OSError:
            pytest.skip("cannot bind a unix socket here")
        with pytest.raises(HostReadError):
            LocalHost(tmp_path).read_text("/run/s.yaml")


def test_a_symlink_to_a_fifo_is_refused(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "pipe")
    os.symlink("/etc/pipe", tmp_path / "etc" / "link.toml")
    with pytest.raises(HostReadError, match="FIFO"):
        LocalHost(tmp_path).read_text("/etc/link.toml")


def test_regular_files_are_read_as_before(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "a.toml").write_text("version = 2\n")
    assert LocalHost(tmp_path).read_text("/etc/a.toml") == "version = 2\n"


def test_preflight_node_with_fifos_finishes_and_names_them(tmp_path: Path) -> None:
    containerd = tmp_path / "etc" / "containerd"
    (containerd / "conf.d").mkdir(parents=True)
    (tmp_path / "etc" / "cdi").mkdir()
    os.mkfifo(containerd / "config.toml")
    os.mkfifo(tmp_path / "etc" / "cdi" / "nvidia.yaml")
    os.mkfifo(containerd / "conf.d" / "gpu.toml")
    (tmp_path / "etc" / "containerd" / "other.toml").write_text(
        'version = 2\nimports = ["/etc/containerd/conf.d/gpu.toml"]\n')
    run = subprocess.run([sys.executable, "-m", "gpudra", "preflight", "--node", "--host-root",
                          str(tmp_path), "-o", "json"], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[2])
    # unreadable files make their checks "unavailable", as a permission error does
    assert "internal error" not in run.stderr and run.returncode in (0, 1, 3), run.stderr
    text = json.dumps(json.loads(run.stdout))
    assert "/etc/containerd/config.toml: cannot read: not a regular file (a FIFO)" in text, text
    assert "make /etc/containerd/config.toml a regular file" in text, text  # not "run as root"
    assert "/etc/cdi/nvidia.yaml" in text and "FIFO" in text.split("/etc/cdi/nvidia.yaml", 1)[1]


def test_an_imported_fifo_is_refused(tmp_path: Path) -> None:
    containerd = tmp_path / "etc" / "containerd"
    (containerd / "conf.d").mkdir(parents=True)
    (containerd / "config.toml").write_text(
        'version = 2\nimports = ["/etc/containerd/conf.d/gpu.toml"]\n')
    os.mkfifo(containerd / "conf.d" / "gpu.toml")
    run = subprocess.run([sys.executable, "-m", "gpudra", "preflight", "--node", "--host-root",
                          str(tmp_path), "-o", "json"], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert "internal error" not in run.stderr, run.stderr
    assert "/etc/containerd/conf.d/gpu.toml: cannot read: not a regular file (a FIFO)" in \
        run.stdout, run.stdout
