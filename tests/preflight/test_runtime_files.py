"""NODE002 under --host-root: the runtime's version from the files, never from running them.

The sources, in order: the binary's Go build information (a real Go binary built here when
the Go toolchain is on PATH, and ELF files assembled byte by byte for the layouts Go writes:
the inline form of Go 1.18+ and the pointer form before it, 64- and 32-bit, little- and
big-endian), then the dpkg status file and the rpm SQLite database. The result names its
source.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import subprocess
from pathlib import Path

import pytest

from gpudra.preflight.node import NodeOptions, run_node_checks
from gpudra.preflight.node.gobuildinfo import read_go_build_info
from gpudra.preflight.node.host import LocalHost

SENTINEL_START = bytes.fromhex("3077af0c9274080241e1c107e6d618e6")
SENTINEL_END = bytes.fromhex("f932433186182072008242104116d8f2")
BASE = 0x400000


def modinfo(*lines: str) -> bytes:
    return SENTINEL_START + ("\n".join(lines) + "\n").encode() + SENTINEL_END


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def elf(go_version: str, info: bytes, *, inline: bool = True, wide: bool = True,
        big: bool = False, section: bool = True) -> bytes:
    """An ELF executable that holds only a Go build-info blob, as the Go linker lays it out."""
    o = ">" if big else "<"
    ptr = "Q" if wide else "I"
    size = 8 if wide else 4
    ehsize, phentsize, shentsize = (64, 56, 64) if wide else (52, 32, 40)
    blob_at = 0x100
    if inline:
        blob = (b"\xff Go buildinf:" + bytes([size, 2 | (1 if big else 0)]) + b"\0" * 16
                + varint(len(go_version)) + go_version.encode() + varint(len(info)) + info)
    else:
        strings_at = blob_at + 32
        headers_at = strings_at + len(go_version) + len(info)
        headers_at += -headers_at % 8
        blob = b"\xff Go buildinf:" + bytes([size, 1 if big else 0])
        blob += struct.pack(o + ptr * 2, BASE + headers_at, BASE + headers_at + 2 * size)
        blob += b"\0" * (32 - len(blob)) + go_version.encode() + info
        blob += b"\0" * (headers_at - blob_at - len(blob))
        blob += struct.pack(o + ptr * 4, BASE + strings_at, len(go_version),
                            BASE + strings_at + len(go_version), len(info))
    names = b"\0.go.buildinfo\0.shstrtab\0" if section else b"\0.data\0.shstrtab\0"
    names_at = blob_at + len(blob)
    sections_at = names_at + len(names) + (-(names_at + len(names)) % 8)
    total = sections_at + 3 * shentsize
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big else 1, 1]) + b"\0" * 9
    if wide:
        header = ident + struct.pack(o + "HHIQQQIHHHHHH", 2, 62, 1, 0, ehsize, sections_at, 0,
                                     ehsize, phentsize, 1, shentsize, 3, 2)
        program = struct.pack(o + "IIQQQQQQ", 1, 6, 0, BASE, BASE, total, total, 0x1000)
        entry = lambda name, kind, at, n: struct.pack(o + "IIQQQQIIQQ", name, kind, 3,  # noqa: E731
                                                      BASE + at, at, n, 0, 0, 16, 0)
    else:
        header = ident + struct.pack(o + "HHIIIIIHHHHHH", 2, 3, 1, 0, ehsize, sections_at, 0,
                                     ehsize, phentsize, 1, shentsize, 3, 2)
        program = struct.pack(o + "8I", 1, 0, BASE, BASE, total, total, 6, 0x1000)
        entry = lambda name, kind, at, n: struct.pack(  # noqa: E731
            o + "10I", name, kind, 3, BASE + at, at, n, 0, 0, 16, 0)
    body = bytearray(total)
    body[:len(header)] = header
    body[ehsize:ehsize + len(program)] = program
    body[blob_at:blob_at + len(blob)] = blob
    body[names_at:names_at + len(names)] = names
    sections = (b"\0" * shentsize + entry(1, 1, blob_at, len(blob))
                + entry(names.index(b".shstrtab"), 3, names_at, len(names)))
    body[sections_at:] = sections
    return bytes(body)


CONTAINERD_V2_STAMPED = modinfo(
    "path\tgithub.com/containerd/containerd/v2/cmd/containerd",
    "mod\tgithub.com/containerd/containerd/v2\t(devel)\t",
    "dep\tgithub.com/containerd/cgroups/v3\tv3.0.5\th1:abc=",
    "build\t-ldflags=\"-X github.com/containerd/containerd/v2/version.Version=v2.1.4 "
    "-X github.com/containerd/containerd/v2/version.Revision=abc -s -w\"",
    "build\tCGO_ENABLED=1")
CONTAINERD_V1_MODULE = modinfo(
    "path\tgithub.com/containerd/containerd/cmd/containerd",
    "mod\tgithub.com/containerd/containerd\tv1.7.1\t")
K3S = modinfo(
    "path\tgithub.com/k3s-io/k3s/cmd/containerd",
    "mod\tgithub.com/k3s-io/k3s\t(devel)\t",
    "dep\tgithub.com/containerd/containerd\tv1.7.23-k3s2\t",
    "=>\tgithub.com/k3s-io/containerd\tv1.7.23-k3s2\th1:x=")
UNSTAMPED = modinfo("path\tgithub.com/containerd/containerd/v2/cmd/containerd",
                    "mod\tgithub.com/containerd/containerd/v2\t(devel)\t")


@pytest.mark.parametrize("layout", [
    {}, {"inline": False}, {"wide": False}, {"big": True}, {"wide": False, "big": True},
    {"inline": False, "wide": False, "big": True}, {"section": False}],
    ids=["inline-64-le", "pointers-64-le", "inline-32-le", "inline-64-be", "inline-32-be",
         "pointers-32-be", "no-buildinfo-section"])
def test_build_info_is_read_in_every_layout(tmp_path: Path, layout: dict) -> None:
    binary = tmp_path / "containerd"
    binary.write_bytes(elf("go1.23.4", CONTAINERD_V2_STAMPED, **layout))
    info = read_go_build_info(binary)
    assert info is not None and info.go_version == "go1.23.4"
    assert info.module == "github.com/containerd/containerd/v2"
    assert info.version_of("github.com/containerd/containerd/v2") == "v2.1.4"
    assert info.deps == {"github.com/containerd/cgroups/v3": "v3.0.5"}


def test_files_that_are_no_go_binaries_have_no_build_info(tmp_path: Path) -> None:
    (tmp_path / "script").write_text("#!/bin/sh\nexec containerd-real \"$@\"\n")
    (tmp_path / "c-program").write_bytes(elf("go1", b"").replace(b"\xff Go", b"\0 Go"))
    (tmp_path / "corrupt").write_bytes(elf("go1", b"")[:90] + b"\xff" * 80)
    assert read_go_build_info(tmp_path / "script") is None
    assert read_go_build_info(tmp_path / "c-program") is None
    assert read_go_build_info(tmp_path / "corrupt") is None


def node002(root: Path):
    results = run_node_checks(LocalHost(root), NodeOptions())
    return next(r for r in results if r.id == "NODE002")


def install(root: Path, host_path: str, data: bytes | str) -> None:
    target = root / host_path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode())


@pytest.mark.parametrize(("host_path", "info", "version", "source"), [
    ("/usr/bin/containerd", CONTAINERD_V2_STAMPED, "2.1.4",
     "Go build information of /usr/bin/containerd (github.com/containerd/containerd/v2 v2.1.4)"),
    ("/usr/local/bin/containerd", CONTAINERD_V1_MODULE, "1.7.1",
     "(github.com/containerd/containerd v1.7.1)"),
    ("/var/lib/rancher/k3s/data/abc123/bin/containerd", K3S, "1.7.23",
     "/var/lib/rancher/k3s/data/abc123/bin/containerd (github.com/containerd/containerd "
     "v1.7.23-k3s2)"),
])
def test_node002_names_the_binary_it_read(tmp_path: Path, host_path: str, info: bytes,
                                          version: str, source: str) -> None:
    install(tmp_path, host_path, elf("go1.23.4", info))
    got = node002(tmp_path)
    shown = f"{got.message} {got.details}"
    assert got.outcome.value in ("pass", "fail") and version in got.message, shown
    assert any(source in d for d in map(str, got.details)), shown
    if version == "1.7.1":  # 1.7.0/1.7.1 ignore the CRI CDIDevices field
        assert got.outcome.value == "fail"


def test_the_package_database_when_the_binary_has_no_version(tmp_path: Path) -> None:
    install(tmp_path, "/usr/bin/containerd", elf("go1.22.1", UNSTAMPED))
    got = node002(tmp_path)
    assert got.outcome.value == "unavailable"
    assert "/usr/bin/containerd carries no version" in got.message
    install(tmp_path, "/var/lib/dpkg/status",
            "Package: containerd\nStatus: deinstall ok config-files\nVersion: 1.6.0-1\n\n"
            "Package: containerd.io\nStatus: install ok installed\nPriority: optional\n"
            "Version: 1.7.27-1\nDescription: An open and reliable container runtime\n"
            " more text: with a colon\n")
    got = node002(tmp_path)
    assert got.outcome.value == "pass" and "containerd 1.7.27" in got.message
    assert any("dpkg status (/var/lib/dpkg/status): containerd.io 1.7.27-1" in d
               for d in map(str, got.details))


def rpm_header(**tags: str) -> bytes:
    numbers = {"name": 1000, "version": 1001, "release": 1002}
    data = b""
    index = b""
    for key, value in tags.items():
        index += struct.pack(">iiii", numbers[key], 6, len(data), 1)
        data += value.encode() + b"\0"
    return struct.pack(">II", len(tags), len(data)) + index + data


def test_the_rpm_database_names_cri_o(tmp_path: Path) -> None:
    database = tmp_path / "usr" / "lib" / "sysimage" / "rpm" / "rpmdb.sqlite"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE Packages (hnum INTEGER PRIMARY KEY, blob BLOB)")
        for header in (rpm_header(name="bash", version="5.2.26", release="4.fc40"),
                       rpm_header(name="cri-o", version="1.33.2", release="1.el9"),
                       b"\0\0"):
            connection.execute("INSERT INTO Packages (blob) VALUES (?)", (header,))
    connection.close()
    got = node002(tmp_path)
    assert got.outcome.value == "pass" and "1.33.2" in got.message
    assert any("rpm database (/usr/lib/sysimage/rpm/rpmdb.sqlite): cri-o 1.33.2-1.el9" in d
               for d in map(str, got.details))


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain to build a binary")
def test_a_real_go_binary_built_as_containerd_releases_are(tmp_path: Path) -> None:
    """A Go binary built here with containerd's release ldflags (its Makefile's
    `-X $(PKG)/version.Version=$(VERSION)`): read back without running it."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "go.mod").write_text("module github.com/containerd/containerd/v2\n\ngo 1.21\n")
    (source / "main.go").write_text("package main\n\nfunc main() {}\n")
    root = tmp_path / "host"
    binary = root / "usr" / "bin" / "containerd"
    binary.parent.mkdir(parents=True)
    subprocess.run(["go", "build", "-o", str(binary), "-ldflags",
                    "-s -w -X github.com/containerd/containerd/v2/version.Version=v2.0.5", "."],
                   cwd=source, check=True, capture_output=True, timeout=300,
                   env={"PATH": shutil.os.environ["PATH"], "HOME": str(tmp_path),
                        "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local",
                        "GOCACHE": shutil.os.environ.get("GOCACHE")
                        or str(Path.home() / ".cache" / "go-build")})
    got = node002(root)
    assert got.outcome.value == "pass" and "containerd 2.0.5" in got.message
    assert any("Go build information of /usr/bin/containerd" in d for d in map(str, got.details))
