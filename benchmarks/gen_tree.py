#!/usr/bin/env python3
"""Generate a deterministic, realistic Kubernetes manifest tree for benchmarking `gpudra audit`.

    python benchmarks/gen_tree.py OUT_DIR [--files 10000] [--seed 1] [--gpu-percent 2]
                                  [--decoy-percent 1] [--avg-size 4000]

Layout: ``OUT_DIR/teams/<team>/<app>/<base|overlays/ENV>/<kind>.yaml`` (some ``.yml``), each
file holding three documents (Deployment/StatefulSet/Job/CronJob with a Service, ConfigMap or
ServiceAccount beside it). ConfigMaps carry long config payloads (properties, nginx, logging)
sized so the average file is ~4 KB, i.e. ~40 MB for 10,000 files.

Three classes of file, chosen by seeded sampling:

* GPU files (``--gpu-percent``, default 2%): one workload document requests
  ``nvidia.com/gpu`` -- Deployments, Jobs and Kubeflow PyTorchJobs (Master + Worker, two
  requests). Each GPU request is written so that it produces exactly one finding (GPU101):
  no NVIDIA env variables, no nvidia.com/gpu tolerations, no GFD node selectors.
* Decoy files (``--decoy-percent``, default 1%): a non-GPU pod running an
  ``nvcr.io/nvidia/...`` image (CPU preprocessing with the PyTorch container, a Triton
  client, ...). The byte pre-scan matches ``nvidia`` so that document is decoded and parsed,
  but no rule fires: this exercises the pre-scan's false-positive path. They never contain
  ``nvidia.com/``, so ``grep -rlF nvidia.com/`` lists only the GPU files.
* Everything else contains none of gpudra's pre-scan needles (checked while generating).

The generator writes ``OUT_DIR/gen_tree.meta`` (JSON; the suffix keeps gpudra from scanning it)
with the seed, file/byte counts and the expected number of GPU requests and findings.
Only the standard library is used; the same arguments always produce byte-identical trees.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

# gpudra's pre-scan needles (gpudra/sources/reading.py NEEDLES), checked against every file.
NEEDLES = ("nvidia", "NVIDIA_", "resource.k8s.io", "resourceClaim", "amd.com/gpu",
           "gpu.intel.com/", "gpudra.io/")
META_NAME = "gen_tree.meta"

TEAMS = ["payments", "checkout", "search", "ranking", "ads", "identity", "billing", "catalog",
         "inventory", "shipping", "notifications", "analytics", "platform", "observability",
         "data-eng", "ml-research", "ml-serving", "fraud", "growth", "support", "mobile-api",
         "media", "recommendations", "security"]
APP_PREFIX = ["order", "user", "cart", "price", "event", "session", "feed", "report", "image",
              "ledger", "token", "profile", "index", "query", "stream", "audit", "quota",
              "route", "asset", "email", "sms", "webhook", "export", "import", "geo", "tax"]
APP_SUFFIX = ["api", "worker", "gateway", "svc", "consumer", "indexer", "sync", "scheduler",
              "proxy", "cache", "processor", "exporter", "backend", "frontend", "batch"]
ENVS = ["base", "overlays/dev", "overlays/staging", "overlays/prod"]
REGISTRIES = ["registry.internal.example.com", "ghcr.io/example-corp",
              "123456789012.dkr.ecr.us-east-1.amazonaws.com", "europe-docker.pkg.dev/acme/apps"]
PUBLIC_IMAGES = ["redis:7.2-alpine", "postgres:16.3", "nginx:1.27-alpine",
                 "bitnami/kafka:3.7", "prom/statsd-exporter:v0.26.1", "busybox:1.36",
                 "envoyproxy/envoy:v1.30.2", "otel/opentelemetry-collector:0.102.1"]
DECOY_IMAGES = ["nvcr.io/nvidia/pytorch:24.05-py3", "nvcr.io/nvidia/tritonserver:24.05-py3-sdk",
                "nvcr.io/nvidia/rapidsai/base:24.04-cuda12.2-py3.11",
                "nvcr.io/nvidia/tensorflow:24.03-tf2-py3"]
GPU_IMAGES = ["nvcr.io/nvidia/pytorch:24.05-py3", "nvcr.io/nvidia/tritonserver:24.05-py3",
              "ghcr.io/example-corp/llm-serving:2.3.1-cuda12.4",
              "registry.internal.example.com/ml/trainer:1.18.0-cu121",
              "vllm/vllm-openai:v0.5.0"]
WORDS = ["timeout", "retry", "pool", "buffer", "batch", "window", "cache", "ttl", "limit",
         "threshold", "backoff", "interval", "queue", "shard", "replica", "partition", "region",
         "bucket", "endpoint", "token", "secret", "schema", "table", "topic", "consumer",
         "producer", "metrics", "tracing", "sampler", "logger", "level", "format", "compress",
         "encrypt", "rotate", "flush", "max", "min", "idle", "connect", "read", "write"]
LOG_LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]
FILE_KINDS = ["deployment", "deployment", "deployment", "service", "configmap",
              "statefulset", "job", "cronjob"]
GPU_KINDS = ["deployment", "deployment", "job", "job", "pytorchjob"]


def _has_needle(text: str) -> bool:
    return any(n in text for n in NEEDLES)


class Generator:
    def __init__(self, seed: int, avg_size: int) -> None:
        self.rng = random.Random(seed)
        self.avg_size = avg_size

    # ---- small helpers -------------------------------------------------------------------
    def image(self, app: str) -> str:
        r = self.rng
        if r.random() < 0.8:
            return f"{r.choice(REGISTRIES)}/{app}:{r.randint(1, 4)}.{r.randint(0, 40)}.{r.randint(0, 9)}"
        return r.choice(PUBLIC_IMAGES)

    def labels(self, team: str, app: str, env: str, indent: str) -> str:
        r = self.rng
        lines = [f"app.kubernetes.io/name: {app}",
                 f"app.kubernetes.io/part-of: {team}",
                 f"app.kubernetes.io/managed-by: {r.choice(['kustomize', 'argocd', 'flux'])}",
                 f"environment: {env.rsplit('/', 1)[-1]}",
                 f"team: {team}"]
        if r.random() < 0.5:
            lines.append(f"cost-center: cc-{r.randint(1000, 9999)}")
        if r.random() < 0.3:
            lines.append(f'app.kubernetes.io/version: "{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}"')
        return "".join(f"{indent}{ln}\n" for ln in lines)

    def env_vars(self, app: str, indent: str, count: int) -> str:
        r = self.rng
        out = []
        for _ in range(count):
            name = "_".join(r.sample(WORDS, 2)).upper()
            if r.random() < 0.2:
                out.append(f"{indent}- name: {name}\n{indent}  valueFrom:\n"
                           f"{indent}    secretKeyRef:\n{indent}      name: {app}-secrets\n"
                           f"{indent}      key: {name.lower().replace('_', '-')}\n")
            elif r.random() < 0.5:
                out.append(f'{indent}- name: {name}\n{indent}  value: "{r.randint(1, 5000)}"\n')
            else:
                out.append(f"{indent}- name: {name}\n{indent}  value: {r.choice(WORDS)}-{r.choice(WORDS)}\n")
        return "".join(out)

    def resources(self, indent: str, gpu: int = 0, in_requests: bool = False) -> str:
        r = self.rng
        cpu = r.choice(["100m", "250m", "500m", "1", "2", "4"])
        mem = r.choice(["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "8Gi"])
        req_gpu = f"{indent}    nvidia.com/gpu: {gpu}\n" if gpu and in_requests else ""
        lim_gpu = f"{indent}    nvidia.com/gpu: {gpu}\n" if gpu else ""
        return (f"{indent}resources:\n{indent}  requests:\n{indent}    cpu: {cpu}\n"
                f"{indent}    memory: {mem}\n{req_gpu}{indent}  limits:\n"
                f"{indent}    memory: {mem}\n{lim_gpu}")

    def container(self, name: str, image: str, app: str, indent: str, *, gpu: int = 0,
                  ports: bool = True, args: list[str] | None = None) -> str:
        r = self.rng
        s = (f"{indent}- name: {name}\n{indent}  image: {image}\n"
             f"{indent}  imagePullPolicy: {r.choice(['IfNotPresent', 'Always'])}\n")
        if args:
            s += f"{indent}  args:\n" + "".join(f'{indent}  - "{a}"\n' for a in args)
        if ports:
            s += f"{indent}  ports:\n{indent}  - name: http\n{indent}    containerPort: {r.choice([8080, 8000, 9090, 3000])}\n"
        s += f"{indent}  env:\n" + self.env_vars(app, indent + "  ", r.randint(2, 7))
        s += self.resources(indent + "  ", gpu, in_requests=gpu > 0 and r.random() < 0.5)
        if ports and r.random() < 0.7:
            s += (f"{indent}  readinessProbe:\n{indent}    httpGet:\n{indent}      path: /healthz\n"
                  f"{indent}      port: http\n{indent}    periodSeconds: {r.choice([5, 10, 15])}\n")
        s += (f"{indent}  volumeMounts:\n{indent}  - name: config\n"
              f"{indent}    mountPath: /etc/{app}\n{indent}    readOnly: true\n")
        return s

    def pod_spec(self, app: str, indent: str, containers: str, restart: str | None = None) -> str:
        r = self.rng
        s = f"{indent}serviceAccountName: {app}\n"
        if restart:
            s += f"{indent}restartPolicy: {restart}\n"
        if r.random() < 0.4:
            s += f"{indent}nodeSelector:\n{indent}  kubernetes.io/os: linux\n"
        if r.random() < 0.3:
            s += (f"{indent}securityContext:\n{indent}  runAsNonRoot: true\n"
                  f"{indent}  runAsUser: {r.choice([1000, 10001, 65532])}\n")
        s += f"{indent}containers:\n{containers}"
        s += (f"{indent}volumes:\n{indent}- name: config\n{indent}  configMap:\n"
              f"{indent}    name: {app}-config\n")
        return s

    def metadata(self, name: str, ns: str, team: str, app: str, env: str) -> str:
        s = f"metadata:\n  name: {name}\n  namespace: {ns}\n  labels:\n" + self.labels(team, app, env, "    ")
        if self.rng.random() < 0.4:
            s += (f"  annotations:\n    owner: {team}@example.com\n"
                  f"    runbook: https://wiki.example.com/runbooks/{team}/{app}\n")
        return s

    # ---- documents -----------------------------------------------------------------------
    def header(self, team: str, app: str, kind: str) -> str:
        r = self.rng
        return r.choice([
            f"# {kind} for {app}. Owned by team {team}; changes need a review from #{team}.\n",
            "# Managed by GitOps. Do not edit in the cluster; open a pull request instead.\n",
            f"# yaml-language-server: $schema=https://schemas.example.com/{kind.lower()}.json\n",
            ""])

    def deployment(self, team, app, env, ns, *, gpu=0, image=None, decoy=False) -> str:
        r = self.rng
        name = app
        containers = self.container(app, image or self.image(app), app, "      ", gpu=gpu)
        if r.random() < 0.4 and not gpu:
            containers += self.container("statsd", "prom/statsd-exporter:v0.26.1", app, "      ",
                                         ports=False)
        replicas = r.choice([1, 2, 3, 5]) if env != "overlays/prod" else r.choice([3, 6, 12])
        return (self.header(team, app, "Deployment") +
                "apiVersion: apps/v1\nkind: Deployment\n" + self.metadata(name, ns, team, app, env) +
                f"spec:\n  replicas: {replicas}  # see HPA for the real range\n"
                f"  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n"
                f"      app.kubernetes.io/name: {app}\n  strategy:\n    type: RollingUpdate\n"
                f"    rollingUpdate: {{maxSurge: 25%, maxUnavailable: 0}}\n  template:\n"
                f"    metadata:\n      labels:\n" + self.labels(team, app, env, "        ") +
                "    spec:\n" + self.pod_spec(app, "      ", containers))

    def statefulset(self, team, app, env, ns) -> str:
        r = self.rng
        containers = self.container(app, r.choice(["postgres:16.3", "redis:7.2-alpine",
                                                    "bitnami/kafka:3.7"]), app, "      ")
        return (self.header(team, app, "StatefulSet") +
                "apiVersion: apps/v1\nkind: StatefulSet\n" + self.metadata(app, ns, team, app, env) +
                f"spec:\n  serviceName: {app}-headless\n  replicas: {r.choice([1, 3])}\n"
                f"  selector:\n    matchLabels:\n      app.kubernetes.io/name: {app}\n"
                f"  template:\n    metadata:\n      labels:\n" + self.labels(team, app, env, "        ") +
                "    spec:\n" + self.pod_spec(app, "      ", containers) +
                f"  volumeClaimTemplates:\n  - metadata:\n      name: data\n    spec:\n"
                f"      accessModes: [ReadWriteOnce]\n      storageClassName: {r.choice(['gp3', 'standard-rwo', 'premium'])}\n"
                f"      resources:\n        requests:\n          storage: {r.choice([10, 50, 200])}Gi\n")

    def job(self, team, app, env, ns, *, gpu=0, image=None, cron=False) -> str:
        r = self.rng
        args = ["--input", f"s3://{team}-data/{app}/", "--since", f"{r.randint(1, 48)}h"]
        containers = self.container(app, image or self.image(app), app,
                                    "          " if cron else "      ", gpu=gpu, ports=False, args=args)
        if cron:
            return (self.header(team, app, "CronJob") +
                    "apiVersion: batch/v1\nkind: CronJob\n" +
                    self.metadata(f"{app}-nightly", ns, team, app, env) +
                    f'spec:\n  schedule: "{r.randint(0, 59)} {r.randint(0, 23)} * * *"\n'
                    f"  concurrencyPolicy: Forbid\n  jobTemplate:\n    spec:\n"
                    f"      backoffLimit: 2\n      template:\n        spec:\n" +
                    self.pod_spec(app, "          ", containers, restart="OnFailure"))
        return (self.header(team, app, "Job") +
                "apiVersion: batch/v1\nkind: Job\n" + self.metadata(f"{app}-run", ns, team, app, env) +
                f"spec:\n  backoffLimit: {r.choice([0, 1, 3])}\n  ttlSecondsAfterFinished: 86400\n"
                f"  template:\n    metadata:\n      labels:\n" + self.labels(team, app, env, "        ") +
                "    spec:\n" + self.pod_spec(app, "      ", containers, restart="Never"))

    def pytorchjob(self, team, app, env, ns, gpu: int) -> str:
        r = self.rng
        image = r.choice(GPU_IMAGES)
        specs = ""
        for role, replicas in (("Master", 1), ("Worker", r.choice([1, 3, 7]))):
            c = self.container("pytorch", image, app, "            ", gpu=gpu, ports=False,
                               args=["torchrun", "--nproc-per-node", str(gpu), "train.py"])
            specs += (f"    {role}:\n      replicas: {replicas}\n      restartPolicy: OnFailure\n"
                      f"      template:\n        spec:\n" + self.pod_spec(app, "          ", c))
        return (self.header(team, app, "PyTorchJob") +
                "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n" +
                self.metadata(f"{app}-train", ns, team, app, env) +
                "spec:\n  runPolicy:\n    cleanPodPolicy: None\n  pytorchReplicaSpecs:\n" + specs)

    def service(self, team, app, env, ns, headless=False) -> str:
        r = self.rng
        name = f"{app}-headless" if headless else app
        cluster_ip = "  clusterIP: None\n" if headless else ""
        return ("apiVersion: v1\nkind: Service\n" + self.metadata(name, ns, team, app, env) +
                f"spec:\n  type: ClusterIP\n{cluster_ip}  selector:\n"
                f"    app.kubernetes.io/name: {app}\n  ports:\n  - name: http\n"
                f"    port: {r.choice([80, 8080, 443])}\n    targetPort: http\n")

    def service_account(self, team, app, env, ns) -> str:
        return ("apiVersion: v1\nkind: ServiceAccount\n" + self.metadata(app, ns, team, app, env) +
                "automountServiceAccountToken: false\n")

    def configmap(self, team, app, env, ns, pad_to: int, suffix: str = "config") -> str:
        r = self.rng
        head = ("apiVersion: v1\nkind: ConfigMap\n" +
                self.metadata(f"{app}-{suffix}", ns, team, app, env) + "data:\n")
        body = [head]
        size = len(head)
        room = pad_to - size
        flavours = r.sample(["properties", "nginx", "logging", "json"],
                            1 if room < 1200 else 2 if room < 2400 else 3)
        per = max(80, room // len(flavours) - 40)  # 40: the key line and closing lines
        for flavour in flavours:
            lines, used = [], 0
            if flavour == "properties":
                body.append("  application.properties: |\n")
                while used < per:
                    ln = f"    {r.choice(WORDS)}.{r.choice(WORDS)}.{r.choice(WORDS)}={r.randint(0, 100000)}\n"
                    if r.random() < 0.1:
                        ln = f"    # {r.choice(WORDS)} {r.choice(WORDS)} tuned after incident INC-{r.randint(100, 9999)}\n"
                    lines.append(ln)
                    used += len(ln)
            elif flavour == "nginx":
                body.append("  nginx.conf: |\n    server {\n      listen 8080;\n")
                while used < per:
                    ln = (f"      location /{r.choice(WORDS)}/{r.choice(WORDS)} {{ proxy_pass "
                          f"http://{r.choice(WORDS)}-{r.choice(APP_SUFFIX)}:{r.choice([80, 8080])}; "
                          f"proxy_read_timeout {r.randint(5, 120)}s; }}\n")
                    lines.append(ln)
                    used += len(ln)
                lines.append("    }\n")
            elif flavour == "logging":
                body.append("  logging.yaml: |\n    version: 1\n    loggers:\n")
                while used < per:
                    ln = (f"      {r.choice(WORDS)}.{r.choice(WORDS)}: {{level: {r.choice(LOG_LEVELS)}, "
                          f"handlers: [console{', file' if r.random() < 0.3 else ''}]}}\n")
                    lines.append(ln)
                    used += len(ln)
            else:
                body.append("  features.json: |\n    {\n")
                while used < per:
                    ln = f'      "{r.choice(WORDS)}_{r.choice(WORDS)}_{r.randint(0, 999)}": {r.choice(["true", "false"])},\n'
                    lines.append(ln)
                    used += len(ln)
                lines.append('      "_generated": true\n    }\n')
            body.extend(lines)
            size += used
        return "".join(body)

    # ---- files ---------------------------------------------------------------------------
    def file(self, team: str, app: str, env: str, kind: str, gpu_kind: str | None,
             decoy: bool) -> tuple[str, int]:
        """Text of one 3-document file and the number of GPU requests in it."""
        r = self.rng
        ns = f"{team}-{env.rsplit('/', 1)[-1]}"
        target = int(r.triangular(self.avg_size * 0.55, self.avg_size * 1.5, self.avg_size * 0.95))
        requests = 0
        gpu = r.choice([1, 1, 2, 4, 8])
        if gpu_kind == "deployment":
            main = self.deployment(team, app, env, ns, gpu=gpu, image=r.choice(GPU_IMAGES))
            side = self.service(team, app, env, ns)
            requests = 1
        elif gpu_kind == "job":
            main = self.job(team, app, env, ns, gpu=gpu, image=r.choice(GPU_IMAGES))
            side = self.service_account(team, app, env, ns)
            requests = 1
        elif gpu_kind == "pytorchjob":
            main = self.pytorchjob(team, app, env, ns, gpu)
            side = self.service_account(team, app, env, ns)
            requests = 2  # Master and Worker
        elif decoy:
            image = r.choice(DECOY_IMAGES)
            if r.random() < 0.5:
                main = self.job(team, app, env, ns, image=image)
                side = self.service_account(team, app, env, ns)
            else:
                main = self.deployment(team, app, env, ns, image=image)
                side = self.service(team, app, env, ns)
        elif kind == "statefulset":
            main = self.statefulset(team, app, env, ns)
            side = self.service(team, app, env, ns, headless=True)
        elif kind in ("job", "cronjob"):
            main = self.job(team, app, env, ns, cron=kind == "cronjob")
            side = self.service_account(team, app, env, ns)
        elif kind == "service":
            main = self.service(team, app, env, ns)
            side = self.service(team, app, env, ns, headless=True)
        elif kind == "configmap":
            main = self.configmap(team, app, env, ns, target // 3, suffix="env")
            side = self.service_account(team, app, env, ns)
        else:
            main = self.deployment(team, app, env, ns)
            side = self.service(team, app, env, ns)
        pad = max(250, target - len(main) - len(side))
        cm = self.configmap(team, app, env, ns, pad)
        docs = [main, side, cm]
        r.shuffle(docs)
        lead = "---\n" if r.random() < 0.5 else ""
        return lead + "---\n".join(docs), requests

    def layout(self, n_files: int) -> list[tuple[str, str, str, str]]:
        """(team, app, env, filename) for n_files files, teams/<team>/<app>/<env>/."""
        r = self.rng
        out: list[tuple[str, str, str, str]] = []
        used_apps: dict[str, int] = {}
        while len(out) < n_files:
            team = r.choice(TEAMS)
            app = f"{r.choice(APP_PREFIX)}-{r.choice(APP_SUFFIX)}"
            key = f"{team}/{app}"
            if key in used_apps:
                used_apps[key] += 1
                app = f"{app}-{used_apps[key]}"
            else:
                used_apps[key] = 1
            envs = ENVS if r.random() < 0.7 else ENVS[:1] + r.sample(ENVS[1:], 1)
            for env in envs:
                kinds = r.sample(FILE_KINDS, r.randint(1, 4))
                seen: list[str] = []
                for kind in kinds:
                    if kind in seen:
                        continue
                    seen.append(kind)
                    ext = ".yml" if r.random() < 0.1 else ".yaml"
                    out.append((team, app, env, kind + ext))
        return out[:n_files]


def generate(out_dir: str, files: int = 10_000, seed: int = 1, gpu_percent: float = 2.0,
             decoy_percent: float = 1.0, avg_size: int = 4000) -> dict:
    """Write the tree; return (and store in OUT_DIR/gen_tree.meta) its description."""
    g = Generator(seed, avg_size)
    layout = g.layout(files)
    n_gpu = round(files * gpu_percent / 100)
    n_decoy = round(files * decoy_percent / 100)
    picked = g.rng.sample(range(len(layout)), n_gpu + n_decoy)
    gpu_idx = {i: GPU_KINDS[k % len(GPU_KINDS)] for k, i in enumerate(picked[:n_gpu])}
    decoy_idx = set(picked[n_gpu:])
    total_bytes = gpu_requests = 0
    gpu_files: list[str] = []
    made_dirs: set[str] = set()
    for i, (team, app, env, fname) in enumerate(layout):
        directory = os.path.join(out_dir, "teams", team, app, env)
        if directory not in made_dirs:
            os.makedirs(directory, exist_ok=True)
            made_dirs.add(directory)
        gpu_kind = gpu_idx.get(i)
        if gpu_kind is not None:
            stem, ext = os.path.splitext(fname)
            fname = f"{gpu_kind}-gpu{ext}"
            if os.path.exists(os.path.join(directory, fname)):  # two GPU files in one dir
                fname = f"{gpu_kind}-gpu-{stem}{ext}"
        text, requests = g.file(team, app, env, fname.split(".")[0], gpu_kind, i in decoy_idx)
        rel = os.path.join("teams", team, app, env, fname)
        # Self-checks: the file classes are what the benchmark's expectations rely on.
        if gpu_kind is not None:
            assert text.count("nvidia.com/gpu:") >= requests, rel
            gpu_files.append(rel)
        elif i in decoy_idx:
            assert "nvidia" in text and "nvidia.com/" not in text and "NVIDIA_" not in text, rel
        else:
            assert not _has_needle(text), rel
        data = text.encode()
        path = os.path.join(out_dir, rel)
        if os.path.exists(path):
            raise SystemExit(f"gen_tree: {path} exists (layout collision)")
        with open(path, "wb") as fh:
            fh.write(data)
        total_bytes += len(data)
        gpu_requests += requests
    meta = {
        "seed": seed, "files": len(layout), "bytes": total_bytes, "directories": len(made_dirs),
        "documents": 3 * len(layout), "gpu_files": n_gpu, "decoy_files": n_decoy,
        "gpu_requests": gpu_requests,
        # Each GPU request is a GPU101 finding and nothing else fires.
        "expected_findings": {"GPU101": gpu_requests},
        "grep_matches": n_gpu,
    }
    with open(os.path.join(out_dir, META_NAME), "w") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", help="directory to create (must not exist or be empty)")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gpu-percent", type=float, default=2.0)
    p.add_argument("--decoy-percent", type=float, default=1.0,
                   help="non-GPU files with an nvcr.io/nvidia image (pre-scan false positives)")
    p.add_argument("--avg-size", type=int, default=4000, help="target mean file size in bytes")
    a = p.parse_args(argv)
    if os.path.isdir(a.out_dir) and os.listdir(a.out_dir):
        p.error(f"{a.out_dir} is not empty")
    meta = generate(a.out_dir, a.files, a.seed, a.gpu_percent, a.decoy_percent, a.avg_size)
    json.dump(meta, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
