"""`gpudra cutover --strategy bridge` on --from fleets: what each wave leaves unchanged, what it
still converts, the files and the steps (the journey runs them: tests/journey/
test_bridge_journey.py and test_bridge_sharing_journey.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.cutover.bridge import MAPPING_CLASS, check_strategy
from gpudra.cutover.bridge_runbook import capacity_gone, write_mapping
from gpudra.dra.versions import TargetVersion
from gpudra.errors import UsageError
from tests.verify import fleet as f

POOL = f.POOL_LABEL


def cutover(tmp_path: Path, objects: list[dict[str, Any]], *args: str
            ) -> tuple[int, str, str]:
    source = tmp_path / "fleet.yaml"
    source.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "gpudra", "cutover", "--from", str(source),
                          *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return run.returncode, run.stdout, run.stderr


def mapping_class() -> dict[str, Any]:
    return {**f.device_class("gpu.nvidia.com"),
            "spec": {**f.device_class()["spec"], "extendedResourceName": "nvidia.com/gpu"}}


def visible_devices_spec() -> dict[str, Any]:
    """A GPU container that sets NVIDIA_VISIBLE_DEVICES: the bridge would leave it, and a
    runtime that honours it could hand out GPUs DRA did not allocate (convert's --strategy
    bridge blocks it); the rewrite removes it, so cutover converts it."""
    spec = f.pod_spec(gpus=1, node_selector={POOL: "b"})
    spec["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    return spec


def fleet(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [f.node("a-1", 8, pool="a"),
            f.node("b-1", 8, pool="b"),
            f.deployment("ml", "web", f.pod_spec(gpus=2, node_selector={POOL: "a"}),
                         replicas=2),
            f.pod("ml", "debug", f.pod_spec(gpus=1, node_selector={POOL: "a"}),
                  node_name="a-1"),
            f.deployment("ml", "visible", visible_devices_spec()),
            *extra]


BRIDGED = {"web": True, "debug": True, "visible": False}


def test_whole_gpus_stay_unchanged_what_the_bridge_cannot_serve_is_converted(
        tmp_path: Path) -> None:
    code, out, err = cutover(tmp_path, fleet(), "--strategy", "bridge", "-o", "json",
                             "--output-dir", "out")
    assert code == 0, err
    report = json.loads(out)
    # The waves are the rewrite strategy's; each workload says whether the bridge serves it.
    code, rewrite, err = cutover(tmp_path, fleet(), "-o", "json")
    assert [(w["wave"], w["nodes"], [m["name"] for m in w["workloads"]])
            for w in report["waves"]] == [(w["wave"], w["nodes"], [m["name"] for m in
                                                                   w["workloads"]])
                                          for w in json.loads(rewrite)["waves"]]
    assert {m["name"]: m["bridged"] for w in report["waves"] for m in w["workloads"]} == BRIDGED
    assert all("bridged" not in m for w in json.loads(rewrite)["waves"] for m in w["workloads"])
    assert (report["strategy"], report["bridge"]) == (
        "bridge", {"mapped_by": [], "writes_mapping_class": MAPPING_CLASS})
    assert "bridge" not in json.loads(rewrite) and "strategy" not in json.loads(rewrite)
    written = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob(
        "*.yaml"))
    first = report["waves"][0]["wave"]
    by_wave = {m["name"]: w["wave"] for w in report["waves"] for m in w["workloads"]}
    assert written == sorted([
        f"wave-{first}/mapping/deviceclass-nvidia-gpu.yaml",
        f"wave-{by_wave['web']}/bridged/replace/ml/deployment-web.yaml",
        f"wave-{by_wave['debug']}/bridged/recreate/ml/pod-debug.yaml",
        f"wave-{by_wave['visible']}/original/replace/ml/deployment-visible.yaml",
        f"wave-{by_wave['visible']}/converted/replace/ml/deployment-visible.yaml",
        f"wave-{by_wave['visible']}/converted/claims/ml/deployment-visible.yaml"])
    written_class = yaml.safe_load((tmp_path / "out" / f"wave-{first}" / "mapping" /
                                    "deviceclass-nvidia-gpu.yaml").read_text())
    assert (written_class["metadata"]["name"], written_class["spec"]["extendedResourceName"]) \
        == (MAPPING_CLASS, "nvidia.com/gpu")
    # The bare Pod is written as its author wrote it: created again without the node.
    debug = yaml.safe_load((tmp_path / "out" / f"wave-{by_wave['debug']}" / "bridged" /
                            "recreate" / "ml" / "pod-debug.yaml").read_text())
    assert "nodeName" not in debug["spec"]
    steps = {w["wave"]: w["steps"] for w in report["waves"]}
    rollback = {w["wave"]: w["rollback"] for w in report["waves"]}
    assert steps[first][0] == write_mapping(f"out/wave-{first}")
    # one shell line each: the Markdown runbook is read line by line
    assert not [s for w in report["waves"] for s in w["steps"] + w["rollback"] if "\n" in s]
    # the rollback deletes the class this wave wrote once the nodes are back on the plugin
    [delete] = [i for i, s in enumerate(rollback[first]) if "/mapping/" in s]
    assert rollback[first][delete].startswith(f"kubectl delete -f out/wave-{first}/mapping/")
    assert delete > rollback[first].index(
        f"kubectl uncordon {' '.join(report['waves'][0]['nodes'])}")
    for wave in report["waves"]:
        waits = [s for s in wave["steps"] if s.startswith("timeout 10m bash -c")]
        assert [capacity_gone(n) for n in wave["nodes"]] == waits
        assert wave["steps"].index(waits[-1]) + 1 == wave["steps"].index(
            f"kubectl uncordon {' '.join(wave['nodes'])}")
        assert not [s for s in wave["steps"] if "rollout restart" in s]


@pytest.mark.parametrize(("extra", "said"), [
    ((), "strategy bridge: 2 workloads stay unchanged (the bridge serves them), 1 move to "
         f"claims; the first wave writes {MAPPING_CLASS}"),
    ((mapping_class(),), "strategy bridge: 2 workloads stay unchanged (the bridge serves "
                         "them), 1 move to claims; DeviceClass gpu.nvidia.com maps "
                         "nvidia.com/gpu"),
])
def test_the_wave_table_says_what_stays_unchanged(tmp_path: Path, extra: tuple[Any, ...],
                                                   said: str) -> None:
    code, out, err = cutover(tmp_path, fleet(*extra), "--strategy", "bridge")
    assert code == 0, err
    assert out.splitlines()[-1] == said
    code, out, err = cutover(tmp_path, fleet(*extra))
    # the rewrite's table has no such line (its last line may recommend the bridge: issue 33)
    assert not [line for line in out.splitlines() if line.startswith("strategy bridge")]


def test_no_second_mapping_class_when_one_maps_the_name(tmp_path: Path) -> None:
    code, out, err = cutover(tmp_path, fleet(mapping_class()), "--strategy", "bridge", "-o",
                             "json", "--output-dir", "out")
    assert code == 0, err
    report = json.loads(out)
    assert report["bridge"] == {"mapped_by": ["gpu.nvidia.com"], "writes_mapping_class": None}
    assert not [s for w in report["waves"] for s in w["steps"] + w["rollback"]
                if "/mapping/" in s]
    assert not list((tmp_path / "out").rglob("mapping"))


@pytest.mark.parametrize(("strategy", "release", "refused"), [
    ("rewrite", 33, None),
    ("bridge", 37, None),
    ("bridge", 36, None),
    ("bridge", 35, "Kubernetes 1.35 the DRAExtendedResource gate is alpha and off by default"),
    ("bridge", 34, "Kubernetes 1.34 the DRAExtendedResource gate is alpha and off by default"),
    ("bridge", 33, "Kubernetes 1.33 has no extended-resource bridge"),
    ("bridge", 32, "Kubernetes 1.32 has no extended-resource bridge"),
    ("claims", 37, None),  # the alias of rewrite
    ("claim", 37, r"--strategy must be rewrite \(also spelled claims\) or bridge, not 'claim'"),
])
def test_the_strategy_and_the_release(strategy: str, release: int, refused: str | None) -> None:
    if refused is None:
        check_strategy(strategy, TargetVersion(release))
        return
    with pytest.raises(UsageError, match=refused):
        check_strategy(strategy, TargetVersion(release))


def test_the_cli_refuses_the_bridge_below_its_release_in_one_line(tmp_path: Path) -> None:
    code, out, err = cutover(tmp_path, fleet(), "--strategy", "bridge", "--target-version",
                             "1.33")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "Kubernetes 1.33" in err, err


@pytest.mark.parametrize(("shown", "waits"), [
    ("", False),      # gone from capacity and allocatable
    ("00", False),    # the kubelet keeps a stopped plugin's resource at 0
    ("0", False),
    ("40", True),     # capacity 4, allocatable 0: the plugin's capacity is not gone yet
    ("44", True),
    ("8", True),
])
def test_the_capacity_wait_ends_only_when_no_gpu_is_advertised(
        tmp_path: Path, shown: str, waits: bool) -> None:
    """The wait line run by bash with a kubectl that prints what the API server would for
    `{.status.capacity.nvidia\\.com/gpu}{.status.allocatable.nvidia\\.com/gpu}`, its timeout
    cut to 3 seconds: it ends (0) or times out (124)."""
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f"#!/bin/sh\nprintf '%s' '{shown}'\n")
    kubectl.chmod(0o755)
    line = capacity_gone("gke-a-1").replace("timeout 10m", "timeout 3", 1)
    run = subprocess.run(["bash", "-c", line], env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == (124 if waits else 0), run.stderr


def reads_the_limit() -> dict[str, Any]:
    """A KServe InferenceService whose image KServe picks by the GPU limit: the rewrite cannot
    move it (convert blocks it); the bridge keeps the limit."""
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "summarize", "namespace": "serving", "uid": "uid-summarize",
                         "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"}},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1,
                                   "nodeSelector": {POOL: "b"},
                                   "model": {"modelFormat": {"name": "huggingface"},
                                             "storageUri": "hf://example/summarizer",
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}}}}


@pytest.mark.parametrize(("strategy", "target", "code", "moved"), [
    ("rewrite", "1.36", 1, []),         # stays on the device plugin: pool b cannot switch
    # claims on 1.37: its controller reads the limit, so it rides the bridge (cutover.rides)
    ("rewrite", "1.37", 0, [("summarize", True)]),
    ("bridge", "1.37", 0, [("summarize", True)]),
    ("bridge", "1.36", 0, [("summarize", True)]),
])
def test_a_workload_whose_controller_reads_the_limit_moves_only_through_the_bridge(
        tmp_path: Path, strategy: str, target: str, code: int,
        moved: list[tuple[str, bool]]) -> None:
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), reads_the_limit()]
    got, out, err = cutover(tmp_path, objects, "--strategy", strategy, "--target-version",
                            target, "-o", "json")
    assert got == code, err
    report = json.loads(out)
    assert [(m["name"], m.get("bridged", False)) for w in report["waves"]
            for m in w["workloads"]] == moved
    assert ("KServe picks the huggingfaceserver image by the GPU limit" in (
        report["blocked"] or "")) == (not moved)
    assert report.get("strategy") == (strategy if moved else None)


def test_an_unchanged_workload_is_on_the_bridge_only_once_every_node_it_may_use_switched(
        tmp_path: Path) -> None:
    """`spread` may run on both pools. The rewrite moves it in the first wave (its converted
    pods can only go to DRA nodes); unchanged, its pods could come back on the other pool's
    device plugin, so the bridge holds it to the wave that switches its last pool."""
    objects = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"),
               f.deployment("ml", "spread", f.pod_spec(gpus=1), replicas=2),
               f.deployment("ml", "on-b", f.pod_spec(gpus=1, node_selector={POOL: "b"}))]
    code, rewrite, err = cutover(tmp_path, objects, "-o", "json")
    assert code == 0, err
    code, bridge, err = cutover(tmp_path, objects, "--strategy", "bridge", "-o", "json")
    assert code == 0, err

    def waves(out: str) -> list[tuple[list[str], list[str]]]:
        return [(w["nodes"], [m["name"] for m in w["workloads"]])
                for w in json.loads(out)["waves"]]

    assert waves(rewrite) == [(["a-1"], ["spread"]), (["b-1"], ["on-b"])]
    assert waves(bridge) == [(["a-1"], []), (["b-1"], ["spread", "on-b"])]
    # the wave that holds nothing still has its folder: its verify --wave-of line reads it
    code, _, err = cutover(tmp_path, objects, "--strategy", "bridge", "--output-dir", "out")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "runbook.md", "wave-1", "wave-2"]
    assert (tmp_path / "out" / "wave-1" / "bridged").is_dir()


@pytest.mark.parametrize(("mapped", "applied"), [
    ("", True),                                   # no class maps anything
    ("nvidia.com/mig-1g.10gb", True),             # another name only
    ("nvidia.com/gpu-shared", True),              # not the name itself: whole words only
    ("nvidiaXcom/gpu", True),                     # compared as text, not as a pattern
    ("example.com/gpu nvidia.com/gpu", False),
    ("nvidia.com/gpu", False),                    # the driver chart's class maps it
    ("example.com/fpga nvidia.com/gpu", False),
])
def test_the_mapping_class_is_written_only_when_no_class_maps_the_name(
        tmp_path: Path, mapped: str, applied: bool) -> None:
    """The line run by bash with a kubectl that prints the classes' extendedResourceNames as
    `kubectl get -o jsonpath` joins them and records an apply."""
    kubectl = tmp_path / "kubectl"
    kubectl.write_text('#!/bin/sh\nif [ "$1" = apply ]; then echo "$@" >> applied; '
                       f"else printf '%s' '{mapped}'; fi\n")
    kubectl.chmod(0o755)
    run = subprocess.run(["bash", "-c", write_mapping("out/wave-1")], cwd=tmp_path,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "applied").exists() == applied
