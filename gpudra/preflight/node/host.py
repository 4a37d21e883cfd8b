"""The node as the checks see it: files under a host root, and (maybe) commands.

`--host-root DIR` points gpudra at a node's filesystem mounted somewhere else (a DaemonSet pod
with `hostPath: /` at `/host`, a disk image, a test fixture). Every path a check asks for is a
*host path* (`/etc/containerd/config.toml`) and is resolved as if `DIR` were `/`: symlinks are
followed with chroot semantics, so an absolute link target restarts at `DIR` and `..` stops at
`DIR`. A link can therefore never lead out of the root, and the common `/var/run -> /run` link
still works.

Commands (`nvidia-smi`, `crictl`, `containerd --version`, ...) are run only when the root is `/`:
a binary under another root would run against this machine's kernel, libraries and sockets and
report on the wrong node. Checks then say that the command was not run. Tests inject a fake
runner and never run real commands.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from gpudra.errors import GpudraError
from gpudra.regular_file import NotRegularFileError
from gpudra.regular_file import open_regular as open_regular_fd

MAX_SYMLINKS = 40  # Linux's limit (MAXSYMLINKS)
COMMAND_TIMEOUT = 15.0
MAX_READ_BYTES = 4 * 1024 * 1024  # config files and CDI specs are small; /proc files unbounded

# Where installers put tools that are not on PATH, checked after it: the GPU Operator installs
# nvidia-ctk there (NVIDIA's DRA install docs pass `nvidiaCtkPath=/usr/local/nvidia/toolkit/
# nvidia-ctk` for Operator-managed nodes).
EXTRA_TOOL_DIRS = ("/usr/local/nvidia/toolkit",)


class HostReadError(GpudraError):
    """A path exists (or may exist) but could not be read: permission, a loop, I/O."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self) -> str:
        """One line saying how the command failed, for a check message."""
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        reason = text[-1] if text else "no output"
        return f"`{' '.join(self.argv)}` exited {self.returncode}: {reason}"


CommandRunner = Callable[[Sequence[str]], "CommandResult | None"]
"""Runs argv; None when the program does not exist."""


class Host(Protocol):
    """What node checks may ask of a node. Paths are host paths (absolute, POSIX)."""

    @property
    def root(self) -> str: ...

    @property
    def commands_enabled(self) -> bool: ...

    def read_text(self, path: str) -> str | None:
        """The file's text (undecodable bytes replaced); None if it does not exist."""

    def is_dir(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[str] | None:
        """Sorted entry names; None if `path` is not a directory."""

    def glob(self, pattern: str) -> list[str]:
        """Host paths matching an absolute pattern (`*`, `?`, `[...]` per component), sorted."""

    def real_path(self, path: str) -> str:
        """`path` with every symlink resolved under the root, as a host path."""

    def local_path(self, path: str) -> Path:
        """Where `path` is on this machine (symlinks resolved under the root), for readers
        that need a real file: a binary's headers, an SQLite database."""

    def run(self, argv: Sequence[str]) -> CommandResult | None:
        """Run a command; None if commands are disabled or the program does not exist."""


def no_command_reason(host: Host, missing: str) -> str:
    """Why `host.run` gave no result, for a check message: commands are not run under this
    root (see the module docstring), or else `missing` (the program was not found)."""
    if not host.commands_enabled:
        return f"commands are not run when the host root is {host.root} (not /)"
    return missing


class LocalHost:
    """A host root on this machine's filesystem."""

    def __init__(self, root: str | os.PathLike[str] = "/", runner: CommandRunner | None = None,
                 *, run_commands: bool | None = None) -> None:
        self._root = Path(root).resolve()
        is_real_root = self._root == Path("/")
        enabled = is_real_root if run_commands is None else run_commands
        if runner is None and enabled:
            runner = SubprocessRunner()
        self._runner = runner if enabled else None

    @property
    def root(self) -> str:
        return str(self._root)

    @property
    def commands_enabled(self) -> bool:
        return self._runner is not None

    def _local(self, path: str) -> Path:
        """The resolved local path of a host path (chroot semantics, see module docstring)."""
        posix = PurePosixPath(path)
        if not posix.is_absolute():
            raise ValueError(f"host paths are absolute: {path!r}")
        done: list[str] = []
        pending = list(reversed(posix.parts[1:]))
        hops = 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if done:
                    done.pop()
                continue
            candidate = self._root.joinpath(*done, name)
            if not candidate.is_symlink():
                done.append(name)
                continue
            hops += 1
            if hops > MAX_SYMLINKS:
                raise HostReadError(path, "too many levels of symbolic links")
            try:
                target = PurePosixPath(os.readlink(candidate))
            except OSError as exc:
                raise HostReadError(path, exc.strerror or str(exc)) from exc
            if target.is_absolute():
                done = []
                pending.extend(reversed(target.parts[1:]))
            else:
                pending.extend(reversed(target.parts))
        return self._root.joinpath(*done)

    def _host_path(self, local: Path) -> str:
        rel = local.relative_to(self._root)
        return "/" + rel.as_posix() if rel.parts else "/"

    def real_path(self, path: str) -> str:
        return self._host_path(self._local(path))

    def local_path(self, path: str) -> Path:
        return self._local(path)

    def read_text(self, path: str) -> str | None:
        local = self._local(path)
        try:
            with open_regular(local) as handle:
                data = handle.read(MAX_READ_BYTES + 1)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except IsADirectoryError as exc:
            raise HostReadError(path, "is a directory") from exc
        except NotRegularFileError as exc:
            raise HostReadError(path, str(exc)) from exc
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from exc
        if len(data) > MAX_READ_BYTES:
            raise HostReadError(path, f"larger than {MAX_READ_BYTES // (1024 * 1024)} MiB")
        return data.decode("utf-8", errors="replace")

    def is_dir(self, path: str) -> bool:
        try:
            return self._local(path).is_dir()
        except (HostReadError, OSError):
            return False

    def exists(self, path: str) -> bool:
        try:
            return self._local(path).exists()
        except (HostReadError, OSError):
            return False

    def list_dir(self, path: str) -> list[str] | None:
        try:
            local = self._local(path)
            return sorted(entry.name for entry in local.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from exc

    def glob(self, pattern: str) -> list[str]:
        parts = PurePosixPath(pattern).parts
        if not parts or parts[0] != "/":
            raise ValueError(f"glob patterns are absolute: {pattern!r}")
        matches = ["/"]
        for part in parts[1:]:
            if not _has_magic(part):
                matches = [_join(m, part) for m in matches]
                continue
            matches = [m for m in matches if self.is_dir(m)]
            found: list[str] = []
            for base in matches:
                try:
                    names = self.list_dir(base) or []
                except HostReadError:  # a loop or an unreadable directory matches nothing
                    continue
                found += [_join(base, n) for n in names if fnmatch.fnmatchcase(n, part)]
            matches = found
        return sorted(m for m in matches if self.exists(m))

    def run(self, argv: Sequence[str]) -> CommandResult | None:
        if self._runner is None:
            return None
        return self._runner(argv)


def open_regular(local: Path) -> BinaryIO:
    """`local` opened for reading, if it is a regular file (after symlinks); else
    IsADirectoryError or NotRegularFileError (naming a FIFO, a device or a socket), at once:
    the open does not wait for a FIFO's writer, and a device (`/dev/zero`, `/dev/urandom`) is
    never read."""
    try:
        descriptor, _ = open_regular_fd(local)
    except NotRegularFileError as exc:
        if stat.S_ISDIR(exc.info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(local)) from None
        raise
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _has_magic(part: str) -> bool:
    return any(c in part for c in "*?[")


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


class SubprocessRunner:
    """Runs real commands on this machine: PATH, then the extra tool directories."""

    def __init__(self, extra_dirs: Sequence[str] = EXTRA_TOOL_DIRS,
                 timeout: float = COMMAND_TIMEOUT) -> None:
        self._extra_dirs = tuple(extra_dirs)
        self._timeout = timeout

    def __call__(self, argv: Sequence[str]) -> CommandResult | None:
        program = shutil.which(argv[0])
        if program is None:
            program = shutil.which(argv[0], path=os.pathsep.join(self._extra_dirs))
        if program is None:
            return None
        try:
            done = subprocess.run([program, *argv[1:]], capture_output=True, text=True,
                                  errors="replace", timeout=self._timeout, check=False,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return CommandResult(tuple(argv), -1, "", f"timed out after {self._timeout:.0f}s")
        except OSError as exc:
            return CommandResult(tuple(argv), -1, "", exc.strerror or str(exc))
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


class FakeRunner:
    """Canned command results by argv (joined with spaces); programs not listed do not exist.

    For tests and for replaying a node's outputs captured elsewhere.
    """

    def __init__(self, outputs: Mapping[str, CommandResult]) -> None:
        self._outputs = dict(outputs)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult | None:
        self.calls.append(tuple(argv))
        return self._outputs.get(" ".join(argv))
