"""`gpudra cutover --strategy bridge` and ResourceQuotas: a namespace where the bridge serves a
workload unchanged (it keeps asking `nvidia.com/gpu`, and `requests.nvidia.com/gpu` counts the
bridge's claims: docs/facts.md) while MIG workloads there are converted in the same wave. The
wave's quota rewrite must keep `requests.nvidia.com/gpu`, or the bridged pods lose their cap;
with no bridged workload left in the namespace (or under --strategy rewrite, which converts
them all), the device-plugin keys go with its last converted workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.verify.test_cutover import _sharing_fleet, cutover

GPU_KEY = "requests.nvidia.com/gpu"
MIG_KEY = "requests.nvidia.com/mig-1g.10gb"
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "gpus", "namespace": "ml"},
         "spec": {"hard": {GPU_KEY: "2", MIG_KEY: "4"}}}


def mig_pool(*leave_out: str) -> list[dict[str, Any]]:
    """The journey's MIG pool (mixed strategy: 1g.10gb and 3g.40gb slices on GPU 0, a whole
    GPU 1) and its namespace `ml`: MIG workloads (tiny, mid, probe) and a whole-GPU Job
    (whole), which the bridge serves unchanged; the quota caps both."""
    objects = [o for o in _sharing_fleet()
               if (o["kind"] == "Node" and o["metadata"]["name"].startswith("gke-mig-"))
               or o["kind"] == "DeviceClass"
               or (o["metadata"].get("namespace") == "ml" and o["kind"] != "ResourceQuota"
                   and o["metadata"]["name"] not in leave_out)]
    return [*objects, QUOTA]


@pytest.mark.parametrize(("strategy", "leave_out", "bridged", "kept"), [
    # whole stays on nvidia.com/gpu through the bridge: its cap stays beside the DRA keys
    ("bridge", (), {"whole"}, True),
    # no bridged workload in the namespace: nothing asks the device plugin's names any more
    ("bridge", ("whole",), set(), False),
    # the rewrite converts whole too
    ("rewrite", (), set(), False),
])
def test_a_quota_keeps_its_device_plugin_cap_while_the_bridge_serves_its_namespace(
        tmp_path: Path, strategy: str, leave_out: tuple[str, ...], bridged: set[str],
        kept: bool) -> None:
    out = tmp_path / "out"
    code, report, err = cutover(tmp_path, mig_pool(*leave_out), "--output-dir", str(out),
                                "--strategy", strategy, "--target-version", "1.36")
    assert code == 0, err
    moved = [m for w in report["waves"] for m in w["workloads"]]
    assert {m["name"] for m in moved if m.get("bridged")} == bridged
    assert any(m["kind"] != "Job" for m in moved if not m.get("bridged"))  # MIG converted
    changed = sorted(out.glob("wave-*/converted/quotas/ml/resourcequota-gpus.yaml"))
    assert changed, "the wave that converts ml's MIG workloads rewrites its quota"
    for path in changed:
        hard = yaml.safe_load(path.read_text(encoding="utf-8"))["spec"]["hard"]
        # the DRA keys that cap the converted claims, in every case
        assert {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices",
                "mig.nvidia.com.deviceclass.resource.k8s.io/devices"} <= set(hard), hard
        assert (hard.get(GPU_KEY) == QUOTA["spec"]["hard"][GPU_KEY]) is kept, hard
        # the MIG slices' key goes: no pod asks it once they are converted (a key left on a
        # device-plugin name would hold the decommission gate shut)
        assert MIG_KEY not in hard, hard
    # and the wave's steps replace it: the runbook applies what was written
    assert any("/converted/quotas/" in s for w in report["waves"] for s in w["steps"])
