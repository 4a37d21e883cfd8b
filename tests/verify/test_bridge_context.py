"""What a switch changes around the pods (issue 33, item 2), judged per cluster and said per
wave: Kueue, node autoscalers that scale pools from zero, quotas on requests.nvidia.com/gpu and
the GPU Operator's ClusterPolicy. Each note is checked present where its cluster object is and
absent where it is not, under the strategy it belongs to; then through `cutover --from` and
against the fake API server, which serves ClusterQueues, NodePools and ClusterPolicies."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cutover.bridge_context import BRIDGE, REWRITE, read_context, wave_notes
from gpudra.cutover.pools import build_fleet
from gpudra.cutover.run import around_waves, top_owners
from gpudra.cutover.waves import order_waves
from gpudra.dra.versions import TargetVersion
from gpudra.k8s.workloads import WorkloadTable
from tests.fakeapi import FakeCluster
from tests.verify import fleet as f

POOL = f.POOL_LABEL
TABLE = WorkloadTable()


def base_fleet() -> list[dict[str, Any]]:
    """Two pools of one 8-GPU node each, a Deployment of whole GPUs pinned to each (so each
    wave moves one): `web` in `ml` on pool a, `batch` in `other` on pool b."""
    return [f.node("a-1", 8, pool="a", labels={"karpenter.sh/nodepool": "a"}),
            f.node("b-1", 8, pool="b"),
            f.deployment("ml", "web", f.pod_spec(gpus=2, node_selector={POOL: "a"}),
                         replicas=2),
            f.deployment("other", "batch", f.pod_spec(gpus=2, node_selector={POOL: "b"}))]


def controller(name: str, namespace: str, image: str, *args: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": image,
                                                           "args": list(args)}]}}}}


def kueue() -> list[dict[str, Any]]:
    return [controller("kueue-controller-manager", "kueue-system",
                       "registry.k8s.io/kueue/kueue:v0.19.2"),
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
             "metadata": {"name": "gpu-queue"},
             "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
             "metadata": {"name": "cpu-queue"},
             "spec": {"resourceGroups": [{"coveredResources": ["cpu"]}]}}]


def autoscaler(*args: str) -> list[dict[str, Any]]:
    return [controller("cluster-autoscaler", "kube-system",
                       "registry.k8s.io/autoscaling/cluster-autoscaler:v1.37.0", *args)]


def karpenter() -> list[dict[str, Any]]:
    return [controller("karpenter", "karpenter",
                       "public.ecr.aws/karpenter/controller:1.14.1"),
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "a"},
             "spec": {"template": {"spec": {"requirements": [
                 {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt",
                  "values": ["0"]}]}}}}]


def quota(namespace: str, key: str = "requests.nvidia.com/gpu") -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpus", "namespace": namespace},
             "spec": {"hard": {key: "16"}}}]


def cluster_policy(device_plugin: bool | None = True) -> list[dict[str, Any]]:
    spec = {} if device_plugin is None else {"devicePlugin": {"enabled": device_plugin}}
    return [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
             "metadata": {"name": "cluster-policy"}, "spec": spec}]


@dataclass(frozen=True)
class Case:
    name: str
    extra: tuple[dict[str, Any], ...]
    strategy: str
    wanted: tuple[str, ...]    # each in some wave's notes
    unwanted: tuple[str, ...]  # in none


CASES = (
    Case("kueue-bridge", tuple(kueue()), BRIDGE,
         ("Kueue v0.19.2: the pods the bridge serves", "ClusterQueues covering nvidia.com/gpu: "
          "gpu-queue)", "KueueDRAIntegrationExtendedResource"), ("cpu-queue",)),
    Case("kueue-claims-templates-only", tuple(kueue()), REWRITE, (), ("Kueue",)),
    Case("no-kueue", (), BRIDGE, (), ("Kueue",)),
    Case("autoscaler-from-zero-bridge", tuple(autoscaler("--nodes=0:4:eks-a-0123",
                                                         "--nodes=1:4:eks-b-0456")), BRIDGE,
         ("node group eks-a-0123 scales from zero", "kubernetes/autoscaler #8742"),
         ("eks-b-0456",)),
    Case("autoscaler-from-zero-claims", tuple(autoscaler("--nodes", "0:4:eks-a-0123")), REWRITE,
         ("node group eks-a-0123 scales from zero", "preflight CLUSTER012"), ("#8742",)),
    Case("autoscaler-not-from-zero", tuple(autoscaler("--nodes=1:4:eks-a-0123")), BRIDGE, (),
         ("cluster-autoscaler",)),
    # the pool `a` is a word of the group's name, not any letter in it
    Case("autoscaler-group-of-another-pool", tuple(autoscaler("--nodes=0:4:eks-gpu-a100-9z")),
         BRIDGE, (), ("cluster-autoscaler",)),
    Case("autoscaler-discovers", tuple(autoscaler(
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled")), BRIDGE,
         ("auto-discovered, so their minimum sizes are not visible",), ()),
    Case("karpenter-bridge", tuple(karpenter()), BRIDGE,
         ("Karpenter (karpenter/karpenter): NodePool a launches nodes from none",
          "kubernetes-sigs/karpenter #3231"), ("NodePool b",)),
    Case("karpenter-claims", tuple(karpenter()), REWRITE,
         ("NodePool a launches no node for pods with claims", "--ignore-dra-requests"),
         ("#3231",)),
    Case("quota-bridge", tuple(quota("ml") + quota("idle")), BRIDGE,
         ("ResourceQuota ml/gpus: requests.nvidia.com/gpu keeps counting",
          "resource_claims.go"), ("idle/gpus",)),
    Case("quota-claims", tuple(quota("ml")), REWRITE, (), ("ResourceQuota",)),
    Case("quota-on-mig-only", tuple(quota("ml", "requests.nvidia.com/mig-1g.10gb")), BRIDGE, (),
         ("ResourceQuota",)),
    Case("operator-bridge", tuple(cluster_policy()), BRIDGE,
         ("ClusterPolicy cluster-policy runs the device plugin", "gpucluster_controller.go",
          "no extendedResourceName (NVIDIA/gpu-operator PR #2859"), ()),
    Case("operator-claims", tuple(cluster_policy(None)), REWRITE,
         ("ClusterPolicy cluster-policy runs the device plugin", "validations.yaml"),
         ("#2859",)),
    Case("operator-without-device-plugin", tuple(cluster_policy(False)), BRIDGE, (),
         ("GPU Operator",)),
)


def notes_of(objects: list[dict[str, Any]], strategy: str) -> dict[int, tuple[str, ...]]:
    """The notes cutover says per wave, from objects read as an export is."""
    objects = top_owners(objects, TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    assert plan.complete, plan.blocked
    return around_waves(objects, fleet, plan, strategy)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_note_is_said_where_its_fact_applies(case: Case) -> None:
    notes = notes_of(base_fleet() + list(case.extra), case.strategy)
    said = [note for lines in notes.values() for note in lines]
    for text in case.wanted:
        assert any(text in note for note in said), (text, said)
    for text in case.unwanted:
        assert not any(text in note for note in said), (text, said)
    if not case.wanted:
        assert said == []


def test_notes_are_said_in_the_wave_of_the_pool_they_concern() -> None:
    """The autoscaler's pool `a` is named in a's wave only; the operator's set-up once, in the
    first wave that switches nodes."""
    extra = autoscaler("--nodes=0:4:eks-a-0123") + cluster_policy()
    objects = top_owners(base_fleet() + extra, TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    notes = around_waves(objects, fleet, plan, BRIDGE)
    by_pool = {w.units[0]: notes.get(w.number, ()) for w in plan.waves}
    assert [n for n in by_pool["a"] if "eks-a-0123" in n]
    assert not [n for n in by_pool["b"] if "eks-a-0123" in n]
    first = plan.waves[0].number
    assert [number for number, lines in notes.items()
            for line in lines if "ClusterPolicy" in line] == [first]


def test_kueue_names_the_workloads_of_a_wave_that_share_a_claim() -> None:
    """Under claims, a moving workload whose converted pods name a ResourceClaim directly is
    one Kueue does not admit; one whose pods name templates is not named."""
    objects = top_owners(base_fleet() + kueue() + [
        f.deployment("ml", "solo", f.pod_spec(gpus=1))], TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    context = read_context(objects, fleet)
    wave = next(w for w in plan.waves if any(m.name == "web" for m in w.moved))
    assert wave_notes(context, wave, fleet, REWRITE) == ()
    web = next(m for m in wave.moved if m.name == "web")
    pinned = json.loads(json.dumps(web.converted[0]))
    pod = pinned["spec"]["template"]["spec"]
    pod["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-gpus"}]
    shared = replace(wave, moved=tuple(replace(m, converted=(pinned, *m.converted[1:]))
                                       if m.name == "web" else m for m in wave.moved))
    [note] = wave_notes(context, shared, fleet, REWRITE)
    assert "admits no workload whose pods name a ResourceClaim directly" in note
    assert note.endswith(": ml/Deployment/web")


def test_an_unknown_strategy_is_refused() -> None:
    objects = top_owners(base_fleet(), TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    with pytest.raises(ValueError):
        wave_notes(read_context(objects, fleet), plan.waves[0], fleet, "claims")


def test_cutover_from_an_export_shows_the_notes_in_each_format(tmp_path: Path) -> None:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(base_fleet() + karpenter() + cluster_policy()),
                      encoding="utf-8")
    outputs = {}
    for fmt in ("json", "markdown", "table"):
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                              "-o", fmt], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outputs[fmt] = run.stdout
    report = json.loads(outputs["json"])
    said = {w["wave"]: w["notes"] for w in report["waves"]}
    assert any("ClusterPolicy cluster-policy" in n for n in said[report["waves"][0]["wave"]])
    karpenter_waves = [number for number, notes in said.items()
                       if any("NodePool a launches no node" in n for n in notes)]
    assert karpenter_waves == [next(w["wave"] for w in report["waves"] if w["pools"] == ["a"])]
    assert "Around the pods:" in outputs["markdown"]
    assert "- GPU Operator: ClusterPolicy cluster-policy" in outputs["markdown"]
    # From files only documents that mention a GPU are parsed (the pre-scan): Karpenter shows
    # through its GPU NodePool, not its controller's Deployment (live, both are read).
    assert f"wave {karpenter_waves[0]}: Karpenter (the NodePool API)" in outputs["table"]


def test_the_live_reader_reads_what_the_notes_rest_on(tmp_path: Path) -> None:
    """ClusterQueues, NodePools and ClusterPolicies are listed by cutover (the fake API server
    serves their CRDs), each through its typed reader."""
    live = [*base_fleet(), *kueue(), *karpenter(), *cluster_policy(), *quota("ml")]
    live.append(f.replicaset(live[2]))
    crds = ["clusterqueues.kueue.x-k8s.io", "nodepools.karpenter.sh",
            "clusterpolicies.nvidia.com"]
    with FakeCluster(f.state(*live, version="1.37.2", crds=crds), tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig), "-o", "json"], capture_output=True,
                             text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    notes = [n for w in json.loads(run.stdout)["waves"] for n in w["notes"]]
    assert any("ClusterPolicy cluster-policy" in n for n in notes), notes
    assert any("NodePool a" in n for n in notes), notes


def test_a_clusterqueue_that_does_not_decode_is_left_out_with_an_input_error(
        tmp_path: Path) -> None:
    broken = kueue()
    broken[1]["spec"]["resourceGroups"][0]["coveredResources"] = "nvidia.com/gpu"
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(base_fleet() + broken), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                          "-o", "json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3
    assert "ClusterQueue gpu-queue: spec.resourceGroups[0].coveredResources: expected " \
           "`array`, got `str`; left out" in run.stderr


def test_cutover_under_the_bridge_says_the_bridges_notes_and_no_recommendation(
        tmp_path: Path) -> None:
    """`cutover --strategy bridge` judges the notes for the bridge (the quota keeps counting,
    Karpenter does not model it, the Operator's classes have no mapping), and does not
    recommend the strategy it already runs."""
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(base_fleet() + karpenter() + cluster_policy()
                                         + quota("ml")), encoding="utf-8")
    runs = {}
    for strategy in ("rewrite", "bridge"):
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                              "--strategy", strategy, "-o", "json"], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        runs[strategy] = json.loads(run.stdout)
    bridged = [n for w in runs["bridge"]["waves"] for n in w["notes"]]
    assert any("ResourceQuota ml/gpus: requests.nvidia.com/gpu keeps counting" in n
               for n in bridged), bridged
    assert any("does not model the bridge (kubernetes-sigs/karpenter #3231" in n
               for n in bridged), bridged
    assert any("PR #2859" in n for n in bridged), bridged
    assert runs["bridge"]["recommendation"] is None
    assert runs["rewrite"]["recommendation"].startswith(
        "recommended: the bridge strategy (gpudra cutover --strategy bridge)")
    rewritten = [n for w in runs["rewrite"]["waves"] for n in w["notes"]]
    assert not any("ResourceQuota" in n or "#3231" in n or "#2859" in n for n in rewritten)


# --- Cluster API node groups and Kueue's ResourceFlavors (which pools scale from zero, which
# ClusterQueues stand for which nodes) ----------------------------------------------------------

def capi_node(name: str, pool: str, owner_kind: str, owner: str) -> dict[str, Any]:
    """A node as Cluster API's Machine controller annotates it (its Machine's controller)."""
    node = f.node(name, 8, pool=pool)
    node["metadata"]["annotations"] = {"cluster.x-k8s.io/owner-kind": owner_kind,
                                       "cluster.x-k8s.io/owner-name": owner,
                                       "cluster.x-k8s.io/cluster-namespace": "capi",
                                       "cluster.x-k8s.io/machine": f"{owner}-m1"}
    return node


def machine_group(kind: str, name: str, min_size: str | None = None, max_size: str = "4",
                  labels: dict[str, str] | None = None, driver: str | None = None
                  ) -> dict[str, Any]:
    notes = {} if min_size is None else {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": min_size,
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": max_size,
        "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8"}
    if driver is not None:
        notes["capacity.cluster-autoscaler.kubernetes.io/dra-driver"] = driver
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind,
            "metadata": {"name": name, "namespace": "capi", "annotations": notes,
                         "labels": labels or {}}}


def capi_fleet(*groups: dict[str, Any], owner_kind: str = "MachineSet",
               owner: str = "gpu-a-7f9c") -> list[dict[str, Any]]:
    """base_fleet with pool a's node made by Cluster API (pool b's is not)."""
    fleet = base_fleet()
    fleet[0] = capi_node("a-1", "a", owner_kind, owner)
    return fleet + list(groups)


def machineset(min_size: str | None = None, driver: str | None = None) -> dict[str, Any]:
    """Pool a's MachineSet, of the MachineDeployment gpu-a."""
    return machine_group("MachineSet", "gpu-a-7f9c", min_size,
                         labels={"cluster.x-k8s.io/deployment-name": "gpu-a"}, driver=driver)


FROM_ZERO = "Cluster API node group MachineDeployment capi/gpu-a scales from zero"
CAPI_CASES = {
    # the MachineDeployment sizes the group; its MachineSet's annotations do not count
    "deployment-at-zero": (capi_fleet(machineset(), machine_group("MachineDeployment", "gpu-a",
                                                                  "0")),
                           (FROM_ZERO, "gpu-a does not", "kubernetes/autoscaler #8742"),
                           ("MachineSet capi/",)),
    "deployment-at-zero-with-dra-capacity": (
        capi_fleet(machineset(), machine_group("MachineDeployment", "gpu-a", "0",
                                               driver="gpu.nvidia.com")),
        (FROM_ZERO,), ("does not",)),
    "deployment-keeps-a-node": (capi_fleet(machineset("0"), machine_group(
        "MachineDeployment", "gpu-a", "1")), (), ("cluster-autoscaler",)),
    "deployment-without-size-annotations": (capi_fleet(machineset(), machine_group(
        "MachineDeployment", "gpu-a")), (), ("cluster-autoscaler",)),
    "sizes-not-integers": (capi_fleet(machineset(), machine_group(
        "MachineDeployment", "gpu-a", "zero")), (), ("cluster-autoscaler",)),
    "negative-minimum": (capi_fleet(machineset(), machine_group(
        "MachineDeployment", "gpu-a", "-1")), (), ("cluster-autoscaler",)),
    # a MachineSet whose deployment was not read is its own group, as its annotations say
    "machineset-alone": (capi_fleet(machineset("0")),
                         ("Cluster API node group MachineSet capi/gpu-a-7f9c scales from zero",),
                         ("MachineDeployment",)),
    "machinepool": (capi_fleet(machine_group("MachinePool", "gpu-a-pool", "0"),
                               owner_kind="MachinePool", owner="gpu-a-pool"),
                    ("Cluster API node group MachinePool capi/gpu-a-pool scales from zero",), ()),
    # a group of another namespace with the same name is not the node's
    "group-of-another-namespace": (capi_fleet(
        {**machine_group("MachineSet", "gpu-a-7f9c", "0"),
         "metadata": {"name": "gpu-a-7f9c", "namespace": "other", "annotations": {
             "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
             "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4"}}}),
        (), ("cluster-autoscaler",)),
}


@pytest.mark.parametrize("name", CAPI_CASES)
@pytest.mark.parametrize("strategy", [BRIDGE, REWRITE])
def test_a_cluster_api_group_at_zero_is_named_in_its_pools_wave(name: str, strategy: str
                                                                 ) -> None:
    """A Cluster API node group scales from zero where its minimum-size annotation says 0:
    cluster-autoscaler need not run in this cluster (it often runs in the management one)."""
    objects, wanted, unwanted = CAPI_CASES[name]
    objects = top_owners(objects, TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    notes = around_waves(objects, fleet, plan, strategy)
    by_pool = {w.units[0]: notes.get(w.number, ()) for w in plan.waves}
    said_a = [n for n in by_pool["a"] if "Cluster API" in n]
    assert not [n for n in by_pool["b"] if "Cluster API" in n]
    if strategy == REWRITE:
        wanted = tuple(w for w in wanted if "#8742" not in w)
        assert all("preflight CLUSTER012" in n for n in said_a)
    for text in wanted:
        assert any(text in note for note in said_a), (text, said_a)
    for text in unwanted:
        assert not any(text in note for note in by_pool["a"]), (text, by_pool["a"])
    assert bool(said_a) == bool(wanted)


# (min, max) of pool a's MachineDeployment -> whether it is a node group cluster-autoscaler
# sizes (a minimum above the maximum is one it rejects: its minimum says nothing)
SIZES = {("1", "4"): True, ("1", "1"): True, ("2", "1"): False, ("5", "4"): False}


@pytest.mark.parametrize(("low", "high"), SIZES)
def test_a_visible_cluster_api_minimum_replaces_auto_discovery_uncertainty(low: str, high: str
                                                                           ) -> None:
    """With the clusterapi provider's auto-discovery the minimum sizes are on the groups: the
    pool whose group keeps a node gets no "not visible" line; the other pool still does, and
    so does pool a when its group's sizes are not a group's (min above max)."""
    objects = capi_fleet(machineset(), machine_group("MachineDeployment", "gpu-a", low,
                                                     max_size=high))
    objects += autoscaler("--cloud-provider=clusterapi",
                          "--node-group-auto-discovery=clusterapi:namespace=capi")
    objects = top_owners(objects, TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    notes = around_waves(objects, fleet, plan, BRIDGE)
    by_pool = {w.units[0]: notes.get(w.number, ()) for w in plan.waves}
    unseen = [n for n in by_pool["a"] if "minimum sizes are not visible" in n]
    assert bool(unseen) != SIZES[low, high], by_pool["a"]
    if SIZES[low, high]:
        assert not [n for n in by_pool["a"] if "cluster-autoscaler" in n]
    assert [n for n in by_pool["b"] if "minimum sizes are not visible" in n]


def flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name}, "spec": {"nodeLabels": labels}}


def flavored_queue(name: str, *flavors: str, resource: str = "nvidia.com/gpu"
                   ) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu", resource], "flavors": [
                {"name": fl, "resources": [{"name": "cpu", "nominalQuota": "64"},
                                           {"name": resource, "nominalQuota": "8"}]}
                for fl in flavors]}]}}


KUEUE_FLAVOR_CASES = {
    # each queue's flavor names one pool's label: each wave names its own queue
    "one-queue-per-pool": ([flavor("a-gpus", {POOL: "a"}), flavor("b-gpus", {POOL: "b"}),
                            flavored_queue("team-a", "a-gpus"),
                            flavored_queue("team-b", "b-gpus")],
                           {"a": "on these nodes: team-a, through ResourceFlavor a-gpus)",
                            "b": "on these nodes: team-b, through ResourceFlavor b-gpus)"}),
    # a flavor without node labels stands for every node
    "a-flavor-for-every-node": ([flavor("any", {}), flavored_queue("shared", "any")],
                                {"a": "on these nodes: shared, through ResourceFlavor any)",
                                 "b": "on these nodes: shared, through ResourceFlavor any)"}),
    # a flavor of labels no node of the wave carries
    "no-flavor-of-these-nodes": ([flavor("h200", {POOL: "h200"}),
                                  flavored_queue("big", "h200")],
                                 {"a": "no ClusterQueue's nvidia.com/gpu ResourceFlavor names "
                                       "these nodes' labels",
                                  "b": "no ClusterQueue's nvidia.com/gpu ResourceFlavor"}),
    # the flavors were not read: every GPU queue is named, as before
    "flavors-not-read": ([flavored_queue("team-a", "a-gpus")],
                         {"a": "(ClusterQueues covering nvidia.com/gpu: team-a)",
                          "b": "(ClusterQueues covering nvidia.com/gpu: team-a)"}),
}


@pytest.mark.parametrize("name", KUEUE_FLAVOR_CASES)
def test_kueue_names_the_queues_whose_flavors_stand_for_the_waves_nodes(name: str) -> None:
    extra, wanted = KUEUE_FLAVOR_CASES[name]
    objects = top_owners(base_fleet() + kueue()[:1] + extra, TABLE)
    fleet = build_fleet(objects, TABLE, None, TargetVersion(37))
    plan = order_waves(fleet, TABLE)
    notes = around_waves(objects, fleet, plan, BRIDGE)
    for wave in plan.waves:
        [note] = [n for n in notes.get(wave.number, ()) if n.startswith("Kueue")]
        assert wanted[wave.units[0]] in note, (wave.units, note)
        others = {"a": "team-b", "b": "team-a"}[wave.units[0]]
        if name == "one-queue-per-pool":
            assert others not in note


def test_the_live_reader_reads_flavors_and_cluster_api_groups() -> None:
    """ResourceFlavors, MachineDeployments, MachineSets and MachinePools are listed by cutover
    (the fake API server serves their CRDs), each through its typed reader; a MachineSet of the
    wrong shape is left out with an input error naming its field."""
    live = [*capi_fleet(machineset(), machine_group("MachineDeployment", "gpu-a", "0"),
                        machine_group("MachinePool", "idle-pool", "1")),
            *kueue()[:1], flavor("a-gpus", {POOL: "a"}), flavored_queue("team-a", "a-gpus")]
    live.append(f.replicaset(live[2]))
    for obj in live[-3:-1]:  # the fake serves Kueue's v1beta1, where both kinds are the same
        obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    broken = machine_group("MachineSet", "broken", "0")
    broken["metadata"]["annotations"] = ["not", "a", "map"]
    crds = ["clusterqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
            "machinedeployments.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
            "machinepools.cluster.x-k8s.io"]
    with FakeCluster(f.state(*live, broken, version="1.37.2", crds=crds), tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig), "--strategy", "bridge", "-o", "json"],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    assert "MachineSet capi/broken: metadata.annotations: expected `object`, got `array`" \
        in run.stderr
    notes = [n for w in json.loads(run.stdout)["waves"] for n in w["notes"]]
    assert any(FROM_ZERO in n for n in notes), notes
    assert any("on these nodes: team-a, through ResourceFlavor a-gpus)" in n
               for n in notes), notes


# A ClusterRole from an earlier `gpudra rbac` lacks the reads cutover added for its notes:
# refused (403), each is said in the notes and is no input error; a refused read that the
# plan itself needs (nodes) still is one.
NOTES_ONLY = {"clusterpolicies": "nvidia.com", "resourceflavors": "kueue.x-k8s.io",
              "machinedeployments": "cluster.x-k8s.io", "machinesets": "cluster.x-k8s.io",
              "machinepools": "cluster.x-k8s.io"}
REFUSED_CASES = {
    "notes-only reads": (tuple(NOTES_ONLY.items()), 0,
                         [f"not read (forbidden): {r}.{g} (cluster-wide) — "
                          for r, g in NOTES_ONLY.items()]),
    "one notes-only read": ((("resourceflavors", "kueue.x-k8s.io"),), 0,
                            ["not read (forbidden): resourceflavors.kueue.x-k8s.io "
                             "(cluster-wide) — which ClusterQueues"]),
    "nodes": ((("nodes", ""),), 3, []),
}


@pytest.mark.parametrize("name", REFUSED_CASES)
def test_a_refused_read_that_only_feeds_notes_is_a_note_not_an_input_error(name: str) -> None:
    denied, code, wanted = REFUSED_CASES[name]
    live = [*capi_fleet(machineset("0")), *kueue()[:1], *cluster_policy()]
    live.append(f.replicaset(live[2]))
    crds = ["clusterqueues.kueue.x-k8s.io", "clusterpolicies.nvidia.com", *(
        f"{r}.{g}" for r, g in NOTES_ONLY.items() if r != "clusterpolicies")]
    deny = [{"verb": "list", "group": g, "resource": r} for r, g in denied]
    with FakeCluster(f.state(*live, version="1.37.2", crds=crds, deny=deny),
                     tls=False) as cluster:
        run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--kubeconfig",
                              str(cluster.kubeconfig), "-o", "json"], capture_output=True,
                             text=True, timeout=120)
    assert run.returncode == code, run.stderr
    if code:
        assert "nodes" in run.stderr and "not read (forbidden)" not in run.stdout
        return
    notes = [n for w in json.loads(run.stdout)["waves"] for n in w["notes"]]
    for start in wanted:
        assert len([n for n in notes if n.startswith(start)]) == 1, (start, notes)
    assert len([n for n in notes if n.startswith("not read")]) == len(wanted), notes


def test_docs_name_the_capacity_annotations_the_cluster_api_note_reads() -> None:
    """docs/cutover.md says which cluster-autoscaler capacity annotations gpudra reads: those
    bridge_context reads, no more."""
    from gpudra.cutover import bridge_context

    prefix = "capacity.cluster-autoscaler.kubernetes.io/"
    read = {value.removeprefix(prefix) for value in vars(bridge_context).values()
            if isinstance(value, str) and value.startswith(prefix)}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cutover.md").read_text()
    said = re.findall(r"gpudra reads only the ((?:`[\w-]+`(?:, | and )?)+) capacity annotation",
                      doc)
    assert said, "docs/cutover.md does not say which capacity annotations gpudra reads"
    assert {name for names in said for name in re.findall(r"`([\w-]+)`", names)} == read


# The one walk of an object's data both readings share (_mappings): what each finds, on
# shapes a manifest may take (lists of containers, init containers, a resources key that is
# no mapping, deep nesting that recursion would not survive).
DEEP: dict[str, Any] = {"limits": {"nvidia.com/gpu": "1"}}
for _ in range(5000):
    DEEP = {"spec": [DEEP]}

WALKS: list[tuple[Any, set[str], bool]] = [
    # data, resource names under limits/requests, whether a resourceClaimName is set
    ({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}},
                              {"resources": {"requests": {"cpu": "1"}}}]}},
     {"nvidia.com/gpu", "cpu"}, False),
    ({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
               "initContainers": [{"resources": {"limits": "8"}}]}}, set(), True),
    ({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": ""}]}}, set(), False),
    # a limits mapping is read, not walked: a mapping inside it is no resource's limits
    ({"limits": {"nvidia.com/mig-1g.5gb": {"limits": {"x": 1}}}}, {"nvidia.com/mig-1g.5gb"},
     False),
    (DEEP, {"nvidia.com/gpu"}, False),
    ([], set(), False),
]


@pytest.mark.parametrize(("data", "names", "claim"), WALKS)
def test_the_object_walk_finds_limits_and_claim_names(data: Any, names: set[str],
                                                     claim: bool) -> None:
    from gpudra.cutover.bridge_context import _has_key, _limit_names

    assert _limit_names(data) == names
    assert _has_key(data, "resourceClaimName") is claim
