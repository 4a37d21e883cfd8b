"""The one way gpudra opens a file it reads: a regular file only, opened without waiting on a
FIFO's writer, and read up to a cap. Every reader of files (manifests and patches, the
kustomization convert extends, reports, baselines and `.gpudra.yaml`, what convert and
cutover's waves read back, the kubeconfig and the in-cluster namespace, a node's files) opens
through here and words its own refusals: a FIFO would block the run, a device (`/dev/zero`)
never end, a link where gpudra reads back what it wrote may point anywhere. Only gpudra's own
packaged data (importlib.resources: rule texts, schemas) is read otherwise.
"""

from __future__ import annotations

import os
import stat

# O_NONBLOCK: opening a FIFO must not wait for a writer (the fstat below then refuses it);
# O_NOCTTY: opening a terminal must not make it the process's controlling one.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


class NotRegularFileError(OSError):
    """What the path names is no regular file: a directory, a FIFO, a device or a socket (its
    `info`); the message names which."""

    def __init__(self, info: os.stat_result) -> None:
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        super().__init__(f"not a regular file ({kind})")
        self.info = info


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True
                 ) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at `path` and its fstat; the caller closes it.
    NotRegularFileError for anything else; OSError as os.open raises it (ELOOP for a link
    when `follow_links` is False)."""
    fd = os.open(path, _OPEN_FLAGS | (0 if follow_links else os.O_NOFOLLOW))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(info)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_bounded(fd: int, limit: int) -> bytes:
    """The bytes of `fd` up to its end, stopping once more than `limit` are read: a result
    longer than `limit` means the input is over the cap (the caller says so in its words).
    By os.read: a third of Path.read_bytes' cost (no io objects)."""
    data = os.read(fd, 65536)
    if not data:
        return data
    parts = [data]
    size = len(data)
    while size <= limit:
        more = os.read(fd, 1 << 20)
        if not more:
            break
        size += len(more)
        parts.append(more)
    return data if len(parts) == 1 else b"".join(parts)
