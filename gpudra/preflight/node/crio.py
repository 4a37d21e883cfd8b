"""CRI-O's CDI settings (NODE004).

Facts (cri-o/cri-o @ v1.36.3 unless named):
- CDI injection is always on; there is no switch. The only setting is `cdi_spec_dirs` under
  `[crio.runtime]` (`RuntimeConfig.CDISpecDirs`, `pkg/config/config.go`; table layout in
  `tomlConfig`), default `["/etc/cdi", "/var/run/cdi"]`; later directories win conflicts
  (`docs/crio.conf.5.md`).
- The main file is `/etc/crio/crio.conf` and may be absent; then every file under
  `/etc/crio/crio.conf.d` is applied in lexical order, the last setting winning
  (`docs/crio.conf.d.5.md`). The walk takes every regular file, whatever its suffix
  (`Config.UpdateFromPath`): `nvidia-ctk runtime configure` writes `99-nvidia.toml` there
  (NVIDIA/nvidia-container-toolkit @ v1.20.0, `cmd/nvidia-ctk/runtime/configure/configure.go`).
- A file that is not valid TOML stops CRI-O ("unable to decode configuration").
- The CRI `CDIDevices` field the kubelet sends for DRA claims is read from v1.28.0 (NODE002).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudra.k8s.objects import as_mapping, dig
from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.cdi_dirs import (
    DEFAULT_SPEC_DIRS,
    ConfiguredCdi,
    covers_dra_dir,
    dra_dir_left_out,
    format_dirs,
    is_dir_list,
)
from gpudra.preflight.node.host import Host, HostReadError
from gpudra.preflight.node.tomlfiles import FileProblem, TomlFile, read_toml

CRIO_CONFIG = "/etc/crio/crio.conf"
CRIO_CONFIG_DIR = "/etc/crio/crio.conf.d"

NODE004 = check(
    "NODE004", "CRI-O scans the DRA driver's CDI directory", Tier.NODE,
    "CRI-O's config and drop-ins keep /var/run/cdi among cdi_spec_dirs.",
    """
**Why it matters.** CRI-O always injects CDI devices; it only needs to find the spec the
NVIDIA DRA driver writes for each claim under `/var/run/cdi`. The directories come from
`cdi_spec_dirs` under `[crio.runtime]` in `/etc/crio/crio.conf` and the drop-ins in
`/etc/crio/crio.conf.d/` (every file, lexical order, the last one wins).

**Outcomes.** *pass*: `/var/run/cdi` is scanned. *warn*: a CDI key sits where CRI-O does not
read it (for example containerd's `enable_cdi`, or `cdi_spec_dirs` outside `[crio.runtime]`).
*fail*: `/var/run/cdi` is left out, a value has the wrong type, or a file is not valid TOML
(CRI-O will not start). *unavailable*: CRI-O is not this node's runtime, or its config could
not be read.

**Fix.** In a drop-in such as `/etc/crio/crio.conf.d/50-cdi.conf`:

```toml
[crio.runtime]
cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
```

then `systemctl restart crio`.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class CrioConfig:
    files: tuple[TomlFile, ...]  # application order
    problems: tuple[FileProblem, ...]
    found: bool  # a main file or at least one drop-in exists


def load_crio_config(host: Host, path: str = CRIO_CONFIG,
                     drop_in_dir: str = CRIO_CONFIG_DIR) -> CrioConfig:
    files: list[TomlFile] = []
    problems: list[FileProblem] = []
    found = False
    for candidate in [path, *_drop_ins(host, drop_in_dir, problems)]:
        read = read_toml(host, candidate)
        if read is None:
            continue
        found = True
        if isinstance(read, FileProblem):
            problems.append(read)
        else:
            files.append(read)
    return CrioConfig(tuple(files), tuple(problems), found or bool(problems))


def _drop_ins(host: Host, directory: str, problems: list[FileProblem]) -> list[str]:
    """Every file under `directory`, recursively, in the order Go's filepath.Walk visits them."""
    out: list[str] = []
    try:
        names = host.list_dir(directory)
    except HostReadError as exc:
        problems.append(FileProblem(directory, f"cannot read: {exc.reason}", unreadable=True))
        return out
    for name in names or []:
        child = posixpath.join(directory, name)
        if host.is_dir(child):
            out += _drop_ins(host, child, problems)
        else:
            out.append(child)
    return out


@dataclass(frozen=True, slots=True)
class CrioSettings:
    spec_dirs: tuple[str, ...]
    dirs_from: str
    warnings: tuple[str, ...]
    errors: tuple[str, ...]


def effective_crio(config: CrioConfig) -> CrioSettings:
    dirs: Any = DEFAULT_SPEC_DIRS
    dirs_from = "default"
    warnings: list[str] = []
    for cfg in config.files:
        runtime = as_mapping(dig(cfg.data, "crio", "runtime"))
        if "cdi_spec_dirs" in runtime:
            dirs, dirs_from = runtime["cdi_spec_dirs"], f"{cfg.path} [crio.runtime]"
        warnings += _misplaced(cfg.path, cfg.data)
    errors = []
    if not is_dir_list(dirs):
        errors.append(f"{dirs_from}: `cdi_spec_dirs` must be a list of paths, found {dirs!r}")
        dirs = ()
    return CrioSettings(tuple(dirs), dirs_from, tuple(warnings), tuple(errors))


def _misplaced(path: str, data: Mapping[str, Any]) -> list[str]:
    out = []
    crio = as_mapping(data.get("crio"))
    for where, values in (("the top level", data), ("[crio]", crio)):
        if "cdi_spec_dirs" in values:
            out.append(f"{path}: `cdi_spec_dirs` at {where} does nothing; it belongs under "
                       "[crio.runtime]")
    for where, values in (("the top level", data), ("[crio]", crio),
                          ("[crio.runtime]", as_mapping(dig(data, "crio", "runtime")))):
        if "enable_cdi" in values:
            out.append(f"{path}: `enable_cdi` at {where} does nothing: CRI-O has no such "
                       "setting, CDI is always on")
    return out


def check_crio(host: Host, config: CrioConfig, subject: str | None
               ) -> tuple[CheckResult, ConfiguredCdi | None]:
    unreadable = [p for p in config.problems if p.unreadable]
    if unreadable:
        return result(NODE004, CheckOutcome.UNAVAILABLE, str(unreadable[0]),
                      unreadable[0].fix or "run gpudra as root on the node, or mount the host "
                      "root readable",
                      subject=subject, details=map(str, config.problems)), None
    if config.problems:
        first = config.problems[0]
        return result(NODE004, CheckOutcome.FAIL, f"CRI-O will not start with its config: {first}",
                      first.fix or f"fix {first.path}", subject=subject,
                      details=map(str, config.problems)), None
    settings = effective_crio(config)
    facts = ConfiguredCdi("cri-o", True, "CRI-O (always on)", settings.spec_dirs)
    dirs = format_dirs(settings.spec_dirs)
    details = [f"files: {', '.join(f.path for f in config.files) or '(none: defaults)'}",
               f"cdi_spec_dirs: {dirs} ({settings.dirs_from})", *settings.warnings]
    if settings.errors:
        return result(NODE004, CheckOutcome.FAIL, settings.errors[0], "fix the value",
                      subject=subject, details=[*details, *settings.errors]), None
    if not covers_dra_dir(host, settings.spec_dirs):
        message, fix = dra_dir_left_out(settings.spec_dirs, settings.dirs_from, "CRI-O")
        return result(NODE004, CheckOutcome.FAIL, message, fix, subject=subject,
                      details=details), facts
    message = f"CRI-O scans {dirs} (CDI is always on in CRI-O)"
    if settings.warnings:
        return result(NODE004, CheckOutcome.WARN, f"{message}; but {settings.warnings[0]}",
                      "remove or move the keys named in the details", subject=subject,
                      details=details), facts
    return result(NODE004, CheckOutcome.PASS, message, subject=subject, details=details), facts
