"""Hostile inputs for every kind of input gpudra reads, and one way to run them.

Shared by the suite's bounded fuzz test (tests/hostile/test_fuzz_inputs.py: in this process,
a few dozen examples per kind) and the longer campaign outside it
(benchmarks/fuzz_campaign.py: thousands per kind, each in a forked child with a time and a
memory limit). A generator turns a `random.Random` into a `Case`: the files to write, the
command line, and for the cluster kind the state of a fake API server. `run_case` runs one in
this process and says what went wrong, if anything: gpudra may refuse an input (exit 2 or 3,
one line per problem), never fail on one (an internal error, a traceback, another exit code).
"""

from __future__ import annotations

import base64
import copy
import functools
import io
import json
import os
import random
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DIR = "{dir}"  # stands for the case's directory in argv, file contents and journal paths
KUBECONFIG = "{kubeconfig}"  # the fake API server's kubeconfig (the cluster kind)
ACCEPTED_EXITS = frozenset({0, 1, 2, 3, 4})


@dataclass(frozen=True)
class Case:
    kind: str
    argv: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> bytes
    cluster: dict[str, Any] | None = None  # a fake API server's state (tests/fakeapi)
    journal: bytes | None = None  # convert's journal for the tree `{dir}/t`
    untouched: tuple[str, ...] = ()  # files no run may change (outside the tree)
    kept_if_refused: tuple[str, ...] = ()  # outputs a refused run (exit 2, 3) leaves as they were


# --- values and mutations ----------------------------------------------------------------------

def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 5, 2**63, 2**64, 10**40, 1.5, -0.0, float("inf"), float("nan"),
    "", "x", "-1", "0", "1", "10000000", "18446744073709551616", "1e999", "1Ei", "１", "0.5",
    "\x1b[31mred", "a\u202eb", "a\ud800b", "x" * 5000, "nvidia.com/gpu", "gpu.nvidia.com",
    "nvidia.com/mig-1g.10gb", "${X}", "{{ .Values.x }}", "../../etc/passwd", "/dev/zero",
    [], {}, [None], [1, "a"], {"a": 1}, {"nvidia.com/gpu": "1"}, {"": None}, _deep(60),
    [{"name": 5}], {"value": ".inf"}, {"string": 5}, {"int": "x"}, {"version": "1.2.x"},
)


def _paths(value: Any, limit: int = 4000) -> list[tuple]:
    """Every path into `value` (keys and indexes), breadth first, at most `limit`."""
    out: list[tuple] = [()]
    queue: list[tuple[tuple, Any]] = [((), value)]
    while queue and len(out) < limit:
        path, node = queue.pop(0)
        children = node.items() if isinstance(node, dict) else \
            enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            out.append((*path, key))
            queue.append(((*path, key), child))
    return out


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def mutate(rng: random.Random, value: Any, *, protect: Callable[[tuple], bool] = lambda p: False,
           rounds: int | None = None) -> Any:
    """A copy of `value` with one to four random changes, none at a protected path."""
    value = copy.deepcopy(value)
    for _ in range(rounds if rounds is not None else rng.randint(1, 4)):
        paths = [p for p in _paths(value) if p and not protect(p)]
        if not paths:
            break
        path = rng.choice(paths)
        parent, key = _get(value, path[:-1]), path[-1]
        op = rng.choice(("odd", "odd", "odd", "delete", "wrap", "duplicate", "swap-type",
                         "number", "key"))
        if op == "odd":
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif op == "delete":
            del parent[key]
        elif op == "wrap":
            parent[key] = [parent[key]] if rng.random() < 0.5 else {"x": parent[key]}
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif op == "swap-type":
            current = parent[key]
            parent[key] = str(current) if not isinstance(current, str) else \
                rng.choice((5, [current], {"k": current}, None))
        elif op == "number":
            parent[key] = rng.choice((-(2**70), 2**70, 10**4000, 1e308, -1, 0, 129, 1000001,
                                      4294967296))
        elif op == "key" and isinstance(parent, dict):
            parent[rng.choice(("items", "kind", "metadata", "spec", "status", "devices",
                               "containers", "resources", "labels", "<<", "\x00k", 5))] = \
                parent.pop(key)
    return value


def _dump_yaml(docs: list[Any]) -> bytes:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True).encode("utf-8",
                                                                                "surrogatepass")


def _dump_json(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode("utf-8")


def serialize(rng: random.Random, docs: list[Any], *, json_only: bool = False) -> bytes:
    """`docs` as YAML (several documents) or JSON (one, or a List of them), sometimes with
    byte-level damage on top."""
    try:
        if json_only or rng.random() < 0.3:
            data = _dump_json(docs[0] if len(docs) == 1 else
                              {"apiVersion": "v1", "kind": "List", "items": docs})
        else:
            data = _dump_yaml(docs)
    except (ValueError, OverflowError, RecursionError, yaml.YAMLError):
        data = json.dumps(docs, default=str).encode("utf-8", "surrogatepass")
    return damage(rng, data) if rng.random() < 0.25 else data


def damage(rng: random.Random, data: bytes) -> bytes:
    """Byte-level breakage: truncation, junk, other encodings, deep nesting, alias bombs."""
    op = rng.choice(("truncate", "junk", "utf16", "utf32", "latin1", "nul", "nest", "alias",
                     "bom", "crlf", "tab", "doc-markers"))
    cut = rng.randint(0, max(0, len(data) - 1))
    if op == "truncate":
        return data[:cut]
    if op == "junk":
        return data[:cut] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + \
            data[cut:]
    if op == "utf16":
        return data.decode("utf-8", "replace").encode("utf-16")
    if op == "utf32":
        return data.decode("utf-8", "replace").encode("utf-32")
    if op == "latin1":
        return data[:cut] + b"\xe9" + data[cut:]
    if op == "nul":
        return data[:cut] + b"\x00" + data[cut:]
    if op == "nest":
        depth = rng.choice((100, 1000, 5000, 50000))
        return data + b"\n---\n" + b"[" * depth + b"]" * depth + b"\n"
    if op == "alias":
        bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
            for i in range(8))
        return data + b"\n---\n" + bomb.encode()
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "tab":
        return data.replace(b"  ", b"\t", 1)
    return data[:cut] + b"\n---\n...\n" + data[cut:]


# --- seeds -------------------------------------------------------------------------------------

def _load_all(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _pod_spec(gpus: Any = 1, claim: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "cuda",
                                 "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    spec: dict[str, Any] = {"containers": [container],
                            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
    if claim:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    return spec


@functools.lru_cache(maxsize=1)
def manifest_seeds() -> tuple[Any, ...]:
    """Workloads of several kinds, and the examples' manifests."""
    template = {"metadata": {"labels": {"app": "w"}}, "spec": _pod_spec(2)}
    seeds: list[Any] = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
         "spec": _pod_spec()},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
                  "template": template}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"},
         "spec": {"parallelism": 4, "template": template}},
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
         "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": template}}}},
        {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
             "spec": _pod_spec(1, claim=True)},
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": "t"},
             "spec": {"spec": {"devices": {"requests": [
                 {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                             "count": 1}}]}}}}]},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}},
    ]
    for path in sorted((REPO / "examples" / "apps").rglob("*.yaml"))[:12]:
        seeds += _load_all(path)
    return tuple(seeds)


@functools.lru_cache(maxsize=1)
def inventory_seeds() -> tuple[Any, ...]:
    fixtures = REPO / "tests" / "plan" / "fixtures"
    return tuple(doc for name in ("inventory-a100-h100.yaml", "inventory-mig.yaml",
                                  "inventory-partitionable.yaml", "inventory-consumable.yaml",
                                  "nodes-gfd.yaml")
                 for doc in _load_all(fixtures / name))


def fleet_objects() -> list[dict[str, Any]]:
    """A small cluster: two pools of GPU nodes, workloads on the device plugin and on claims."""
    from tests.verify import fleet as f

    converted = f.pod_spec(template_name="gpu")
    return [f.node("a-1", 8, pool="a"), f.node("a-2", 8, pool="a"), f.node("b-1", 8, pool="b"),
            f.node("d-1", 8, dra=True, pool="d"), f.gpu_slice("d-1", 8), f.device_class(),
            f.template("ml", "gpu"),
            f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=3),
            f.deployment("ml", "batch", f.pod_spec(gpus=4), replicas=1, kind="Job"),
            f.deployment("ml", "dra", converted, replicas=1),
            *f.plugin_daemonset(["a-1", "a-2", "b-1"])]


def _audit_output(*options: str) -> str:
    """What `gpudra audit TREE OPTIONS` writes to `{out}`, for a small tree (made once)."""
    import tempfile

    from tests.support.run import invoke

    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "t"
        tree.mkdir()
        (tree / "w.yaml").write_bytes(_dump_yaml(list(manifest_seeds()[:6])))
        invoke("audit", str(tree), *(o.replace("{out}", f"{tmp}/out") for o in options))
        return Path(f"{tmp}/out").read_text()


@functools.lru_cache(maxsize=1)
def report_seed() -> str:
    """`gpudra audit -o json` of a small tree."""
    return _audit_output("-o", "json={out}")


@functools.lru_cache(maxsize=1)
def baseline_seed() -> str:
    """`gpudra audit --write-baseline` of the same tree."""
    return _audit_output("--write-baseline", "{out}")


CONFIG_SEED: dict[str, Any] = {
    "rules": {"GPU303": "disable", "GPU101": {"severity": "error"}, "GPU105": {"enabled": False}},
    "exclude": ["charts/vendor/*", "*.generated.yaml"],
    "workloads": [{"apiVersion": "example.com/v1", "kind": "Trainer",
                   "podSpecs": ["$.spec.template.spec", "$.spec.workers[*].template.spec"],
                   "containers": ["sidecar"]}],
    "waivers": [{"rules": ["GPU101"], "kind": "Deployment", "name": "llm-*",
                 "reason": "until the Q3 upgrade", "owner": "ml@example.com",
                 "expires": "2027-03-31"}],
    "vouch": [{"kind": "Trainer", "apiVersion": "example.com/v1", "owner": "ml@example.com",
               "reason": "the operator copies the template", "expires": "2027-03-31"}],
    "strict": False,
}


# --- one generator per kind --------------------------------------------------------------------

def _objects(rng: random.Random, seeds: tuple[Any, ...], most: int = 3) -> list[Any]:
    return [mutate(rng, rng.choice(seeds)) for _ in range(rng.randint(1, most))]


def _tree(rng: random.Random) -> dict[str, bytes]:
    return {f"t/m{i}.{rng.choice(('yaml', 'yaml', 'json'))}":
            serialize(rng, _objects(rng, manifest_seeds()))
            for i in range(rng.randint(1, 2))}


def make_audit(rng: random.Random) -> Case:
    output = rng.choice(("table", "json", "sarif", "markdown", "github", "junit", "html"))
    return Case("audit", ("audit", f"{DIR}/t", "-o", output), _tree(rng))


def make_convert(rng: random.Random) -> Case:
    extra = rng.choice(((), ("--diff",), ("--claims-file", "gpu-claims.yaml"), ("-o", "json")))
    return Case("convert", ("convert", f"{DIR}/t", *extra), _tree(rng))


def make_inventory(rng: random.Random) -> Case:
    docs = _objects(rng, inventory_seeds(), most=4)
    name = rng.choice(("inv.yaml", "inv.json"))
    data = serialize(rng, docs, json_only=name.endswith(".json"))
    workloads = serialize(random.Random(rng.random()), list(manifest_seeds()[:3]))
    return Case("inventory", ("plan", f"{DIR}/t", "--inventory", f"{DIR}/{name}", "-o", "json"),
                {name: data, "t/w.yaml": workloads})


def make_cutover(rng: random.Random) -> Case:
    objects = fleet_objects()
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(objects))
        objects[i] = mutate(rng, objects[i], rounds=1)
    return Case("cutover", ("cutover", "--from", f"{DIR}/fleet.yaml", "-o",
                            rng.choice(("json", "table", "markdown"))),
                {"fleet.yaml": serialize(rng, objects)})


def _protected_for_the_fake(path: tuple) -> bool:
    """What the fake API server needs intact to serve an object at all."""
    return path[:1] in (("apiVersion",), ("kind",)) or path[:2] in (
        ("metadata", "name"), ("metadata", "namespace")) or path == ("metadata",)


def make_cluster(rng: random.Random) -> Case:
    objects = fleet_objects()
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(objects))
        objects[i] = mutate(rng, objects[i], protect=_protected_for_the_fake, rounds=1)
    command = rng.choice((("verify",), ("plan", "-o", "json"), ("cutover", "-o", "json"),
                          ("audit", "-o", "json")))
    state = {"version": "1.36.1", "token": "t0ken", "auto_namespaces": True,
             "objects": objects}
    return Case("cluster", (*command, "--kubeconfig", KUBECONFIG), cluster=state)


def make_merge(rng: random.Random) -> Case:
    report = json.loads(report_seed())
    text = serialize(rng, [mutate(rng, report)], json_only=True)
    if rng.random() < 0.15:
        text = rng.choice((b"[" * 100000, b'{"schema_version": 1, "summary": {"files_scanned": '
                           + b"9" * 4000 + b"}}", b'"a\\ud800b"', b""))
    return Case("merge", ("report", "merge", f"{DIR}/a.json", f"{DIR}/b.json", "-o",
                          rng.choice(("json", "markdown", "html")) + f"={DIR}/out"),
                {"a.json": text, "b.json": report_seed().encode(), "out": b"keep me"},
                kept_if_refused=("out",))


def make_baseline(rng: random.Random) -> Case:
    text = serialize(rng, [mutate(rng, json.loads(baseline_seed()))], json_only=True)
    if rng.random() < 0.1:
        text = b"[" * 50000 + b"]" * 50000
    tree = {"t/w.yaml": _dump_yaml(list(manifest_seeds()[:6]))}
    return Case("baseline", ("audit", f"{DIR}/t", "--baseline", f"{DIR}/b.json"),
                {**tree, "b.json": text})


def make_config(rng: random.Random) -> Case:
    text = serialize(rng, [mutate(rng, CONFIG_SEED)])
    tree = {"t/w.yaml": _dump_yaml(list(manifest_seeds()[:3]))}
    if rng.random() < 0.5:  # found by the search, as every command finds it
        return Case("config", ("audit", f"{DIR}/t"), {**tree, "t/.gpudra.yaml": text})
    return Case("config", ("convert", f"{DIR}/t", "--config", f"{DIR}/c.yaml", "--diff"),
                {**tree, "c.yaml": text})


def make_journal(rng: random.Random) -> Case:
    """An unfinished run's journal, as a committed or planted one would be: entries whose
    hashes match what the files hold now (so a rerun would write them), one outside the tree."""
    import hashlib

    pod = _dump_yaml([manifest_seeds()[0]])
    outside = b"not gpudra's\n"
    entry = {"path": f"{DIR}/t/pod.yaml", "old": hashlib.sha256(pod).hexdigest(),
             "new": base64.b64encode(pod.replace(b"name: p", b"name: j")).decode()}
    from gpudra.convert import journal

    # Both layouts: a version 2 journal also names its host and the roots it was planned for.
    document = {"version": getattr(journal, "_VERSION", 1), "host": os.uname().nodename,
                "roots": [f"{DIR}/t"], "files": [
        entry, {"path": f"{DIR}/outside.txt", "old": hashlib.sha256(outside).hexdigest(),
                "new": base64.b64encode(b"written through a journal").decode()}]}
    data = serialize(rng, [mutate(rng, document)], json_only=True)
    return Case("journal", ("convert", f"{DIR}/t", rng.choice(("-q", "-q", "--check"))),
                {"t/pod.yaml": pod, "outside.txt": outside}, journal=data,
                untouched=("outside.txt",))


def guard_objects() -> list[dict[str, Any]]:
    """What verify's gate reads of `gpudra guard`: labelled namespaces, the policy and its
    binding (gpudra.guard.reading)."""
    from gpudra.guard.policy import Action, Strategy, binding, policy

    labelled = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {
        "gpudra.io/migrated": "true", "kubernetes.io/metadata.name": name}}}
        for name in ("ml", "serve")]
    selected = binding(Action.DENY)
    selected["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] = [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml"]}]
    return [*labelled, policy(Strategy.CLAIMS), selected]


def make_guard(rng: random.Random) -> Case:
    """The guard's objects mutated, served with a small fleet to the whole-cluster verify that
    judges the decommission gate."""
    guard = guard_objects()
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(guard))
        guard[i] = mutate(rng, guard[i], protect=_protected_for_the_fake, rounds=1)
    state = {"version": "1.36.1", "token": "t0ken", "auto_namespaces": True,
             "objects": [*fleet_objects(), *guard]}
    return Case("guard", ("verify", "--decommission", "-o", rng.choice(("json", "table")),
                          "--kubeconfig", KUBECONFIG), cluster=state)


AROUND_CRDS = ["clusterqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
               "machinedeployments.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
               "machinepools.cluster.x-k8s.io"]


def around_objects() -> list[dict[str, Any]]:
    """What cutover's notes per wave read around the pods that the cluster kind does not
    serve: Cluster API node groups (a node names its MachineSet, the MachineSet its
    MachineDeployment, whose annotations size the group) and Kueue's ResourceFlavors with a
    ClusterQueue that gives one of them GPU quota."""
    from tests.verify import fleet as f

    node = f.node("a-3", 8, pool="a")
    node["metadata"]["annotations"] = {"cluster.x-k8s.io/owner-kind": "MachineSet",
                                       "cluster.x-k8s.io/owner-name": "gpu-a-7f9c",
                                       "cluster.x-k8s.io/cluster-namespace": "capi"}
    sizes = {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
             "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4",
             "capacity.cluster-autoscaler.kubernetes.io/dra-driver": "gpu.nvidia.com",
             "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8"}
    groups = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind,
               "metadata": {"name": name, "namespace": "capi", "annotations": dict(sizes),
                            "labels": labels}}
              for kind, name, labels in (
                  ("MachineSet", "gpu-a-7f9c", {"cluster.x-k8s.io/deployment-name": "gpu-a"}),
                  ("MachineDeployment", "gpu-a", {}), ("MachinePool", "gpu-b", {}))]
    kueue = [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
              "metadata": {"name": "a-gpus"}, "spec": {"nodeLabels": {f.POOL_LABEL: "a"}}},
             {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
              "metadata": {"name": "team-a"},
              "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                  {"name": "a-gpus", "resources": [{"name": "nvidia.com/gpu",
                                                    "nominalQuota": "8"}]}]}]}}]
    return [node, *groups, *kueue]


def make_around(rng: random.Random) -> Case:
    """The objects around the pods mutated, served with the small fleet to the live cutover
    of both strategies."""
    around = around_objects()
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(around))
        around[i] = mutate(rng, around[i], protect=_protected_for_the_fake, rounds=1)
    state = {"version": "1.37.2", "token": "t0ken", "auto_namespaces": True,
             "crds": AROUND_CRDS, "objects": [*fleet_objects(), *around]}
    return Case("around", ("cutover", "--strategy", rng.choice(("bridge", "rewrite")), "-o",
                           rng.choice(("json", "markdown")), "--kubeconfig", KUBECONFIG),
                cluster=state)


KINDS: dict[str, Callable[[random.Random], Case]] = {
    "audit": make_audit, "convert": make_convert, "inventory": make_inventory,
    "cutover": make_cutover, "cluster": make_cluster, "merge": make_merge,
    "baseline": make_baseline, "config": make_config, "journal": make_journal,
    "guard": make_guard, "around": make_around,
}


# --- running one case --------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    stderr: str
    problem: str | None  # None: gpudra refused or accepted the input as it should


class Hang(BaseException):
    """The case ran past its time limit. A BaseException: gpudra turns any Exception into an
    internal error, and this one must reach the harness."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in this (main) thread after `seconds`."""
    def expired(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def journal_file(tree: Path, environ: dict[str, str]) -> Path:
    """Where convert looks for the journal of a run over `tree`, asked of convert itself: beside
    the tree (`journal_path(base)`), or in the user's cache keyed by the real paths given
    (`journal_path(roots, environ)`), whichever this gpudra does."""
    import inspect

    from gpudra.convert import journal, run

    if "environ" in inspect.signature(journal.journal_path).parameters:
        roots = run._write_roots((str(tree),))  # noqa: SLF001 - the one place that knows
        return Path(journal.journal_path(roots, environ))
    return Path(journal.journal_path(run._common_base((str(tree),))))  # noqa: SLF001


def _environ(directory: Path) -> dict[str, str]:
    """A run's environment: no kubeconfig, a home and a cache of its own."""
    return {"NO_COLOR": "1", "KUBECONFIG": "", "HOME": str(directory / "home"),
            "XDG_CACHE_HOME": str(directory / "cache"),
            "GPUDRA_CACHE_DIR": str(directory / "cache" / "gpudra"), "GPUDRA_DEBUG": ""}


def write_case(case: Case, directory: Path) -> None:
    for name, data in case.files.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.replace(DIR.encode(), str(directory).encode()))
    (directory / "t").mkdir(exist_ok=True)
    if case.journal is not None:
        target = journal_file(directory / "t", _environ(directory))
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.write_bytes(case.journal.replace(DIR.encode(), str(directory).encode()))


def judge(exit_code: int | None, stderr: str, exception: BaseException | None) -> str | None:
    """What is wrong with a run, or None."""
    if exception is not None and not isinstance(exception, SystemExit):
        return f"raised {type(exception).__name__}: {' '.join(str(exception).split())[:300]}"
    for line in stderr.splitlines():
        if "internal error" in line or line.startswith("Traceback"):
            return line.strip()[:400]
    if exit_code not in ACCEPTED_EXITS:
        return f"exit {exit_code}"
    return None


def run_case(case: Case, directory: Path, seconds: float = 30.0) -> Outcome:
    """Run `case` in this process, in `directory` (empty), within `seconds`."""
    from typer.testing import CliRunner

    from gpudra.cli import app

    directory = Path(os.path.realpath(directory))  # journals name real paths
    write_case(case, directory)
    env = _environ(directory)
    argv = [a.replace(DIR, str(directory)) for a in case.argv]
    with _cluster(case) as kubeconfig:
        argv = [a.replace(KUBECONFIG, kubeconfig) for a in argv]
        try:
            with time_limit(seconds):
                result = CliRunner().invoke(app, argv, env=env)
        except Hang as exc:
            return Outcome(None, "", f"hang: {exc}")
    stderr = result.stderr
    problem = judge(result.exit_code, stderr, result.exception)
    kept = case.untouched + (case.kept_if_refused if result.exit_code in (2, 3) else ())
    changed = [name for name in kept if not (directory / name).is_file()
               or (directory / name).read_bytes() != case.files[name]]
    if problem is None and changed:
        problem = f"changed {', '.join(changed)} (exit {result.exit_code})"
    return Outcome(result.exit_code, stderr, problem)


@contextmanager
def _cluster(case: Case) -> Iterator[str]:
    if case.cluster is None:
        yield ""
        return
    from tests.fakeapi import FakeCluster

    try:
        cluster = FakeCluster(case.cluster, tls=False)
    except Exception as exc:  # noqa: BLE001 - the fake refuses what no API server stores
        raise Unservable(str(exc)) from None
    with cluster:
        yield str(cluster.kubeconfig)


class Unservable(Exception):
    """The fake API server refuses the state (an object no API server would store)."""


def describe(case: Case, limit: int = 1500) -> str:
    """A reproducer in Markdown: the command and every file (text, or base64 when binary)."""
    out = io.StringIO()
    out.write(f"`gpudra {' '.join(case.argv)}`\n\n")
    files = dict(case.files)
    if case.journal is not None:
        files["<journal of {dir}/t>"] = case.journal
    if case.cluster is not None:
        files["<fake API state>"] = json.dumps(case.cluster, default=str).encode()
    for name, data in files.items():
        try:
            text = data.decode("utf-8")
            shown, fence = text[:limit], "text"
        except UnicodeDecodeError:
            shown, fence = base64.b64encode(data[:limit]).decode(), "base64"
        more = f" (first {limit} of {len(data)})" if len(data) > limit else ""
        out.write(f"{name}{more}:\n```{fence}\n{shown}\n```\n")
    return out.getvalue()


if __name__ == "__main__":  # one case by kind and seed: python -m tests.hostile.fuzz_kinds audit 7
    import tempfile

    kind, seed = sys.argv[1], int(sys.argv[2])
    made = KINDS[kind](random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_case(made, Path(tmp))
    print(describe(made))
    print(outcome)
    sys.exit(0 if outcome.problem is None else 1)
