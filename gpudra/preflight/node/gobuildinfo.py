"""The build information a Go binary carries, read from the file without running it.

Under `--host-root` no host binary may run (it would report on this machine), yet containerd
and CRI-O are Go programs, and the Go linker embeds what `go version -m` prints: the Go
version, the main module and its version, the dependencies, and build settings such as
`-ldflags`. Format (Go's `debug/buildinfo`, Go 1.18+ inline form; the older pointer form is
read too): a 32-byte header at a 16-byte boundary in the `.go.buildinfo` ELF section (else at
the start of the first writable, non-executable segment) that starts with the 14 bytes
`\\xff Go buildinf:`, then the pointer size and a flags byte. With flag 2 the two strings
(Go version, module info) follow the header, each prefixed by its length as an unsigned
varint; without it the header holds the addresses of two Go string headers. The module info
is framed by 16-byte sentinels, and is lines of `path`, `mod`, `dep`, `=>` and `build`
(docs/facts.md).

ELF only (Linux nodes); reads the headers and at most 64 KiB plus the two strings.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpudra.preflight.node.host import open_regular

MAGIC = b"\xff Go buildinf:"
HEADER_SIZE = 32
ALIGN = 16
SCAN_BYTES = 64 * 1024
MAX_STRING = 1 << 20  # module info of a large program is tens of KiB
_PT_LOAD, _PF_X, _PF_W = 1, 1, 2


@dataclass(frozen=True)
class GoBuildInfo:
    go_version: str
    path: str = ""            # the main package
    module: str = ""          # the main module
    module_version: str = ""  # "(devel)" for a build from a checkout without a VCS tag
    deps: dict[str, str] = field(default_factory=dict)      # module -> version
    settings: dict[str, str] = field(default_factory=dict)  # build settings (-ldflags, ...)

    def version_of(self, module: str) -> str | None:
        """The version this binary was built at for `module`: the main module's own version,
        else the one `-ldflags -X <module>/....Version=...` set, else a dependency's."""
        if module == self.module:
            if self.module_version and self.module_version != "(devel)":
                return self.module_version
            stamped = re.search(rf"-X[= ]['\"]?{re.escape(module)}/[\w./-]*\.Version=([^\s'\"]+)",
                                self.settings.get("-ldflags", ""))
            return stamped.group(1) if stamped else None
        return self.deps.get(module)


class _Elf:
    def __init__(self, handle: BinaryIO) -> None:
        self._f = handle
        self._size = os.fstat(handle.fileno()).st_size
        ident = self._read(0, 64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or \
                ident[5] not in (1, 2):
            raise ValueError("not an ELF file")
        self.wide = ident[4] == 2
        self.order = "<" if ident[5] == 1 else ">"
        if self.wide:
            phoff, shoff = struct.unpack_from(self.order + "QQ", ident, 0x20)
            phentsize, phnum, shentsize, shnum, shstrndx = \
                struct.unpack_from(self.order + "5H", ident, 0x36)
        else:
            phoff, shoff = struct.unpack_from(self.order + "II", ident, 0x1C)
            phentsize, phnum, shentsize, shnum, shstrndx = \
                struct.unpack_from(self.order + "5H", ident, 0x2A)
        self.segments = [self._segment(phoff + i * phentsize) for i in range(min(phnum, 256))]
        self.sections = self._sections(shoff, shentsize, shnum, shstrndx)

    def _read(self, offset: int, size: int) -> bytes:
        """At most `size` bytes at `offset`; nothing outside the file (a corrupt header)."""
        if not 0 <= offset < self._size or size <= 0:
            return b""
        self._f.seek(offset)
        return self._f.read(min(size, self._size - offset))

    def _segment(self, at: int) -> tuple[int, int, int, int, int]:
        """(type, flags, file offset, virtual address, size in the file)."""
        if self.wide:
            kind, flags, offset, vaddr, _, filesz = \
                struct.unpack(self.order + "IIQQQQ", self._read(at, 40))
        else:
            kind, offset, vaddr, _, filesz, _, flags = \
                struct.unpack(self.order + "7I", self._read(at, 28))
        return kind, flags, offset, vaddr, filesz

    def _sections(self, shoff: int, entsize: int, count: int,
                  names_index: int) -> dict[str, tuple[int, int]]:
        """Section name -> (file offset, size); empty when there are no section headers."""
        if not shoff or not count or count > 4096 or names_index >= count:
            return {}
        raw = []
        for i in range(count):
            entry = self._read(shoff + i * entsize, entsize)
            if self.wide:
                name, _, _, _, offset, size = struct.unpack_from(self.order + "IIQQQQ", entry)
            else:
                name, _, _, _, offset, size = struct.unpack_from(self.order + "6I", entry)
            raw.append((name, offset, size))
        table = self._read(raw[names_index][1], min(raw[names_index][2], 1 << 16))
        out = {}
        for name, offset, size in raw:
            end = table.find(b"\0", name)
            out[table[name:end if end >= 0 else None].decode("latin-1")] = (offset, size)
        return out

    def at_address(self, vaddr: int, size: int) -> bytes:
        for kind, _, offset, start, filesz in self.segments:
            if kind == _PT_LOAD and start <= vaddr < start + filesz:
                return self._read(offset + vaddr - start, min(size, start + filesz - vaddr))
        return b""

    def data_start(self) -> bytes:
        found = self.sections.get(".go.buildinfo")
        if found is not None:
            return self._read(found[0], min(found[1], SCAN_BYTES))
        for kind, flags, offset, _, filesz in self.segments:
            if kind == _PT_LOAD and flags & (_PF_X | _PF_W) == _PF_W:
                return self._read(offset, min(filesz, SCAN_BYTES))
        return b""


def read_go_build_info(path: Path) -> GoBuildInfo | None:
    """The build information of the Go binary at `path`; None when it is not a Go binary
    (or not ELF). Raises OSError when the file cannot be read."""
    with open_regular(path) as handle:
        try:
            return _read_build_info(_Elf(handle))
        except (ValueError, struct.error, IndexError):
            return None  # a corrupt or foreign file: no build information to be had


def _read_build_info(elf: _Elf) -> GoBuildInfo | None:
    data = elf.data_start()
    at = _aligned_magic(data)
    if at is None or len(data) - at < HEADER_SIZE:
        return None
    header = data[at:at + HEADER_SIZE]
    pointer_size, flags = header[14], header[15]
    if flags & 2:
        version, rest = _varint_string(data[at + HEADER_SIZE:])
        modinfo, _ = _varint_string(rest)
    else:
        order = ">" if flags else "<"
        pointer = order + ("Q" if pointer_size == 8 else "I")
        version = _go_string(elf, pointer, struct.unpack_from(pointer, header, 16)[0])
        modinfo = _go_string(elf, pointer,
                             struct.unpack_from(pointer, header, 16 + pointer_size)[0])
    if not version:
        return None
    # Strip the sentinels that frame the module info (absent without module support).
    modinfo = modinfo[16:-16] if len(modinfo) >= 33 and modinfo[-17:-16] == b"\n" else b""
    return _parse(version.decode("utf-8", "replace"), modinfo.decode("utf-8", "replace"))


def _aligned_magic(data: bytes) -> int | None:
    at = data.find(MAGIC)
    while at >= 0:
        if at % ALIGN == 0:
            return at
        at = data.find(MAGIC, at + 1)
    return None


def _varint_string(data: bytes) -> tuple[bytes, bytes]:
    length = shift = used = 0
    for byte in data[:10]:
        used += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    else:
        return b"", b""
    if length > min(MAX_STRING, len(data) - used):
        return b"", b""
    return data[used:used + length], data[used + length:]


def _go_string(elf: _Elf, pointer: str, address: int) -> bytes:
    """A Go string header (data address, length) at `address`, and its bytes."""
    size = struct.calcsize(pointer)
    header = elf.at_address(address, 2 * size)
    if len(header) < 2 * size:
        return b""
    start, length = struct.unpack(pointer + pointer[-1], header)
    if length > MAX_STRING:
        return b""
    data = elf.at_address(start, length)
    return data if len(data) == length else b""


def _parse(go_version: str, modinfo: str) -> GoBuildInfo:
    path = module = module_version = ""
    deps: dict[str, str] = {}
    settings: dict[str, str] = {}
    for line in modinfo.splitlines():
        kind, _, rest = line.partition("\t")
        fields = rest.split("\t")
        if kind == "path":
            path = rest
        elif kind == "mod" and len(fields) >= 2:
            module, module_version = fields[0], fields[1]
        elif kind == "dep" and len(fields) >= 2:
            deps[fields[0]] = fields[1]
        elif kind == "build":
            key, _, value = rest.partition("=")
            settings[key] = _unquote(value)
    return GoBuildInfo(go_version, path, module, module_version, deps, settings)


def _unquote(value: str) -> str:
    """Build setting values with spaces or quotes are Go-quoted (strconv.Quote)."""
    if value.startswith('"'):
        try:
            return str(json.loads(value))
        except ValueError:
            return value.strip('"')
    return value
