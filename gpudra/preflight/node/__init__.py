"""The node tier of `gpudra preflight`: one node's driver, runtime and CDI, read from its files.

Run on the node itself (root `/`), or against a node's filesystem mounted elsewhere
(`--host-root`), in which case commands are not run (see `host.py`). The order of the checks is
the order a person would debug in: driver, runtime version, runtime config, the running
runtime's view, the CDI specs, the toolkit.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudra.preflight.check_records import CheckInfo, CheckOutcome, CheckResult, result
from gpudra.preflight.node.cdi_dirs import ConfiguredCdi
from gpudra.preflight.node.cdi_specs import NODE006, check_cdi_specs, scan_specs
from gpudra.preflight.node.containerd import (
    CONTAINERD_CONFIG,
    NODE003,
    check_containerd,
    load_containerd_config,
)
from gpudra.preflight.node.crictl import NODE005, check_crictl, read_crictl_info
from gpudra.preflight.node.crio import (
    CRIO_CONFIG,
    CRIO_CONFIG_DIR,
    NODE004,
    check_crio,
    load_crio_config,
)
from gpudra.preflight.node.host import Host, LocalHost
from gpudra.preflight.node.nvidia_driver import NODE001, check_driver, read_driver
from gpudra.preflight.node.runtime_info import (
    CONTAINERD,
    CRIO,
    NODE002,
    RuntimeIdentity,
    check_runtime_version,
    detect_runtime,
)
from gpudra.preflight.node.toolkit import NODE007, check_toolkit

NODE_CHECKS: tuple[CheckInfo, ...] = (NODE001, NODE002, NODE003, NODE004, NODE005, NODE006,
                                      NODE007)

# Where distribution packages and upstream tarballs install the daemons; used to tell which
# runtime a node has when no command may run and no config file exists.
_BINARIES = {CONTAINERD: ("/usr/bin/containerd", "/usr/local/bin/containerd"),
             CRIO: ("/usr/bin/crio", "/usr/local/bin/crio")}


@dataclass(frozen=True, slots=True)
class NodeOptions:
    """`node_name` names the subject of every result; `container_runtime_version` is the
    node's `status.nodeInfo.containerRuntimeVersion` when the cluster tier knows it."""

    node_name: str | None = None
    container_runtime_version: str | None = None
    containerd_config: str = CONTAINERD_CONFIG
    crio_config: str = CRIO_CONFIG
    crio_config_dir: str = CRIO_CONFIG_DIR


def run_node_checks(host: Host, options: NodeOptions = NodeOptions()) -> tuple[CheckResult, ...]:
    """Every node check, in catalogue order. Never raises for what it finds on the node."""
    subject = options.node_name
    identity = detect_runtime(host, options.container_runtime_version)
    crictl = read_crictl_info(host, identity.name)
    is_old_containerd = (identity.name == CONTAINERD and identity.version is not None
                         and identity.version.major < 2)
    containerd_config = load_containerd_config(host, options.containerd_config,
                                               globs_relative_to_file=not is_old_containerd)
    crio_config = load_crio_config(host, options.crio_config, options.crio_config_dir)
    runtime = identity.name or crictl.runtime or _installed_runtime(
        host, containerd_config.main_exists, crio_config.found)
    if runtime == CONTAINERD and identity.name is None:
        identity = RuntimeIdentity(CONTAINERD, None, identity.source)

    on_disk: ConfiguredCdi | None = None
    if runtime == CONTAINERD:
        containerd_result, on_disk = check_containerd(host, identity, containerd_config, subject)
    else:
        containerd_result = _not_this_runtime(NODE003, "containerd", runtime, subject)
    if runtime == CRIO:
        crio_result, on_disk = check_crio(host, crio_config, subject)
    else:
        crio_result = _not_this_runtime(NODE004, "CRI-O", runtime, subject)

    live_dirs = crictl.spec_dirs if crictl.reason is None else None
    runtime_dirs = live_dirs or (on_disk.spec_dirs if on_disk else None)
    return (
        check_driver(read_driver(host), subject),
        check_runtime_version(identity, subject),
        containerd_result,
        crio_result,
        check_crictl(host, crictl, on_disk, subject),
        check_cdi_specs(scan_specs(host, runtime_dirs), subject),
        check_toolkit(host, subject),
    )


def _installed_runtime(host: Host, containerd_config: bool, crio_config: bool) -> str | None:
    if containerd_config or any(host.exists(p) for p in _BINARIES[CONTAINERD]):
        return CONTAINERD
    if crio_config or any(host.exists(p) for p in _BINARIES[CRIO]):
        return CRIO
    return None


def _not_this_runtime(info: CheckInfo, name: str, runtime: str | None,
                      subject: str | None) -> CheckResult:
    if runtime is None:
        message = ("no container runtime found (no containerd or CRI-O config, binary or "
                   "command)")
        fix = "run gpudra on a Kubernetes node, or point --host-root at its filesystem"
    else:
        message = f"the node runs {runtime}, not {name}"
        fix = "nothing to do"
    return result(info, CheckOutcome.UNAVAILABLE, message, fix, subject=subject)


__all__ = ["NODE_CHECKS", "Host", "LocalHost", "NodeOptions", "run_node_checks"]
