"""`gpudra cutover` (the claims strategy) on the operators cluster's export
(tests/journey/fleet_operators.py): on a 1.37 target the InferenceService convert blocks because
KServe reads its GPU limit rides the extended-resource bridge unchanged (gpudra.cutover.rides);
on an earlier target, or when it is blocked for another reason too, it stays on the device
plugin and cutover says so (exit 1). The journey runs the 1.37 runbook on the real control
plane (tests/journey/test_operators_journey.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpudra.cutover.bridge import MAPPING_CLASS
from gpudra.cutover.bridge_runbook import write_mapping
from tests.journey.fleet_operators import BLOCKED, OPERATORS
from tests.journey.fleets import node
from tests.verify.test_cutover_bridge import cutover, mapping_class

NOTE = "KServe reads nvidia.com/gpu: left unchanged, served by DRA through the bridge"
CLAIMS_GUARD = "`gpudra guard --action warn | kubectl apply -f -`"
L4_NODES = {name for name, machine in OPERATORS.machines().items()
            if machine.product.label == "NVIDIA-L4"}


def objects(env: bool = False, mapped: bool = False) -> list[dict[str, Any]]:
    """The operators cluster as an export: its nodes and workloads; `env`: the blocked
    InferenceService's model container also sets NVIDIA_VISIBLE_DEVICES (the bridge would
    leave it: blocked for a reason the bridge does not lift); `mapped`: a DeviceClass maps
    nvidia.com/gpu already."""
    workloads = copy.deepcopy(list(OPERATORS.objects))
    if env:
        [isvc] = [o for o in workloads if (o["metadata"]["namespace"], o["kind"],
                                           o["metadata"]["name"]) == BLOCKED]
        isvc["spec"]["predictor"]["model"]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES",
                                                      "value": "all"}]
    return ([node(name, machine) for name, machine in OPERATORS.machines().items()]
            + workloads + ([mapping_class()] if mapped else []))


# target, variant -> whether the InferenceService rides the bridge
CASES = [
    ("1.37", {}, True),
    ("1.37", {"mapped": True}, True),
    ("1.37", {"env": True}, False),   # NVIDIA_VISIBLE_DEVICES: the bridge cannot serve it
    ("1.36", {}, False),              # the bridge is not GA before 1.37: claims only
    ("1.35", {}, False),
    ("1.33", {}, False),
]


@pytest.mark.parametrize(("target", "variant", "rides"), CASES)
def test_the_workload_whose_controller_reads_the_limit_rides_the_bridge_from_1_37(
        tmp_path: Path, target: str, variant: dict[str, bool], rides: bool) -> None:
    code, out, err = cutover(tmp_path, objects(**variant), "--target-version", target,
                             "-o", "json", "--output-dir", "out")
    report = json.loads(out)
    bridged = {(w["namespace"], w["kind"], w["name"]): w.get("bridged")
               for wave in report["waves"] for w in wave["workloads"]}
    labelled = [s for wave in report["waves"] for s in wave["steps"]
                if s.startswith("kubectl label namespace")]
    assert report["prerequisites"][-1].startswith(f"The namespace ratchet: {CLAIMS_GUARD}")
    # the blocked workload's namespace is never labelled for the claims guard
    assert not [s for s in labelled if " serving " in f" {s} "]
    if not rides:
        assert code == 1, err
        assert BLOCKED not in bridged and "KServe picks" in report["blocked"]
        assert "strategy" not in report and "bridge" not in report
        assert set(bridged.values()) == {None}  # the JSON of the claims strategy, unchanged
        assert not list((tmp_path / "out").rglob("bridged/**/*.yaml"))
        return
    assert code == 0, err
    assert not report["blocked"]
    assert {key for key, ride in bridged.items() if ride} == {BLOCKED}
    found = report["bridge"]
    assert report["strategy"] == "rewrite"
    assert found["rides"] == [{"namespace": BLOCKED[0], "kind": BLOCKED[1], "name": BLOCKED[2],
                               "controller": "KServe", "note": NOTE}]
    # the mapping: written unless a class maps the name, in the first wave that switches an
    # L4 node (the rider may run on both L4 pools), as that wave's first step
    first_l4 = next(w for w in report["waves"] if L4_NODES & set(w["nodes"]))
    written = sorted(str(p.relative_to(tmp_path / "out"))
                     for p in (tmp_path / "out").rglob("mapping/*.yaml"))
    if variant.get("mapped"):
        assert (found["mapped_by"], found["writes_mapping_class"], written) == (
            ["gpu.nvidia.com"], None, [])
    else:
        assert (found["writes_mapping_class"], found["mapping_wave"]) == (
            MAPPING_CLASS, first_l4["wave"])
        assert written == [f"wave-{first_l4['wave']}/mapping/deviceclass-nvidia-gpu.yaml"]
        assert first_l4["steps"][0] == write_mapping(f"out/wave-{first_l4['wave']}")
    # it moves, unchanged, in the wave that switches the second L4 pool
    [ride_wave] = [w for w in report["waves"] if any(m["bridged"] for m in w["workloads"])]
    switched = {n for w in report["waves"] if w["wave"] <= ride_wave["wave"] for n in w["nodes"]}
    assert L4_NODES <= switched and L4_NODES & set(ride_wave["nodes"])
    assert [str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob(
        "bridged/**/*.yaml")] == [f"wave-{ride_wave['wave']}/bridged/replace/serving/"
                                  "inferenceservice.serving.kserve.io-summarize.yaml"]
    assert not list((tmp_path / "out").rglob("converted/**/*summarize*"))


def test_the_runbook_says_why_it_rides_per_workload(tmp_path: Path) -> None:
    code, markdown, err = cutover(tmp_path, objects(), "--target-version", "1.37",
                                  "-o", "markdown")
    assert code == 0, err
    assert f"- {'/'.join(BLOCKED)} (1 pod, 1 GPU; StatefulSet or singleton): {NOTE}" in markdown
    code, table, err = cutover(tmp_path, objects(), "--target-version", "1.37")
    assert code == 0, err
    assert f"  {'/'.join(BLOCKED)}: {NOTE}" in table


@pytest.mark.parametrize("target", ["1.36", "1.37"])
def test_what_the_bridge_changes_around_the_riders_pods_is_said_in_the_waves_they_may_use(
        tmp_path: Path, target: str) -> None:
    """With Kueue and a quota on requests.nvidia.com/gpu in the rider's namespace, each wave
    that switches an L4 node (the rider's pods drained there come back through the bridge)
    says the bridge's Kueue and quota notes; no other wave does, and before 1.37 (no rider)
    none does."""
    from tests.verify.test_bridge_context import kueue, quota

    code, out, err = cutover(tmp_path, objects() + kueue() + quota(BLOCKED[0]),
                             "--target-version", target, "-o", "json")
    assert code == (0 if target == "1.37" else 1), err
    said = {wave["wave"]: (any("the pods the bridge serves on these nodes are charged" in n
                               for n in wave["notes"]),
                           any(n.startswith("ResourceQuota serving/gpus: ") and
                               "keeps counting the pods the bridge serves" in n
                               for n in wave["notes"]))
            for wave in json.loads(out)["waves"]}
    on_l4 = {wave["wave"]: bool(L4_NODES & set(wave["nodes"]))
             for wave in json.loads(out)["waves"]}
    assert said == {n: (l4 and target == "1.37",) * 2 for n, l4 in on_l4.items()}
    assert any(on_l4.values())
