"""verify --wave-of (issue 32, item 15a): after a wave, a workload the wave moves that is still
on the device plugin, or gone (a Job or Pod deleted and never created again), fails the run
with the reason; the runbook's own verify line holds the wave to it. The wave folders are the
ones `gpudra cutover --output-dir` writes; the wave reader is fuzzed with hostile folders."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.errors import GpudraError
from gpudra.verify.expected import read_wave
from tests.verify import fleet as f
from tests.verify.test_cutover import cutover, safe_fleet
from tests.verify.test_verify import verify

EXAMPLES = int(os.environ.get("GPUDRA_FUZZ_EXAMPLES", "60"))


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """safe_fleet's cutover: its wave folders and its waves as JSON."""
    tmp = tmp_path_factory.mktemp("cutover")
    code, report, err = cutover(tmp, safe_fleet(), "--output-dir", str(tmp / "out"))
    assert code == 0, err
    return tmp / "out", report["waves"]


def moved(wave: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(w["namespace"], w["kind"], w["name"]) for w in wave["workloads"]}


def rows(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["namespace"], r["kind"], r["name"]): r for r in report["workloads"]}


def test_each_waves_verify_line_holds_the_wave(planned: tuple[Path, list]) -> None:
    out, waves = planned
    for wave in waves:
        if wave["workloads"]:
            assert wave["steps"][-1].split("   #")[0] == \
                f"gpudra verify --wave-of {out}/wave-{wave['wave']}"


def test_a_wave_not_applied_fails_verify(planned: tuple[Path, list]) -> None:
    """Nothing of the wave was applied: without --wave-of verify passes (the bug); with it,
    every workload the wave moves fails, named with the wave's file."""
    out, waves = planned
    wave = next(w for w in waves if w["workloads"])
    folder = out / f"wave-{wave['wave']}"
    code, report, err = verify(f.state(*safe_fleet()), "-o", "json")
    assert code == 0, err
    code, report, err = verify(f.state(*safe_fleet()), "-o", "json", "--wave-of", str(folder))
    assert code == 1, err
    by_key = rows(report)
    for key in moved(wave):
        row = by_key[key]
        assert (row["outcome"], row["state"]) == ("fail", "device plugin"), row
        assert row["message"].startswith("not moved: still on the device plugin")
        assert row["moved_by_wave"].startswith(str(folder))
        assert row["details"][0].startswith(f"the wave moves it ({folder}")
    for key in set(by_key) - moved(wave):
        assert by_key[key]["outcome"] == "warn" and by_key[key]["moved_by_wave"] is None
    assert report["summary"]["not_ok"] == len(moved(wave))


def test_a_recreated_workload_never_created_again_is_missing(planned: tuple[Path, list]
                                                              ) -> None:
    out, waves = planned
    wave = next(w for w in waves if any(m["kind"] == "Job" for m in w["workloads"]))
    job = next(m for m in wave["workloads"] if m["kind"] == "Job")
    objects = [o for o in safe_fleet() if o["metadata"]["name"] != job["name"]]
    code, report, err = verify(f.state(*objects), "-o", "json", "--wave-of",
                               str(out / f"wave-{wave['wave']}"))
    assert code == 1, err
    row = rows(report)[(job["namespace"], "Job", job["name"])]
    assert (row["outcome"], row["state"]) == ("fail", "missing")
    assert report["summary"]["missing"] == 1


def test_an_applied_wave_adds_no_failure(planned: tuple[Path, list]) -> None:
    """The wave's converted manifests in the cluster instead of the originals: its workloads
    are judged on claims, and --wave-of holds nothing against them."""
    out, waves = planned
    wave = next(w for w in waves if w["workloads"])
    folder = out / f"wave-{wave['wave']}"
    converted = [doc for path in sorted((folder / "converted").rglob("*.yaml"))
                 for doc in yaml.safe_load_all(path.read_text()) if doc]
    names = {d["metadata"]["name"] for d in converted}
    objects = [o for o in safe_fleet() if o["metadata"].get("name") not in names or
               o["kind"] == "Node"] + converted
    code, report, err = verify(f.state(*objects, auto_namespaces=True), "-o", "json",
                               "--wave-of", str(folder))
    assert code in (0, 1), err
    for key in moved(wave):
        assert rows(report)[key]["state"] == "claims"
        assert rows(report)[key]["moved_by_wave"] is None
    assert report["summary"]["missing"] == 0


def test_a_folder_that_is_no_wave_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = verify(f.state(*safe_fleet()), "--wave-of", str(tmp_path))
    assert code == 2 and "not a wave folder" in err


# --- the wave reader, fuzzed ----------------------------------------------------------------

FILE_BODIES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"", b"- a\n- b\n", b"kind: Deployment\n", b"&a [*a, *a]\n",
                     b"apiVersion: v1\nkind: Pod\nmetadata: {name: [1]}\n", b"\xff\xfe",
                     b"metadata:\n  name: x\n  namespace: 3\nkind: Job\n", b"[" * 3000,
                     b"kind: Job\nmetadata: {name: j, namespace: ml}\n---\n: :\n"]),
    st.dictionaries(st.sampled_from(["kind", "metadata", "apiVersion"]),
                    st.none() | st.integers() | st.text(max_size=5)
                    | st.dictionaries(st.sampled_from(["name", "namespace"]),
                                      st.none() | st.text(max_size=5) | st.integers()),
                    max_size=3).map(lambda d: yaml.safe_dump(d).encode()),
)


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(FILE_BODIES, min_size=1, max_size=3),
       where=st.sampled_from(["converted/replace/ml", "converted/recreate", "converted",
                              "bridged/replace/ml", "bridged/recreate", "bridged"]))
def test_the_wave_reader_refuses_hostile_folders_with_a_reason(tmp_path: Path,
                                                               bodies: list[bytes],
                                                               where: str) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as top:
        folder = Path(top)
        (folder / where).mkdir(parents=True)
        for index, body in enumerate(bodies):
            (folder / where / f"w-{index}.yaml").write_bytes(body)
        try:
            wave = read_wave(str(folder))
        except GpudraError as error:
            assert str(error)  # refused, with the reason
            return
    for workload in wave.workloads:
        assert workload.kind and workload.name and isinstance(workload.namespace, str)
        assert workload.bridged == where.startswith("bridged/")  # read only under bridged/


def test_a_fifo_in_a_wave_folder_is_refused_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "converted" / "replace").mkdir(parents=True)
    os.mkfifo(tmp_path / "converted" / "replace" / "pipe.yaml")
    with pytest.raises(GpudraError, match="not a regular file"):
        read_wave(str(tmp_path))
