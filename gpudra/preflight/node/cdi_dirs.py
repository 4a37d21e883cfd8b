"""Where CDI specs live, and whether a runtime's configured directories cover them.

- The CDI library's default directories are `/etc/cdi` (static) and `/var/run/cdi` (dynamic),
  in that order; a later directory wins a device-name conflict
  (cncf-tags/container-device-interface @ v1.1.0, `pkg/cdi/spec-dirs.go`, `pkg/cdi/cache.go`).
  containerd (`pkg/cri/config/config_unix.go` @ v1.7.0, `internal/cri/config/config_unix.go`
  @ v2.0.0) and CRI-O (`pkg/config/config.go` @ v1.36.3) use the same defaults.
- The NVIDIA DRA driver writes one transient spec per prepared claim into `CDI_ROOT`, which its
  chart sets to `/var/run/cdi` (docs/dra-reference.md section 9). A runtime that does not scan
  that directory cannot resolve the device names the kubelet passes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from gpudra.preflight.node.host import Host, HostReadError

STATIC_DIR = "/etc/cdi"
DYNAMIC_DIR = "/var/run/cdi"
DEFAULT_SPEC_DIRS = (STATIC_DIR, DYNAMIC_DIR)
DRA_DRIVER_CDI_DIR = DYNAMIC_DIR


def same_dir(host: Host, path: str) -> str:
    """A comparable form of a host directory: symlinks resolved (`/var/run` -> `/run`)."""
    try:
        return host.real_path(posixpath.normpath(path))
    except (HostReadError, ValueError):
        return posixpath.normpath(path)


def covers_dra_dir(host: Host, dirs: Iterable[str]) -> bool:
    wanted = same_dir(host, DRA_DRIVER_CDI_DIR)
    return any(d.startswith("/") and same_dir(host, d) == wanted for d in dirs)


def format_dirs(dirs: Iterable[str]) -> str:
    shown = ", ".join(dirs)
    return shown or "(none)"


def is_dir_list(value: Any) -> TypeGuard[Sequence[str]]:
    """Whether a configured `cdi_spec_dirs` value is a list of paths (a tuple: the default)."""
    return isinstance(value, (list, tuple)) and all(isinstance(d, str) for d in value)


def dra_dir_left_out(dirs: Iterable[str], dirs_from: str, restart: str) -> tuple[str, str]:
    """Message and fix when the configured `dirs` (set in `dirs_from`) leave out the DRA
    driver's directory; `restart` names the runtime to restart afterwards."""
    message = (f"cdi_spec_dirs ({format_dirs(dirs)}) leaves out {DRA_DRIVER_CDI_DIR}, where "
               "the DRA driver writes its per-claim specs")
    fix = f'add "{DRA_DRIVER_CDI_DIR}" to cdi_spec_dirs ({dirs_from}) and restart {restart}'
    return message, fix


@dataclass(frozen=True, slots=True)
class ConfiguredCdi:
    """What the runtime's config files on disk say, for comparison with the running daemon."""

    runtime: str
    enabled: bool
    enabled_from: str
    spec_dirs: tuple[str, ...]
