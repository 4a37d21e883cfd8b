"""The runbook labels a namespace as migrated (gpudra.io/migrated=true, what `gpudra guard`'s
binding selects) in the wave that moves its last workload on the device plugin, after the
wave's last change (its waits and its verify line follow); the wave's rollback removes the
label before it puts device-plugin originals back (the guard would refuse them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.verify import fleet as f
from tests.verify.test_cutover import cutover, pinned

LABEL = ("kubectl label namespace {} gpudra.io/migrated=true --overwrite   # no GPU workload "
         "left on the device plugin here: gpudra guard's binding now selects it")
UNLABEL = ("kubectl label namespace {} gpudra.io/migrated-   # first: gpudra guard would refuse "
           "the device-plugin originals put back below")


def two_namespaces() -> list[dict[str, Any]]:
    """Pool b moves first with `infer/pinned` and `ml/batch` (both pinned to it); `ml/web`
    moves with pool a: infer is finished by wave 1, ml only by wave 2."""
    return [f.node("a-1", 8, pool="a"), f.node("a-2", 8, pool="a"), f.node("b-1", 8, pool="b"),
            f.deployment("ml", "web", f.pod_spec(gpus=2), replicas=3),
            f.deployment("ml", "batch", f.pod_spec(gpus=4, node_selector=pinned("b")),
                         kind="Job"),
            f.deployment("infer", "pinned", f.pod_spec(gpus=4, node_selector=pinned("b")))]


STRATEGIES = {  # cutover's options, and the guard its runbook names before the first wave
    "rewrite": ((), "`gpudra guard --action warn | kubectl apply -f -`"),
    # the bridge's unchanged workloads keep asking nvidia.com/gpu: the guard must allow it
    "bridge": (("--strategy", "bridge"),
               "`gpudra guard --strategy bridge --action warn | kubectl apply -f -`"),
}


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("wave, finished", [(1, "infer"), (2, "ml")])
def test_a_namespace_is_labelled_after_its_last_wave_and_unlabelled_first_on_rollback(
        tmp_path: Path, wave: int, finished: str, strategy: str) -> None:
    options, guard = STRATEGIES[strategy]
    code, report, err = cutover(tmp_path, two_namespaces(), *options)
    assert code == 0, err
    steps = report["waves"][wave - 1]
    assert {w["namespace"] for w in steps["workloads"]} >= {finished}
    labels = [s for s in steps["steps"] if s.startswith("kubectl label namespace")]
    assert labels == [LABEL.format(finished)]
    # after the wave's last change (create, replace, uncordon), before its waits and verify
    commands = [s.split("   #")[0] for s in steps["steps"]]
    label = commands.index(LABEL.format(finished).split("   #")[0])
    assert label > max(i for i, c in enumerate(commands) if c.startswith(
        ("kubectl create", "kubectl replace", "kubectl uncordon", "kubectl apply")))
    assert commands[-1].startswith("gpudra verify --wave-of")
    assert steps["rollback"][0] == UNLABEL.format(finished)
    # the guard that acts on the label is applied before the first wave
    assert guard in report["prerequisites"][-1]


@pytest.mark.parametrize("target", ["1.36", "1.37"])
def test_a_namespace_with_a_workload_convert_cannot_move_is_never_labelled(
        tmp_path: Path, target: str) -> None:
    """`ml/summarize`, an InferenceService convert blocks (KServe reads its GPU limit). Before
    1.37 it stays on the device plugin (and pool a with it): cutover stops after wave 1, which
    finishes infer; ml is never finished. On 1.37 it rides the bridge unchanged
    (gpudra.cutover.rides) and the plan completes, but ml is still never labelled: the claims
    strategy's guard would refuse the pods KServe makes for it."""
    from tests.journey.fleet_operators import inferenceservice

    blocked = inferenceservice("ml", "summarize", {"model": {
        "modelFormat": {"name": "huggingface"}, "storageUri": "hf://example/summarizer",
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}})
    code, report, err = cutover(tmp_path, [*two_namespaces(), blocked],
                                "--target-version", target)
    if target == "1.37":
        assert (code, report["blocked"]) == (0, None), err
        assert [r["name"] for r in report["bridge"]["rides"]] == ["summarize"]
    else:
        assert code == 1 and "ml/InferenceService/summarize" in report["blocked"], err
    labelled = [s for w in report["waves"] for s in w["steps"]
                if s.startswith("kubectl label namespace")]
    assert labelled == [LABEL.format("infer")]
