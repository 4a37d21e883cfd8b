"""gpudra.safe_write: the one way gpudra writes a file, and reads back one it wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudra.errors import UnreadableInputError
from gpudra.safe_write import TEMP_SUFFIX, WriteRefused, read_regular, replace


def make(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "target"
    if kind == "link":
        (tmp_path / "elsewhere").write_text("theirs\n")
        os.symlink(tmp_path / "elsewhere", path)
    elif kind == "dangling":
        os.symlink(tmp_path / "nowhere", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path = Path("/dev/null")
    return path


@pytest.mark.parametrize("kind", ["link", "dangling", "fifo", "directory", "device"])
def test_replace_refuses_what_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    path = make(tmp_path, kind)
    with pytest.raises(WriteRefused, match="gpudra writes only regular files"):
        replace(path, (b"new\n",))
    assert not (tmp_path / "nowhere").exists()
    if kind == "link":
        assert (tmp_path / "elsewhere").read_text() == "theirs\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def test_replace_keeps_the_mode_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    replace(path, (b"new", b"\n"))
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o640
    replace(tmp_path / "fresh.json", (b"x",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "report.json"]


@pytest.mark.parametrize("kind", ["link", "fifo", "directory", "device"])
def test_read_regular_refuses_what_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    with pytest.raises(UnreadableInputError, match="reads back only regular files"):
        read_regular(make(tmp_path, kind), 100)


def test_read_regular_caps_and_tells_absence(tmp_path: Path) -> None:
    assert read_regular(tmp_path / "absent", 10) is None
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(UnreadableInputError, match="over the 10-byte cap"):
        read_regular(tmp_path / "big", 10)
    assert read_regular(tmp_path / "big", 11) == b"x" * 11
