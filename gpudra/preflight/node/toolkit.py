"""The NVIDIA Container Toolkit CLI, reported for the record (NODE007).

No minimum toolkit version is documented for the DRA driver: its prerequisites name none, it
vendors nvidia-container-toolkit v1.19.1 libraries and ships its own `nvidia-cdi-hook`, and it
writes its own per-claim CDI specs (docs/dra-reference.md section 9). `nvidia-ctk` matters for
the device-plugin path (`nvidia-ctk cdi generate`, `nvidia-ctk runtime configure`), so gpudra
reports its version and never fails on it.

`nvidia-ctk --version` prints `NVIDIA Container Toolkit CLI version 1.17.4` and then
`commit: <sha>` (NVIDIA/nvidia-container-toolkit @ v1.20.0, `cmd/nvidia-ctk/main.go`,
`internal/info/version.go`; urfave/cli prints "<name> version <version>"). The GPU Operator
installs it as `/usr/local/nvidia/toolkit/nvidia-ctk`, which the command runner also tries.
"""

from __future__ import annotations

import re

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.node.host import Host, no_command_reason

_VERSION_RE = re.compile(r"(?i)\bversion\s+v?(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.+-]*)?)")

NODE007 = check(
    "NODE007", "NVIDIA Container Toolkit version", Tier.NODE,
    "Reports `nvidia-ctk --version`; the DRA driver documents no minimum.",
    """
**Why it matters.** The NVIDIA Container Toolkit generates the `nvidia.com/gpu` CDI spec and
configures runtimes for the device plugin. The DRA driver documents no minimum toolkit
version: it writes its own CDI specs and ships its own CDI hook. gpudra reports the version so
it appears in support bundles and can be compared across nodes.

**Outcomes.** *pass*: `nvidia-ctk` answered; its version is shown. *unavailable*: `nvidia-ctk`
is not installed (not needed by the DRA driver), commands are not run under `--host-root`, or
it failed.

**Fix.** Nothing is required for DRA. For the device-plugin path, install the NVIDIA Container
Toolkit from NVIDIA's repository or let the GPU Operator manage it.
""",
    (CheckOutcome.PASS, CheckOutcome.UNAVAILABLE))


def check_toolkit(host: Host, subject: str | None) -> CheckResult:
    done = host.run(("nvidia-ctk", "--version"))
    if done is None:
        why = no_command_reason(host, "nvidia-ctk not found (not needed by the DRA driver)")
        return result(NODE007, CheckOutcome.UNAVAILABLE, why,
                      "nothing to do for DRA; install the NVIDIA Container Toolkit for the "
                      "device-plugin path", subject=subject)
    if not done.ok:
        return result(NODE007, CheckOutcome.UNAVAILABLE, done.failure(),
                      "run `nvidia-ctk --version` on the node", subject=subject)
    match = _VERSION_RE.search(done.stdout)
    if match is None:
        first = done.stdout.strip().splitlines()[0] if done.stdout.strip() else "no output"
        return result(NODE007, CheckOutcome.UNAVAILABLE, f"no version in `nvidia-ctk --version`: "
                      f"{first[:80]}", "run `nvidia-ctk --version` on the node",
                      subject=subject)
    return result(NODE007, CheckOutcome.PASS,
                  f"nvidia-ctk {match.group(1)} (the DRA driver documents no minimum)",
                  subject=subject)
