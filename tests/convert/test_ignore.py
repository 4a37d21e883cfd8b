"""`gpudra.io/ignore` is honoured by convert (issue 13 item 12): an object whose annotation
suppresses what convert would change (the device-plugin request rules GPU101-103, the quota
rules GPU201/GPU203, or `all`) is left byte for byte and listed as ignored with the reason, so
the pre-commit hook (`convert --check`) passes on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.manifests import gpu_job
from tests.support.run import invoke

JOB = gpu_job("train", namespace="ml", gpus=2, container="main", image="cuda", restart_never=True,
              annotations={"gpudra.io/ignore": '"{value}"'})
QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
  namespace: ml
  annotations: {gpudra.io/ignore: "GPU201: the team keeps its device-plugin quota"}
spec:
  hard:
    requests.nvidia.com/gpu: "8"
"""


def _convert(path: Path, *args: str) -> tuple[int, dict]:
    result = invoke("convert", str(path), *args, "-o", "json", plain=False)
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("value, reason", [
    ("GPU101: inference fleet stays on the device plugin until Q3",
     "inference fleet stays on the device plugin until Q3"),
    ("GPU304,all: hands off", "hands off"),
])
def test_ignored_workload_is_left_byte_for_byte(value: str, reason: str, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(value=value) + "---\n" + QUOTA)
    before = job.read_bytes()
    code, report = _convert(tmp_path, "--check")
    assert code == 0, report
    assert report["files"] == []
    by_kind = {w["kind"]: w for w in report["workloads"]}
    assert by_kind["Job"]["strategy"] == "ignored"
    assert reason in by_kind["Job"]["reason"] and "gpudra.io/ignore" in by_kind["Job"]["reason"]
    assert by_kind["ResourceQuota"]["strategy"] == "ignored"
    assert report["summary"]["ignored"] == 2
    code, _ = _convert(tmp_path)
    assert code == 0 and job.read_bytes() == before


@pytest.mark.parametrize("value", ["GPU304: tainted pool", "GPU101"])
def test_other_or_unreasoned_suppressions_do_not_skip(value: str, tmp_path: Path) -> None:
    """Suppressing another rule, or an entry without a reason (which suppresses nothing),
    leaves the workload to convert."""
    (tmp_path / "job.yaml").write_text(JOB.format(value=value))
    code, report = _convert(tmp_path)
    assert code == 0
    assert [w["strategy"] for w in report["workloads"]] == ["rewrite"]
