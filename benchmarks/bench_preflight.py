#!/usr/bin/env python3
"""Time the cluster tier of `gpudra preflight` on the generated 20,000-pod cluster.

    python benchmarks/bench_preflight.py [--seed 1] [--repeat 5]

Builds the state of benchmarks/gen_cluster.py, turns it into a ClusterSnapshot the way the
cluster client would (one tuple of items per resource, built-in items without kind/apiVersion),
and prints the time of `run_cluster_checks` and each check's outcome and message. No assertions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_cluster import build_state  # noqa: E402

from gpudra.preflight.cluster import ClusterSnapshot, run_cluster_checks  # noqa: E402
from gpudra.preflight.cluster.nodes import slice_devices_by_node  # noqa: E402
from gpudra.sources.live import device_plugin_holding  # noqa: E402

KEYS = {"Node": "nodes", "DaemonSet": "daemonsets", "Deployment": "deployments", "Pod": "pods",
        "ResourceQuota": "resourcequotas", "DeviceClass": "deviceclasses",
        "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims",
        "ClusterPolicy": "clusterpolicies"}
CUSTOM = {"ClusterPolicy"}


def snapshot_of(state: dict) -> ClusterSnapshot:
    objects: dict[str, list[dict]] = {key: [] for key in KEYS.values()}
    for obj in state["objects"]:
        key = KEYS.get(obj.get("kind"))
        if key is None:
            continue
        if obj["kind"] not in CUSTOM:
            obj = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        objects[key].append(obj)
    # The reader keeps, of every namespace's pods, those that hold device-plugin GPUs on a node
    # that publishes DRA devices (CLUSTER008's switch windows): the same filter here.
    publishing = {node for node, count in (slice_devices_by_node(objects["resourceslices"])
                                           or {}).items() if count}
    objects["gpuholders"] = [p for p in objects["pods"]
                             if (holding := device_plugin_holding(p)) is not None
                             and holding[0] in publishing]
    groups = {"": ("v1",), "apps": ("v1",), "resource.k8s.io": ("v1",), "nvidia.com": ("v1",)}
    return ClusterSnapshot(f"v{state.get('version', '1.34.2')}", groups,
                           {k: tuple(v) for k, v in objects.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    snapshot = snapshot_of(build_state(seed=args.seed))
    sizes = ", ".join(f"{k} {len(v)}" for k, v in snapshot.objects.items())
    print(f"snapshot: {sizes}")
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        results = run_cluster_checks(snapshot)
        times.append(time.perf_counter() - start)
    print(f"run_cluster_checks: median {statistics.median(times) * 1000:.1f} ms, "
          f"min {min(times) * 1000:.1f} ms over {args.repeat} runs")
    for res in results:
        print(f"  {res.id} {res.outcome.value:<11} {res.message[:150]}")


if __name__ == "__main__":
    main()
