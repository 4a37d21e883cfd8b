"""Which container runtime this node runs, at which version (NODE002).

The version comes from the first source that answers:
1. `status.nodeInfo.containerRuntimeVersion`, when the cluster tier passes it in
   (`containerd://2.1.4`): what the kubelet itself talks to;
2. `containerd --version` (`containerd github.com/containerd/containerd/v2 v2.1.4 <commit>`,
   `cmd/containerd/command/main.go`), then `crio --version` (`crio version 1.33.2`);
3. nothing: the config checks then infer what they can from the files and say so.

The judgement is `gpudra.preflight.runtime`'s, with one change for the node tier: containerd
1.7.2+ passes here, because NODE003 reads the config and decides whether CDI is really on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudra.preflight.model import CheckResult, Outcome, Tier, check, result
from gpudra.preflight.node.host import Host, no_command_reason
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

**Outcomes.** *pass*: the runtime can inject CDI devices (containerd 1.7.2+ still needs the
setting NODE003 checks). *fail*: the runtime is too old. *unavailable*: the version could not
be learned (no `containerd`/`crio` command, commands not run under `--host-root`, an unknown
runtime such as cri-dockerd).

**Fix.** Upgrade containerd to 2.x (or 1.7.2+ with `enable_cdi = true`), or CRI-O to 1.28+.
""",
    (Outcome.PASS, Outcome.FAIL, Outcome.UNAVAILABLE))


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
    return RuntimeIdentity(None, None, no_command_reason(
        host, "neither `containerd` nor `crio` was found on PATH"))


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
        if outcome is Outcome.WARN:  # containerd 1.7.2+: NODE003 decides on the config
            outcome, message, fix = Outcome.PASS, message + "; NODE003 checks the config", None
        return result(NODE002, outcome, message, fix, subject=subject,
                      details=(f"from {identity.source}: {identity.raw}",))
    if identity.version is None:
        what = identity.name or "container runtime"
        return result(NODE002, Outcome.UNAVAILABLE,
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
    return result(NODE002, Outcome.PASS,
                  f"containerd {identity.version} reads CDI devices from the kubelet "
                  f"(CDI {default}; NODE003 checks the config)",
                  subject=subject, details=details)
