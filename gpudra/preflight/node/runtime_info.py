"""Which container runtime this node runs, at which version (NODE002).

The version comes from the first source that answers:
1. `status.nodeInfo.containerRuntimeVersion`, when the cluster tier passes it in
   (`containerd://2.1.4`): what the kubelet itself talks to;
2. `containerd --version` (`containerd github.com/containerd/containerd/v2 v2.1.4 <commit>`,
   `cmd/containerd/command/main.go`), then `crio --version` (`crio version 1.33.2`);
3. what the host root holds, when no command runs (under `--host-root`) or none is found: the
   binary's Go build information (gpudra.preflight.node.gobuildinfo: containerd's release
   builds stamp `-X .../version.Version=v2.1.4`; a build at a module version carries it
   itself; k3s/RKE2 carry containerd as a dependency), then the package database (dpkg, rpm:
   gpudra.preflight.node.packages), the source named in the result;
4. nothing: the config checks then infer what they can from the files and say so.

The judgement is `gpudra.preflight.runtime`'s, with one change for the node tier: containerd
1.7.2+ passes here, because NODE003 reads the config and decides whether CDI is really on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.host import Host, HostReadError, no_command_reason
from gpudra.preflight.runtime import (
    Version,
    containerd_traits,
    judge_crio,
    judge_runtime_version,
    parse_version,
    split_runtime_version,
)

CONTAINERD = "containerd"
CRIO = "cri-o"

NODE002 = check(
    "NODE002", "Container runtime version supports CDI devices", Tier.NODE,
    "The node's containerd or CRI-O can inject the CDI devices the kubelet passes for a claim.",
    """
**Why it matters.** The NVIDIA DRA driver does not touch containers itself: it writes a CDI
spec for each prepared claim and the kubelet hands the device names to the container runtime in
the CRI `CDIDevices` field. A runtime that ignores that field starts the container without a
GPU and without an error.

- containerd reads the field from **1.7.2** (1.7.0 and 1.7.1 only read CDI annotations; 1.6
  has no CDI). On 1.7 CDI is off unless `enable_cdi = true` (NODE003 checks that); from 2.0 it
  is on by default.
- CRI-O reads the field from **1.28.0**; CDI is always on.

**Where the version comes from.** The node's report (`containerRuntimeVersion`), else
`containerd --version` / `crio --version`; under `--host-root`, where no host command runs,
the binary's Go build information (containerd's release builds carry their version in it; k3s
and RKE2 carry containerd's as a dependency), then the dpkg or rpm database. The result's
details name the source.

**Outcomes.** *pass*: the runtime can inject CDI devices (containerd 1.7.2+ still needs the
setting NODE003 checks). *fail*: the runtime is too old. *unavailable*: the version could not
be learned (no runtime binary or package found, a binary without a version and no package
database entry, an unknown runtime such as cri-dockerd).

**Fix.** Upgrade containerd to 2.x (or 1.7.2+ with `enable_cdi = true`), or CRI-O to 1.28+.
""",
    (CheckOutcome.PASS, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


@dataclass(frozen=True, slots=True)
class RuntimeIdentity:
    """The runtime by name and version; either may be unknown. `source` says how we know."""

    name: str | None
    version: Version | None
    source: str
    raw: str = ""


def detect_runtime(host: Host, reported: str | None = None) -> RuntimeIdentity:
    """Ask the cluster's report first, then the runtime binaries."""
    if reported:
        split = split_runtime_version(reported)
        return RuntimeIdentity(split.name or None, split.version,
                               "status.nodeInfo.containerRuntimeVersion", reported)
    for name, argv in ((CONTAINERD, ("containerd", "--version")),
                       (CRIO, ("crio", "--version"))):
        done = host.run(argv)
        if done is None:
            continue
        if not done.ok:
            return RuntimeIdentity(name, None, done.failure(), done.stdout)
        version = _version_in(done.stdout)
        return RuntimeIdentity(name, version, f"`{' '.join(argv)}`", done.stdout.strip())
    from_files = runtime_from_files(host)
    if from_files is not None:
        return from_files
    return RuntimeIdentity(None, None, no_command_reason(
        host, "neither `containerd` nor `crio` was found on PATH"))


# Where runtimes are installed; k3s and RKE2 unpack theirs under a data directory per release.
BINARIES = {
    CONTAINERD: ("/usr/bin/containerd", "/usr/local/bin/containerd", "/bin/containerd",
                 "/usr/sbin/containerd", "/opt/bin/containerd",
                 "/var/lib/rancher/k3s/data/*/bin/containerd",
                 "/var/lib/rancher/rke2/data/*/bin/containerd"),
    CRIO: ("/usr/bin/crio", "/usr/local/bin/crio", "/bin/crio", "/usr/sbin/crio"),
}
MODULES = {CONTAINERD: ("github.com/containerd/containerd/v2", "github.com/containerd/containerd"),
           CRIO: ("github.com/cri-o/cri-o",)}
PACKAGES = {CONTAINERD: ("containerd.io", "containerd"), CRIO: ("cri-o",)}


def runtime_from_files(host: Host) -> RuntimeIdentity | None:
    """The runtime's version from the host root's files (see the module docstring), or None
    when no runtime binary or package is there."""
    from gpudra.preflight.node.gobuildinfo import read_go_build_info
    from gpudra.preflight.node.packages import find_installed

    unversioned = None
    for name in (CONTAINERD, CRIO):
        binaries = [p for pattern in BINARIES[name]
                    for p in (host.glob(pattern) if "*" in pattern else [pattern])
                    if host.exists(p)]
        for binary in binaries:
            try:
                info = read_go_build_info(host.local_path(binary))
            except (OSError, HostReadError):
                info = None
            found = next(((m, v) for m in MODULES[name]
                          if info is not None and (v := info.version_of(m))), None)
            version = parse_version(found[1]) if found else None
            if found is not None and version is not None:
                module, found_version = found
                return RuntimeIdentity(name, version, f"the Go build information of {binary} "
                                       f"({module} {found_version})", found_version)
            unversioned = unversioned or (name, binary)
        package = find_installed(host, PACKAGES[name])
        if package is not None:
            # `2:1.7.24~ds1-0ubuntu1`: the epoch and the packaging suffix are not the version
            version = parse_version(package.version.rpartition(":")[2], anywhere=True)
            return RuntimeIdentity(name, version, f"{package.source}: {package.name} "
                                   f"{package.version}", package.version)
    if unversioned is not None:
        name, binary = unversioned
        return RuntimeIdentity(name, None, f"{binary} carries no version in its Go build "
                               "information and no package database lists it")
    return None


def _version_in(text: str) -> Version | None:
    labelled = re.search(r"(?i)\bversion:?\s+(v?\d+\.\d+\S*)", text)
    if labelled:
        found = parse_version(labelled.group(1))
        if found:
            return found
    return parse_version(text, anywhere=True)


def check_runtime_version(identity: RuntimeIdentity, subject: str | None) -> CheckResult:
    if identity.source == "status.nodeInfo.containerRuntimeVersion":
        judged = judge_runtime_version(identity.raw)
        outcome, message, fix = judged.outcome, judged.message, judged.remediation
        if outcome is CheckOutcome.WARN:  # containerd 1.7.2+: NODE003 decides on the config
            outcome, message, fix = CheckOutcome.PASS, message + "; NODE003 checks the config", None
        return result(NODE002, outcome, message, fix, subject=subject,
                      details=(f"from {identity.source}: {identity.raw}",))
    if identity.version is None:
        what = identity.name or "container runtime"
        return result(NODE002, CheckOutcome.UNAVAILABLE,
                      f"{what} version unknown: {identity.source}",
                      "run `containerd --version` or `crio --version` on the node",
                      subject=subject)
    if identity.name == CRIO:
        judged = judge_crio(identity.version)
        return result(NODE002, judged.outcome, judged.message, judged.remediation,
                      subject=subject, details=(f"from {identity.source}",))
    traits = containerd_traits(identity.version)
    details = (f"from {identity.source}",)
    if not traits.has_cdi or not traits.reads_cdi_devices_field:
        judged = judge_runtime_version(f"containerd://{identity.version}")
        return result(NODE002, judged.outcome, judged.message, judged.remediation,
                      subject=subject, details=details)
    default = "on by default" if traits.cdi_on_by_default else "off unless enable_cdi = true"
    return result(NODE002, CheckOutcome.PASS,
                  f"containerd {identity.version} reads CDI devices from the kubelet "
                  f"(CDI {default}; NODE003 checks the config)",
                  subject=subject, details=details)
