#!/usr/bin/env python3
"""Benchmark `gpudra audit FILE -o json` on one large JSON `kind: List` of pods.

    python benchmarks/bench_json.py [--size-mb 29] [--gpu-every 4] [--pretty] [--rounds 3]
                                    [--gpudra PATH] [--keep] [--json OUT]

Generates a `kind: List` of pods shaped like `kubectl get pods -A -o json` output (labels,
annotations, managedFields, env, volumes, status), every --gpu-every'th pod requesting
`nvidia.com/gpu`, until the file reaches --size-mb. By default the file is ONE line
(`json.dumps` without indent, as `kubectl get -o json | jq -c` or an API dump writes it);
--pretty writes it indented by 4 spaces, as kubectl does, to measure the multi-line path.

For reference, the script first times `json.loads` of the file in this process. Then it runs
`gpudra audit FILE -o json` --rounds times as a child process and prints, per run and as
median/min/max, the wall time, the child's CPU time and its peak RSS (ru_maxrss from
os.wait4; the caveat of bench_audit.py applies: no child can report less than this script's
own peak, printed as the RSS floor). The report is checked: one GPU101 per GPU pod, on the
line of its `nvidia.com/gpu` key (line 1 in a one-line file), and no input error.

The exit status is 1 only when a correctness check fails. Standard library only; helpers
come from bench_audit.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_audit import child_env, find_gpudra, rss_floor_mb, run, stats  # noqa: E402


def pod(i: int, gpu: bool) -> dict:
    name = f"worker-{i:06d}"
    namespace = f"team-{i % 37:02d}"
    resources: dict = {"requests": {"cpu": "500m", "memory": "2Gi"},
                       "limits": {"cpu": "2", "memory": "8Gi"}}
    if gpu:
        resources["limits"]["nvidia.com/gpu"] = 1 + i % 4
    env = [{"name": f"SETTING_{k}", "value": f"value-{i}-{k}"} for k in range(6)]
    env.append({"name": "DB_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{i:08x}-0000-4000-8000-{i:012x}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": f"app-{i % 211}", "team": namespace,
                       "pod-template-hash": f"{i * 7919 % 100000:05d}"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                            "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": f"{name}-rs", "uid": f"{i:08x}-rs",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                               "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                                            "f:spec": {"f:containers": {}}}}],
        },
        "spec": {
            "containers": [{
                "name": "main",
                "image": "nvcr.io/nvidia/pytorch:24.05-py3" if gpu else "python:3.12-slim",
                "command": ["python", "-m", "serve", "--port", "8080"],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": env,
                "resources": resources,
                "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                 {"name": "kube-api-access", "mountPath":
                                  "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "readOnly": True}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                                   "periodSeconds": 10},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }],
            "volumes": [{"name": "data", "emptyDir": {}},
                        {"name": "kube-api-access", "projected": {"sources": [
                            {"serviceAccountToken": {"path": "token",
                                                     "expirationSeconds": 3607}}]}}],
            "restartPolicy": "Always",
            "nodeName": f"node-{i % 97:03d}",
            "serviceAccountName": "default",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running",
            "hostIP": f"10.0.{i % 97}.1",
            "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                   "image": "python:3.12-slim", "imageID": f"sha256:{i:064x}",
                                   "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}],
        },
    }


def generate(path: str, size_mb: float, gpu_every: int, pretty: bool) -> dict:
    """Write the List item by item (this process's peak RSS is the children's floor, so the
    whole list is never held); returns what the audit must report."""
    target = int(size_mb * 1024 * 1024)
    head = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
    pods = gpu = 0
    gpu_lines: list[int] = []
    with open(path, "w", encoding="utf-8") as fh:
        if pretty:  # exactly json.dumps(document, indent=4)
            opening = json.dumps(head, indent=4)[:-2] + ',\n    "items": ['
        else:
            opening = json.dumps(head)[:-1] + ', "items": ['
        fh.write(opening)
        size = len(opening)
        line = opening.count("\n") + 1
        while size < target:
            is_gpu = pods % gpu_every == 0
            item = pod(pods, is_gpu)
            if pretty:
                body = "\n".join("        " + x for x in json.dumps(item, indent=4).splitlines())
                chunk = ("," if pods else "") + "\n" + body
                if is_gpu:
                    offset = next(n for n, x in enumerate(chunk.split("\n"))
                                  if x.lstrip().startswith('"nvidia.com/gpu"'))
                    gpu_lines.append(line + offset)
            else:
                chunk = (", " if pods else "") + json.dumps(item)
            fh.write(chunk)
            size += len(chunk)
            line += chunk.count("\n")
            pods += 1
            gpu += is_gpu
        closing = "\n    ]\n}\n" if pretty else "]}\n"
        fh.write(closing)
        size += len(closing)
        line += closing.count("\n")
    return {"pods": pods, "gpu_pods": gpu, "bytes": size, "lines": line - 1,
            "gpu_lines": gpu_lines or None}


def check(out: bytes, meta: dict) -> list[str]:
    try:
        report = json.loads(out)
    except ValueError as exc:
        return [f"audit output is not JSON: {exc}"]
    problems = []
    if report.get("errors"):
        problems.append(f"input errors: {report['errors'][:3]}")
    gpu101 = [f for f in report.get("findings", []) if f["rule"] == "GPU101"]
    if len(gpu101) != meta["gpu_pods"]:
        problems.append(f"{len(gpu101)} GPU101 findings, expected {meta['gpu_pods']}")
    expected = meta["gpu_lines"] or [1] * meta["gpu_pods"]
    got = sorted(f["line"] for f in gpu101)
    if got != sorted(expected):
        problems.append(f"GPU101 lines differ from the nvidia.com/gpu key lines "
                        f"(first: {got[:3]} vs {sorted(expected)[:3]})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=29.0)
    parser.add_argument("--gpu-every", type=int, default=4)
    parser.add_argument("--pretty", action="store_true",
                        help="indent by 4 spaces (multi-line), as kubectl writes JSON")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpudra", help="gpudra executable (default: beside this Python)")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--json", metavar="OUT", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    gpudra = find_gpudra(args.gpudra)

    workdir = tempfile.mkdtemp(prefix="gpudra-bench-json-")
    path = os.path.join(workdir, "pods.json")
    meta = generate(path, args.size_mb, args.gpu_every, args.pretty)
    print(f"file: {path}: {meta['bytes'] / 1e6:.1f} MB, {meta['lines']} line(s), "
          f"{meta['pods']} pods, {meta['gpu_pods']} with nvidia.com/gpu")
    print(f"python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs; gpudra: {gpudra}")

    env = child_env()
    # The reference parse runs in a child too: in this process it would raise the RSS floor.
    probe = ("import json, sys, time; t = time.perf_counter(); json.load(open(sys.argv[1])); "
             "print(f'{time.perf_counter() - t:.2f}')")
    reference = run([sys.executable, "-c", probe, path], env)
    print(f"json.load alone (child): {reference.stdout.decode().strip()} s parse, "
          f"peak RSS {reference.rss_mb:.0f} MB")
    run([gpudra, "audit", path, "-o", "json"], env)  # warm the page cache and __pycache__
    runs = []
    problems: list[str] = []
    for round_ in range(1, args.rounds + 1):
        result = run([gpudra, "audit", path, "-o", "json"], env)
        runs.append(result)
        problems += [f"round {round_}: {p}" for p in check(result.stdout, meta)]
        print(f"round {round_}: wall {result.wall:.2f} s, cpu {result.cpu:.2f} s, "
              f"peak RSS {result.rss_mb:.0f} MB, exit {result.rc}")
    wall, cpu, rss = (stats([getattr(r, k) for r in runs]) for k in ("wall", "cpu", "rss_mb"))
    print(f"\n{'':8}{'median':>10}{'min':>10}{'max':>10}")
    print(f"{'wall s':8}{wall[0]:>10.2f}{wall[1]:>10.2f}{wall[2]:>10.2f}")
    print(f"{'cpu s':8}{cpu[0]:>10.2f}{cpu[1]:>10.2f}{cpu[2]:>10.2f}")
    print(f"{'RSS MB':8}{rss[0]:>10.0f}{rss[1]:>10.0f}{rss[2]:>10.0f}")
    print(f"RSS floor (this script's own peak): {rss_floor_mb():.0f} MB")
    rules = Counter(f["rule"] for f in json.loads(runs[-1].stdout)["findings"])
    print(f"findings by rule: {dict(sorted(rules.items()))}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"meta": {k: v for k, v in meta.items() if k != "gpu_lines"},
                       "wall": wall, "cpu": cpu, "rss_mb": rss}, fh, indent=2)
    if args.keep:
        print(f"kept {path}")
    else:
        os.unlink(path)
        os.rmdir(workdir)
    for problem in problems:
        print(f"CHECK FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
