"""The NVIDIA kernel driver: is this a GPU node, and is its driver new enough (NODE001)?

Minimums (kubernetes-sigs/dra-driver-nvidia-gpu @ v0.4.1, `docs/prerequisites.md`): driver
**565** for GPU allocation, **570.158.01** for ComputeDomains (the compute-domain kubelet
plugin refuses to start on older drivers unless its `IMEXDaemonsWithDNSNames` gate is off).

Version sources, in order:
1. `/proc/driver/nvidia/version`, written by the loaded kernel module. Its first line reads
   `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  <date>` (proprietary module) or
   `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...`
   (open module); the version is the first dotted number on the line.
2. `nvidia-smi --query-gpu=driver_version --format=csv,noheader` (one line per GPU), when the
   proc file cannot be read. When both exist and nvidia-smi fails, NVML cannot talk to the
   driver (for example "Driver/library version mismatch"), and the DRA driver, which uses NVML,
   will fail the same way.

Driver versions are compared as numbers per part (`570.124.06` is 570, 124, 6): NVML returns
NVIDIA's release identifier as text and does not promise a format (facts-turn2 section 1).

**Is this a GPU node?** A loaded driver says yes. Without one, gpudra looks for NVIDIA display
or 3D controllers on the PCI bus (`/sys/bus/pci/devices/*/vendor` = `0x10de`, `class` =
`0x03xxxx`; the same vendor id Node Feature Discovery's `pci-10de.present` label uses). A GPU
without a driver fails; no GPU and no driver is `unavailable` (not a GPU node); an unreadable
`/sys` is `unavailable` (cannot tell).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.host import Host, HostReadError

PROC_VERSION = "/proc/driver/nvidia/version"
PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_PCI_VENDOR = "0x10de"
MIN_DRIVER = (565,)
MIN_DRIVER_COMPUTE_DOMAINS = (570, 158, 1)
SMI_QUERY = ("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")

_NVRM_RE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)(?=\s|$)")
_DRIVER_RE = re.compile(r"^\d+\.\d+(?:\.\d+)?$")

NODE001 = check(
    "NODE001", "NVIDIA driver meets the DRA driver's minimum", Tier.NODE,
    "The NVIDIA kernel driver is loaded and at least 565 (570.158.01 for ComputeDomains).",
    """
**Why it matters.** The NVIDIA DRA driver needs NVIDIA driver **565** or newer to publish and
prepare GPUs, and **570.158.01** or newer for ComputeDomains (multi-node NVLink; the
compute-domain plugin will not start on older drivers). gpudra reads the loaded kernel
module's version from `/proc/driver/nvidia/version`, or asks `nvidia-smi`.

**Outcomes.** *pass*: 570.158.01 or newer. *warn*: 565 or newer but older than 570.158.01:
GPU allocation works, ComputeDomains do not; also when `nvidia-smi` cannot talk to a loaded
driver (NVML mismatch), which the DRA driver would hit too. *fail*: older than 565, or NVIDIA
GPUs are on the PCI bus but no NVIDIA kernel driver is loaded. *unavailable*: the node has no
NVIDIA GPU and no driver (not a GPU node: the GPU checks do not apply), or gpudra could not
read `/proc` or `/sys` to tell.

**Fix.** Install or upgrade the NVIDIA driver (a data-center branch such as 570 or 580), for
example through the GPU Operator's `driver.version`, then reboot or reload the module.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class DriverInfo:
    version: str | None
    source: str | None  # where the version came from
    gpus_on_pci: tuple[str, ...] | None  # PCI addresses; None when /sys could not be read
    problems: tuple[str, ...] = ()
    smi_failure: str | None = None


def parse_proc_version(text: str) -> str | None:
    """The driver version in /proc/driver/nvidia/version text."""
    for line in text.splitlines():
        match = _NVRM_RE.search(line)
        if match:
            return match.group(1)
    return None


def parse_version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def read_driver(host: Host) -> DriverInfo:
    problems: list[str] = []
    version, source = None, None
    try:
        text = host.read_text(PROC_VERSION)
    except HostReadError as exc:
        text = None
        problems.append(f"cannot read {PROC_VERSION}: {exc.reason}")
    if text is not None:
        version = parse_proc_version(text)
        source = PROC_VERSION
        if version is None:
            problems.append(f"{PROC_VERSION} has no 'NVRM version:' line with a version")
    smi_version, smi_failure = _ask_nvidia_smi(host)
    if version is None and smi_version is not None:
        version, source = smi_version, "`nvidia-smi`"
    if version is not None and smi_version not in (None, version):
        problems.append(f"nvidia-smi reports {smi_version}, the kernel module {version}")
    failure = smi_failure if text is not None and version is not None else None
    if smi_failure and failure is None:
        problems.append(smi_failure)
    return DriverInfo(version, source, _nvidia_gpus_on_pci(host), tuple(problems), failure)


def _ask_nvidia_smi(host: Host) -> tuple[str | None, str | None]:
    done = host.run(SMI_QUERY)
    if done is None:
        return None, None
    if not done.ok:
        return None, done.failure()
    versions = {line.strip() for line in done.stdout.splitlines() if line.strip()}
    valid = sorted(v for v in versions if _DRIVER_RE.match(v))
    if not valid:
        return None, f"`nvidia-smi` printed no driver version: {done.stdout.strip()[:80]!r}"
    return valid[0], None


def _nvidia_gpus_on_pci(host: Host) -> tuple[str, ...] | None:
    try:
        devices = host.list_dir(PCI_DEVICES)
    except HostReadError:
        return None
    if devices is None:
        return None
    found = []
    for address in devices:
        base = posixpath.join(PCI_DEVICES, address)
        try:
            vendor = (host.read_text(base + "/vendor") or "").strip().lower()
            klass = (host.read_text(base + "/class") or "").strip().lower()
        except HostReadError:
            continue
        if vendor == NVIDIA_PCI_VENDOR and klass.startswith("0x03"):
            found.append(address)
    return tuple(found)


def check_driver(info: DriverInfo, subject: str | None) -> CheckResult:
    details = [f"driver version from {info.source}"] if info.source else []
    if info.gpus_on_pci:
        details.append(f"NVIDIA GPUs on PCI: {', '.join(info.gpus_on_pci)}")
    details += info.problems
    if info.version is None:
        return _no_driver(info, subject, details)
    number = parse_version_tuple(info.version)
    if number < MIN_DRIVER:
        return result(NODE001, CheckOutcome.FAIL,
                      f"NVIDIA driver {info.version} is older than 565, the DRA driver's minimum",
                      "upgrade the NVIDIA driver to 570.158.01 or newer", subject=subject,
                      details=details)
    if number < MIN_DRIVER_COMPUTE_DOMAINS:
        return result(NODE001, CheckOutcome.WARN,
                      f"NVIDIA driver {info.version} is enough for GPU allocation (565+) but not "
                      "for ComputeDomains (570.158.01+)",
                      "upgrade the NVIDIA driver to 570.158.01 or newer if you use "
                      "ComputeDomains", subject=subject, details=details)
    if info.smi_failure:
        return result(NODE001, CheckOutcome.WARN,
                      f"NVIDIA driver {info.version} is loaded but NVML fails: {info.smi_failure}",
                      "reboot the node or reinstall the driver so the user-space libraries "
                      "match the kernel module", subject=subject, details=details)
    return result(NODE001, CheckOutcome.PASS,
                  f"NVIDIA driver {info.version} (565+ for GPUs, 570.158.01+ for ComputeDomains)",
                  subject=subject, details=details)


def _no_driver(info: DriverInfo, subject: str | None, details: list[str]) -> CheckResult:
    if info.gpus_on_pci:
        return result(NODE001, CheckOutcome.FAIL,
                      f"{len(info.gpus_on_pci)} NVIDIA GPU(s) on the PCI bus but no NVIDIA "
                      "kernel driver is loaded",
                      "install the NVIDIA driver (570.158.01 or newer) or deploy the GPU "
                      "Operator's driver", subject=subject, details=details)
    if info.gpus_on_pci is None:
        return result(NODE001, CheckOutcome.UNAVAILABLE,
                      f"no NVIDIA driver found, and {PCI_DEVICES} could not be read to tell "
                      "whether this node has NVIDIA GPUs",
                      "run gpudra with the host's /sys and /proc visible", subject=subject,
                      details=details)
    return result(NODE001, CheckOutcome.UNAVAILABLE,
                  "no NVIDIA GPU and no NVIDIA driver on this node: not a GPU node, the GPU "
                  "checks do not apply",
                  "nothing to do here; run the node checks on GPU nodes", subject=subject,
                  details=details)
