"""Generated fleets for `gpudra cutover --from`: the benchmark's (benchmarks/bench_cutover.py)
and a varied one for the test that pins cutover's output (tests/verify/test_cutover_pinned.py).
Deterministic: equal arguments give equal objects."""

from __future__ import annotations

import random
from typing import Any

from tests.verify import fleet as f


def benchmark_fleet(nodes: int, workloads: int, seed: int = 1) -> list[dict[str, Any]]:
    """`nodes` GPU nodes of 8 GPUs in 10 pools and `workloads` GPU workloads (Jobs,
    Deployments with replicas, StatefulSets; one in five pinned to a pool), 70% of the GPUs
    requested."""
    rng = random.Random(seed)
    pools = [f"pool-{i}" for i in range(10)]
    objects = [f.node(f"gpu-{i:04d}", 8, pool=pools[i % len(pools)]) for i in range(nodes)]
    capacity = nodes * 8 * 0.7  # a fleet 70% busy
    used = 0
    for index in range(workloads):
        kind = rng.choice(["Job", "Deployment", "Deployment", "StatefulSet"])
        gpus = rng.choice([1, 1, 1, 2, 4])
        replicas = rng.choice([1, 1, 2]) if kind != "Job" else 1
        left = workloads - index - 1  # each needs at least one GPU
        if used + gpus * replicas + left > capacity:
            gpus, replicas = 1, 1
        used += gpus * replicas
        selector = {f.POOL_LABEL: rng.choice(pools)} if index % 5 == 0 else None
        spec = f.pod_spec(gpus=gpus, node_selector=selector)
        obj = f.deployment(f"team-{index % 20}", f"w-{index:04d}", spec, replicas,
                           kind="Job" if kind == "Job" else "Deployment")
        if kind == "StatefulSet":
            obj["kind"] = "StatefulSet"
            obj["spec"]["serviceName"] = obj["metadata"]["name"]
        objects.append(obj)
    return objects


# The varied fleet's pools: (name, nodes, what is special about them)
VARIED_POOLS = (("a100", 6, "plain"), ("h100", 8, "plain"), ("l4", 4, "tainted"),
                ("shared", 3, "time-slicing"), ("switched", 3, "dra"), ("spare", 2, "plain"))
_TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "inference",
               "effect": "NoSchedule"}


def varied_fleet(workloads: int, seed: int = 1, scale: int = 1) -> list[dict[str, Any]]:
    """Pools of every kind a cutover meets (plain, tainted, time-slicing 4 ways, already on
    DRA with their ResourceSlices) and workloads of every kind it moves (Deployments,
    StatefulSets, Jobs, CronJobs, bare pods bound to a node, workloads already on claims),
    placed by nodeSelector, required node affinity over two pools and tolerations; the device
    plugin's DaemonSet and a GPU quota in half the namespaces. `scale` multiplies the pools'
    nodes. At most 25% of the GPUs requested (a third of the already switched pool's)."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [f.device_class()]
    by_pool: dict[str, list[str]] = {}
    for pool, count, special in VARIED_POOLS:
        for index in range(count * scale):
            name = f"{pool}-{index}"
            by_pool.setdefault(pool, []).append(name)
            if special == "dra":
                objects += [f.node(name, 8, dra=True, pool=pool), f.gpu_slice(name, 8)]
                continue
            labels = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "2"} \
                if special == "time-slicing" else None
            node = f.node(name, 8, pool=pool, labels=labels)
            if special == "tainted":
                node["spec"] = {"taints": [dict(_TAINT)]}
            objects.append(node)
    plugin_nodes = [n for pool, names in by_pool.items() if pool != "switched" for n in names]
    objects += f.plugin_daemonset(plugin_nodes)
    namespaces = [f"team-{i}" for i in range(6)]
    for namespace in namespaces[::2]:
        objects.append({"apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": {"name": f"gpus-{namespace}", "namespace": namespace},
                        "spec": {"hard": {"requests.nvidia.com/gpu": "64"}}})
    budget = sum(count for _, count, _ in VARIED_POOLS) * scale * 8 * 25 // 100
    switched = len(by_pool["switched"]) * 8 // 3
    for index in range(workloads):
        namespace = namespaces[index % len(namespaces)]
        name = f"w-{index:03d}"
        gpus = rng.choice([1, 1, 2, 4]) if budget > 8 else 1
        spec = f.pod_spec(gpus=gpus)
        where = rng.choice(["anywhere", "anywhere", "pool", "affinity", "tolerates"])
        if where == "pool":
            spec["nodeSelector"] = {f.POOL_LABEL: rng.choice(["a100", "h100", "spare"])}
        elif where == "affinity":
            spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": f.POOL_LABEL, "operator": "In",
                                           "values": sorted(rng.sample(
                                               ["a100", "h100", "l4", "shared"], 2))}]}]}}}
        elif where == "tolerates":
            spec["tolerations"] = [dict(_TOLERATION)]
        kind = rng.choice(["Deployment", "Deployment", "StatefulSet", "Job", "CronJob", "Pod",
                           "claims"])
        replicas = rng.choice([1, 2, 3]) if kind in ("Deployment", "StatefulSet") else 1
        if kind == "claims" and switched < gpus * replicas:
            kind = "Job"
        if kind == "claims":
            switched -= gpus * replicas
        else:
            budget -= gpus * replicas
        objects += _workload(kind, namespace, name, spec, replicas, gpus, rng, by_pool)
    return objects


def _workload(kind: str, namespace: str, name: str, spec: dict[str, Any], replicas: int,
              gpus: int, rng: random.Random, by_pool: dict[str, list[str]]
              ) -> list[dict[str, Any]]:
    if kind == "claims":  # converted before this cutover: runs on the switched pool
        template = f.template(namespace, f"{name}-gpu", count=gpus)
        on_claims = f.pod_spec(template_name=f"{name}-gpu",
                               node_selector={f.POOL_LABEL: "switched"})
        return [template, f.deployment(namespace, name, on_claims, replicas)]
    if kind == "Pod":  # a bare pod where the scheduler bound it
        node = rng.choice(by_pool["h100"] + by_pool["a100"])
        return [f.pod(namespace, name, spec, node_name=node)]
    if kind == "CronJob":
        return [{"apiVersion": "batch/v1", "kind": "CronJob",
                 "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                 "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {
                     "spec": {**spec, "restartPolicy": "OnFailure"}}}}}}]
    obj = f.deployment(namespace, name, spec, replicas,
                       kind="Job" if kind == "Job" else "Deployment")
    if kind == "StatefulSet":
        obj["kind"] = "StatefulSet"
        obj["spec"]["serviceName"] = name
    return [obj]
