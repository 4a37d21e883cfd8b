"""Fuzzing audit and convert in-process with mutated manifests and generated pod specs.

For every example: audit and convert raise nothing but GpudraError (a one-line input error);
convert leaves every file it does not change byte-identical; every file it changes parses;
and a second convert has nothing left to change.

Seeds: the golden cases' `before` trees (always in tests/), plus a fixed sample of the shared
corpus when ../shared/corpus is present (skipped cleanly otherwise). Bounded: a fixed number
of derandomized examples per test, a few seconds each.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudra.audit.engine import AuditRequest, run_audit
from gpudra.report import SummaryFormat
from gpudra.cli.convert import ConvertShow, run_convert
from gpudra.convert.run import ConvertRequest
from gpudra.errors import GpudraError
from gpudra.sources.documents import split_documents

JSON = ConvertShow(output=SummaryFormat.JSON)  # -o json

HERE = Path(__file__).resolve().parent
LIBYAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
GOLDEN = HERE.parent / "convert" / "golden"
# ../shared/corpus beside the repository, as the corpus tests find it; GPUDRA_CORPUS points
# elsewhere (a worktree), and GPUDRA_FUZZ_EXAMPLES runs a deeper search than the suite's.
CORPUS = Path(os.environ.get("GPUDRA_CORPUS") or HERE.parents[2] / "shared" / "corpus")
CORPUS_SAMPLE = 40  # corpus files used as seeds, the first of a sorted list
EXAMPLES = int(os.environ.get("GPUDRA_FUZZ_EXAMPLES", "150"))

FUZZ_SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                         report_multiple_bugs=False,
                         suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large,
                                                HealthCheck.function_scoped_fixture])


def _seeds(root: Path, limit: int | None = None) -> list[str]:
    files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml")
                   and p.is_file() and "nvidia.com" in p.read_text(errors="replace"))
    return [p.read_text(errors="replace") for p in files[:limit]]


GOLDEN_SEEDS = _seeds(GOLDEN) if GOLDEN.is_dir() else []
CORPUS_SEEDS = _seeds(CORPUS, CORPUS_SAMPLE) if CORPUS.is_dir() else []

# Values that have broken parsers and planners: wrong types, YAML specials, quantities the API
# server rejects, anchors and aliases, control characters.
ODD_VALUES = ["", "null", "~", "[]", "{}", "[1, 2]", "{a: 1}", "0", "-1", "1.5", "１", "1e999",
              "9223372036854775808", "1Ei", "true", "yes", '"x"', "&a x", "*a", "&b [*b]",
              "!!binary aGk=", "!!set {a}", "<<: {a: 1}", "\x1b[31m", "\t", "'", "|", ">-",
              "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "${GPUS}", "{{ .Values.g }}"]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["value", "delete", "duplicate", "indent", "dedent",
                                   "separator", "swap", "truncate", "key"]))
        line = lines[i]
        if op == "value" and ":" in line:
            head = line.split(":", 1)[0]
            lines[i] = f"{head}: {draw(st.sampled_from(ODD_VALUES))}"
        elif op == "key" and ":" in line:
            lines[i] = line.replace(line.strip().split(":", 1)[0],
                                    draw(st.sampled_from(["metadata", "containers", "resources",
                                                          "limits", "spec", "items", "<<"])),
                                    1)
        elif op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "indent":
            lines[i] = "  " + line
        elif op == "dedent":
            lines[i] = line[2:] if line.startswith("  ") else line
        elif op == "separator":
            lines.insert(i, "---")
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            lines = lines[:i]
    return "\n".join(lines)


COUNTS = st.one_of(st.integers(-2, 9), st.sampled_from(["1", "2", "0", "1k", "1000m", "0.5",
                                                         "１", "99999999999999999999", "-1",
                                                         "${N}", None, True, [], {}]))
DEVICES = st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared",
                           "amd.com/gpu", "cpu", "memory"])


@st.composite
def containers(draw: st.DrawFn) -> list:
    out = []
    for index in range(draw(st.integers(0, 3))):
        container: dict = {"name": draw(st.sampled_from([f"c{index}", "main", "", None, 5]))}
        if draw(st.booleans()):
            container["image"] = "cuda"
        resources = {}
        for field in draw(st.sets(st.sampled_from(["limits", "requests", "claims"]))):
            if field == "claims":
                resources["claims"] = draw(st.sampled_from([[{"name": "gpu"}], [], "x"]))
            else:
                resources[field] = draw(st.dictionaries(DEVICES, COUNTS, max_size=3))
        if resources or draw(st.booleans()):
            container["resources"] = draw(st.sampled_from([resources, resources, None, "x"]))
        if draw(st.integers(0, 5)) == 0:
            container["env"] = draw(st.sampled_from([[{"name": "NVIDIA_VISIBLE_DEVICES",
                                                       "value": "all"}], "x", [1]]))
        out.append(container)
    return out


@st.composite
def pod_spec(draw: st.DrawFn) -> dict:
    spec: dict = {"containers": draw(st.one_of(containers(), st.sampled_from([1, "x", None])))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(containers())
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(
            st.sampled_from(["nvidia.com/gpu.product", "nvidia.com/gpu.present",
                             "nvidia.com/gpu.memory", "nvidia.com/mig.config",
                             "kubernetes.io/arch"]),
            st.sampled_from(["NVIDIA-H100-80GB-HBM3", "true", "81559", "all-1g.10gb", "amd64", 5]),
            max_size=3))
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
    if draw(st.integers(0, 4)) == 0:
        spec["resourceClaims"] = draw(st.sampled_from([[{"name": "gpu",
                                                        "resourceClaimTemplateName": "t"}],
                                                       "x", [None]]))
    return spec


@st.composite
def workload(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["Pod", "Job", "Deployment", "StatefulSet", "DaemonSet",
                                 "CronJob", "PyTorchJob", "ReplicaSet"]))
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1",
           "PyTorchJob": "kubeflow.org/v1"}.get(kind, "apps/v1")
    metadata = draw(st.sampled_from([
        {"name": "w", "namespace": "ml"}, {"name": "w"}, {"generateName": "w-"},
        {"name": "w", "annotations": {"gpudra.io/claim-mode": "shared"}}, {},
        {"name": "w", "namespace": "ml", "labels": {"a": "b"}}, 5, ["w"], None,
        {"name": 7, "namespace": [1]}, {"name": "w", "namespace": {"a": 1}}]))
    spec = draw(pod_spec())
    template = {"metadata": {"labels": {"app": "w"}}, "spec": spec}
    body = {"Pod": spec,
            "CronJob": {"schedule": "* * * * *",
                        "jobTemplate": {"spec": {"template": template}}},
            "PyTorchJob": {"pytorchReplicaSpecs": {"Master": {"replicas": 1,
                                                              "template": template}}},
            }.get(kind, {"selector": {"matchLabels": {"app": "w"}}, "template": template})
    return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": body}


def _check(files: dict[str, str], claims_file: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        root.mkdir()
        for name, text in files.items():
            (root / name).write_text(text)
        before = {p.name: p.read_bytes() for p in root.iterdir()}
        paths = (str(root),)
        try:
            run_audit(AuditRequest(paths))
        except GpudraError:
            pass
        request = ConvertRequest(paths=paths, claims_file=claims_file)
        out, err = io.StringIO(), io.StringIO()
        try:
            run_convert(request, ConvertShow(quiet=True), stdout=out, stderr=err)
        except GpudraError:
            assert {p.name: p.read_bytes() for p in root.iterdir()} == before
            return
        after = {p.name: p.read_bytes() for p in root.iterdir()}
        for name, data in after.items():
            if before.get(name) == data:
                continue
            # Every document convert wrote parses (documents it left alone may not: a file can
            # hold a broken document beside a convertible one), read with libyaml as convert
            # and kubectl read it (the pure-Python reader refuses a trailing tab).
            if name.endswith(".json"):  # a JSON file stays one JSON value (issue 34 item 6)
                json.loads(data)
                continue
            old = {c.text for c in split_documents(before.get(name, b"").decode("utf-8-sig"))}
            for chunk in split_documents(data.decode("utf-8-sig")):
                if chunk.text not in old:
                    yaml.load(chunk.text, Loader=LIBYAML)
        assert not any(name.endswith(".gpudra-tmp") or name.startswith(".gpudra-convert")
                       for name in after), after.keys()
        again = io.StringIO()
        run_convert(ConvertRequest(paths=paths, claims_file=claims_file), JSON,
                    stdout=again, stderr=io.StringIO())
        changed = json.loads(again.getvalue())["files"]
        assert changed == [], f"a second run still changes {changed}"
        assert {p.name: p.read_bytes() for p in root.iterdir()} == after


@pytest.mark.skipif(not GOLDEN_SEEDS, reason="no golden seeds")
@FUZZ_SETTINGS
@given(st.lists(mutated(GOLDEN_SEEDS), min_size=1, max_size=3))
def test_mutated_manifests(texts: list[str]) -> None:
    _check({f"m{i}.yaml": text for i, text in enumerate(texts)})


@pytest.mark.skipif(not CORPUS_SEEDS, reason="shared corpus not present")
@FUZZ_SETTINGS
@given(st.lists(mutated(CORPUS_SEEDS), min_size=1, max_size=2))
def test_mutated_corpus_files(texts: list[str]) -> None:
    _check({f"c{i}.yaml": text for i, text in enumerate(texts)})


@FUZZ_SETTINGS
@given(st.lists(workload(), min_size=1, max_size=3), st.booleans())
def test_generated_pod_specs(objects: list[dict], claims_file: bool) -> None:
    files = {f"w{i}.yaml": yaml.safe_dump(obj, sort_keys=False) for i, obj in enumerate(objects)}
    _check(files, "gpu-claims.yaml" if claims_file else None)


@FUZZ_SETTINGS
@given(st.lists(workload(), min_size=1, max_size=3), st.booleans(), st.booleans())
def test_generated_json_manifests(objects: list[dict], as_list: bool, compact: bool) -> None:
    """JSON manifests are converted in place (a List, or objects with their claims files)."""
    indent = None if compact else 2
    if as_list:
        files = {"all.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": objects},
                                        indent=indent)}
    else:
        files = {f"w{i}.json": json.dumps(obj, indent=indent) for i, obj in enumerate(objects)}
    _check(files)
