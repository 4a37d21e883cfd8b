"""The running runtime's own CDI settings, from `crictl info` (NODE005).

`crictl info` prints the CRI `Status` response as JSON, each `info` key decoded
(kubernetes-sigs/cri-tools, `cmd/crictl/util.go`).
- containerd puts its whole CRI config under `config` (`pkg/cri/server/status.go` @ v1.7.2,
  `internal/cri/server/status.go` @ v2.1.4), with JSON names `enableCDI` and `cdiSpecDirs`
  (`pkg/cri/config/config.go`). From 2.3 `enableCDI` is a pointer and may print as null,
  which means on (`internal/cri/server/service_linux.go` @ v2.3.0).
- CRI-O puts `{"sandboxImage", "crio": <RuntimeConfig>}` under `config` from v1.33.0
  (`server/runtime_status.go`); the field has no JSON tag, so it prints as `CDISpecDirs`.
  Older CRI-O does not report it.

This is the most authoritative answer: it is what the daemon loaded, after every drop-in,
migration and restart (or missing restart).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.cdi_dirs import (
    DRA_DRIVER_CDI_DIR,
    ConfiguredCdi,
    covers_dra_dir,
    format_dirs,
    is_dir_list,
)
from gpudra.preflight.node.host import Host, no_command_reason

NODE005 = check(
    "NODE005", "Running runtime reports CDI on", Tier.NODE,
    "`crictl info` shows CDI enabled and /var/run/cdi scanned in the running daemon.",
    """
**Why it matters.** Config files say what the runtime *will* use after a restart; `crictl info`
says what the running daemon *does* use. A config changed without restarting containerd, a
drop-in that was never imported, or a merge that behaved unexpectedly all show up here. gpudra
reads `.config.enableCDI` and `.config.cdiSpecDirs` (containerd) or `.config.crio.CDISpecDirs`
(CRI-O 1.33+).

**Outcomes.** *pass*: the daemon has CDI on and scans `/var/run/cdi`. *fail*: CDI is off or
`/var/run/cdi` is not scanned in the running daemon; when the config on disk says otherwise
the message says to restart the runtime. *unavailable*: `crictl` is missing, cannot reach the
runtime socket, commands are not run (`--host-root` other than `/`), or the runtime does not
report these settings (CRI-O before 1.33).

**Fix.** Fix the config (NODE003, NODE004) and restart the runtime; check again with
`crictl info | jq '.config.enableCDI, .config.cdiSpecDirs'`.
""",
    (CheckOutcome.PASS, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class CrictlInfo:
    """What `crictl info` said about CDI; `reason` is set when it said nothing usable."""

    runtime: str | None  # "containerd" or "cri-o" as recognised from the JSON
    enable_cdi: bool | None
    spec_dirs: tuple[str, ...] | None
    reason: str | None = None
    raw_enable_cdi: Any = None


def read_crictl_info(host: Host, runtime_hint: str | None = None) -> CrictlInfo:
    """`runtime_hint` is the runtime name when already known ("containerd", "cri-o")."""
    done = host.run(("crictl", "info"))
    if done is None:
        return CrictlInfo(None, None, None, no_command_reason(host, "crictl not found"))
    if not done.ok:
        return CrictlInfo(None, None, None, done.failure())
    try:
        data = json.loads(done.stdout)
    except ValueError as exc:
        return CrictlInfo(None, None, None, f"`crictl info` did not print JSON: {exc}")
    return parse_crictl_info(data, runtime_hint)


def parse_crictl_info(data: Any, runtime_hint: str | None = None) -> CrictlInfo:
    config = data.get("config") if isinstance(data, Mapping) else None
    if not isinstance(config, Mapping):
        return CrictlInfo(None, None, None, "`crictl info` has no `config` (runtime too old?)")
    crio = config.get("crio")
    if isinstance(crio, Mapping):
        dirs = crio.get("CDISpecDirs")
        if not is_dir_list(dirs):
            return CrictlInfo("cri-o", True, None, "CRI-O did not report CDISpecDirs")
        return CrictlInfo("cri-o", True, tuple(dirs))
    if runtime_hint == "cri-o":
        return CrictlInfo("cri-o", True, None,
                          "CRI-O before 1.33 does not report its CDI settings in `crictl info`")
    if "enableCDI" not in config:
        return CrictlInfo("containerd", None, None,
                          "`crictl info` has no config.enableCDI (containerd before 1.7?)")
    raw = config["enableCDI"]
    enabled = True if raw is None else raw if isinstance(raw, bool) else None
    dirs = config.get("cdiSpecDirs")
    return CrictlInfo("containerd", enabled, tuple(dirs) if is_dir_list(dirs) else None,
                      None, raw)


def check_crictl(host: Host, info: CrictlInfo, disk: ConfiguredCdi | None,
                 subject: str | None) -> CheckResult:
    if info.reason is not None:
        return result(NODE005, CheckOutcome.UNAVAILABLE, f"no live runtime settings: {info.reason}",
                      "run `crictl info` as root on the node", subject=subject)
    name = "CRI-O" if info.runtime == "cri-o" else "containerd"
    details = [f"enableCDI: {info.raw_enable_cdi!r}" if info.runtime == "containerd" else
               "CDI: always on (CRI-O)",
               f"cdiSpecDirs: {format_dirs(info.spec_dirs or ())}"]
    if info.enable_cdi is not True:
        restart = disk is not None and disk.enabled
        shown = "not a boolean" if info.enable_cdi is None else "off"
        message = f"the running containerd has CDI {shown}"
        if restart and disk is not None:  # (restart implies disk; the checker needs it said)
            message += f" although the config on disk turns it on ({disk.enabled_from})"
        fix = "restart containerd (`systemctl restart containerd`)" if restart else \
            "enable CDI in the containerd config (NODE003) and restart containerd"
        return result(NODE005, CheckOutcome.FAIL, message, fix, subject=subject, details=details)
    if info.spec_dirs is None:
        return result(NODE005, CheckOutcome.UNAVAILABLE,
                      f"{name} reports CDI on but not its spec directories",
                      "check cdi_spec_dirs in the runtime config", subject=subject,
                      details=details)
    if not covers_dra_dir(host, info.spec_dirs):
        restart = disk is not None and covers_dra_dir(host, disk.spec_dirs)
        message = (f"the running {name} does not scan {DRA_DRIVER_CDI_DIR} "
                   f"({format_dirs(info.spec_dirs)})")
        if restart:
            message += " although the config on disk does"
        fix = f"restart {name}" if restart else \
            f'add "{DRA_DRIVER_CDI_DIR}" to cdi_spec_dirs and restart {name}'
        return result(NODE005, CheckOutcome.FAIL, message, fix, subject=subject, details=details)
    return result(NODE005, CheckOutcome.PASS,
                  f"the running {name} has CDI on and scans {format_dirs(info.spec_dirs)}",
                  subject=subject, details=details)
