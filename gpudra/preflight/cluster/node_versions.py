"""CLUSTER002 and CLUSTER003: each node's kubelet and container runtime, from `status.nodeInfo`.

The judgements of one node are gpudra.preflight.runtime's (`judge_kubelet_skew`,
`judge_runtime_version`; facts and sources there). This module adds them up over the nodes,
GPU nodes first (grading in gpudra/preflight/cluster/nodes.py).
"""

from __future__ import annotations

from gpudra.preflight.check_records import CheckOutcome, CheckResult, Tier, check, result
from gpudra.preflight.cluster.nodes import count_by, gpu_nodes, grade_nodes
from gpudra.preflight.cluster.options import NO_OPTIONS, ClusterOptions
from gpudra.preflight.cluster.snapshot import NODES, ClusterSnapshot, unreadable
from gpudra.preflight.runtime import judge_kubelet_skew, judge_runtime_version

_NON_GPU_RULE = """
**GPU and non-GPU nodes.** GPU nodes (GFD or GPU Operator labels, `nvidia.com/gpu` capacity,
the NFD PCI label of vendor `10de`, or NVIDIA ResourceSlices) are graded as judged. A non-GPU
node never receives a GPU claim: its *fail* is reported as *warn*, and its *warn* or
*unavailable* is listed in the details without changing the outcome.
"""

CLUSTER002 = check(
    "CLUSTER002", "Kubelet versions within the supported skew", Tier.CLUSTER,
    "Every node's kubelet is at most three minors older than, and never newer than, "
    "kube-apiserver.",
    """
**Why it matters.** DRA spans the control plane and the kubelet: the scheduler allocates,
the kubelet asks the driver to prepare the devices and passes them to the runtime. The
Kubernetes version-skew policy supports a kubelet up to **three** minor versions older than
kube-apiserver (two before 1.25) and never newer. An unsupported kubelet may not speak the
DRA API the control plane serves. gpudra reads `status.nodeInfo.kubeletVersion` of every node.

With `--target-version`, the kubelets are compared with the planned control-plane release:
the check then says which nodes must be upgraded with (or before) the control plane.
""" + _NON_GPU_RULE + """
**Outcomes.** *pass*: every kubelet is within the skew. *warn*: only non-GPU nodes are
outside it. *fail*: a GPU node's kubelet is outside it. *unavailable*: nodes or the server
version could not be read, or a GPU node's kubelet version cannot be parsed.

**Fix.** Upgrade the listed kubelets (drain, upgrade, uncordon), or the control plane first
when a kubelet is newer.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))

CLUSTER003 = check(
    "CLUSTER003", "Container runtimes inject CDI devices", Tier.CLUSTER,
    "Each node's containerd or CRI-O, from `containerRuntimeVersion`, can inject the CDI devices "
    "of a claim.",
    """
**Why it matters.** The NVIDIA DRA driver writes a CDI spec per prepared claim, and the
kubelet passes the device names to the container runtime in the CRI `CDIDevices` field. A
runtime that ignores the field starts the container without its GPU and without an error.

- containerd **before 1.7.2** ignores the field (1.7.0 and 1.7.1 read only CDI annotations;
  1.6 has no CDI): *fail*.
- containerd **1.7.2 or later 1.7.x** reads it, but CDI is off unless `enable_cdi = true`
  is set under `[plugins."io.containerd.grpc.v1.cri"]`: *warn* (the node check NODE003 reads
  the config).
- containerd **2.x** turns CDI on by default: *pass*.
- CRI-O **before 1.28** ignores the field: *fail*; 1.28 and later: *pass* (CDI always on).
- Any other runtime (cri-dockerd, an unreadable version): *unavailable*.
""" + _NON_GPU_RULE + """
**Outcomes.** *pass*, *warn*, *fail* as above for GPU nodes; *unavailable*: nodes could not be
read, or a GPU node's runtime is unknown.

**Fix.** Upgrade containerd to 2.x (or 1.7.2+ with `enable_cdi = true`), or CRI-O to 1.28+.
""",
    (CheckOutcome.PASS, CheckOutcome.WARN, CheckOutcome.FAIL, CheckOutcome.UNAVAILABLE))


def check_kubelet_skew(snapshot: ClusterSnapshot,
                       options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    facts = snapshot.node_facts
    if facts is None:
        return unreadable(CLUSTER002, "nodes", snapshot.listing(NODES),
                          "nodes (ClusterRole with nodes: [list])")
    if options.target_version is not None:
        apiserver, against = str(options.target_version), f"target {options.target_version}"
    else:
        problem = snapshot.version_problem()
        if problem or snapshot.server_version is None:
            return result(CLUSTER002, CheckOutcome.UNAVAILABLE,
                          f"cannot tell the kube-apiserver version: {problem}",
                          "run `kubectl version`")
        apiserver, against = snapshot.server_version, f"kube-apiserver {snapshot.version}"
    if not facts:
        return result(CLUSTER002, CheckOutcome.UNAVAILABLE, "the cluster lists no nodes",
                      "check that the kube context points at the right cluster")
    judged = [(f, judge_kubelet_skew(f.kubelet_version, apiserver)) for f in facts]
    summary = (f"every kubelet is within the supported skew of {against}: "
               f"{count_by(f.kubelet_version for f in facts)}")
    return grade_nodes(CLUSTER002, judged, "kubelet skew", summary)


def check_container_runtimes(snapshot: ClusterSnapshot,
                             options: ClusterOptions = NO_OPTIONS) -> CheckResult:
    facts = snapshot.node_facts
    if facts is None:
        return unreadable(CLUSTER003, "nodes", snapshot.listing(NODES),
                          "nodes (ClusterRole with nodes: [list])")
    if not facts:
        return result(CLUSTER003, CheckOutcome.UNAVAILABLE, "the cluster lists no nodes",
                      "check that the kube context points at the right cluster")
    gpus = gpu_nodes(facts)
    judged = [(f, judge_runtime_version(f.runtime_version)) for f in facts]
    if gpus:
        whose = "the GPU node's runtime injects" if len(gpus) == 1 else \
            f"the runtimes of all {len(gpus)} GPU nodes inject"
        summary = f"{whose} CDI devices: {count_by(f.runtime_version for f in gpus)}"
    else:
        summary = ("no GPU node identified, so no runtime must inject GPUs; runtimes: "
                   f"{count_by(f.runtime_version for f in facts)}")
    return grade_nodes(CLUSTER003, judged, "the container runtime", summary)
