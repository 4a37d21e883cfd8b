"""Every table every command prints, at 60, 80 and 120 columns, with long names: no name, path
or expression is split across two lines, and nothing is cut with an ellipsis (issue 36 item 2:
`NVIDIA_VISIBLE_DEVI` / `CES`, `StatefulSet/notebo` / `ok`, `replace("` / `", "-")`).

Each case runs one command through the CLI with $COLUMNS set, on a tree (and, where the command
reads one, a cluster: the fake API server) holding long names, and names the values that must
each come out whole on one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.report.layout import units, wrap
from tests.fakeapi import FakeCluster

WIDTHS = (60, 80, 120)
NAMESPACE = "research-team-with-a-long-namespace-name"
JOB = "train-bert-large-with-a-name-longer-than-the-column"
NOTEBOOK = "notebook-for-the-data-science-team-of-research"
CEL = 'productName.replace(" ", "-")'
JOB_FILE = f"manifests/{NAMESPACE}/job.yaml"  # a path longer than a narrow column
STATE = Path(__file__).resolve().parents[1] / "fakeapi" / "testdata" / "examples-cluster.yaml"

JOB_YAML = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: {JOB}, namespace: {NAMESPACE}}}
spec:
  template:
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
      containers:
      - name: trainer
        image: x
        env: [{{name: NVIDIA_VISIBLE_DEVICES, value: all}}]
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
NOTEBOOK_YAML = f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {NOTEBOOK}, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: nb}}}}
  template:
    metadata: {{labels: {{app: nb}}}}
    spec:
      containers:
      - name: jupyter
        image: x
        resources: {{limits: {{nvidia.com/mig-1g.10gb: 1}}}}
"""
NODES = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"gpu-{i}", "labels": {
              "pool": "h100-pool-of-the-research-team", "nvidia.com/gpu.count": "8",
              "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81920"}},
          "status": {"allocatable": {"nvidia.com/gpu": "8"}}} for i in range(2)]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / JOB_FILE).parent.mkdir(parents=True)
    (tmp_path / JOB_FILE).write_text(JOB_YAML)
    (tmp_path / "manifests" / "notebook.yaml").write_text(NOTEBOOK_YAML)
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(NODES))
    (tmp_path / "exported.yaml").write_text(yaml.safe_dump_all(NODES) + "---\n" + JOB_YAML)
    return tmp_path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeCluster]:
    """The docs' example cluster plus the long-named Job, running on the device plugin."""
    state = yaml.safe_load(STATE.read_text())
    job = yaml.safe_load(JOB_YAML)
    pod_spec = {**job["spec"]["template"]["spec"], "nodeName": "gpu-a100-1"}
    state["objects"] += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {**job, "metadata": {**job["metadata"], "uid": "job-uid"}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"{JOB}-x7k2p", "namespace": NAMESPACE,
                      "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB,
                                           "uid": "job-uid", "controller": True}]},
         "spec": pod_spec, "status": {"phase": "Running"}}]
    with FakeCluster(state) as fake:
        yield fake


# command line, the values that must each be whole on one line
CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "audit": (["audit", "manifests"],
              (f"Job/{JOB}", f"StatefulSet/{NOTEBOOK}", "NVIDIA_VISIBLE_DEVICES='all'", CEL,
               "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3", "nvidia.com/mig-1g.10gb",
               NAMESPACE, JOB_FILE)),
    "preflight": (["preflight", "--manifests", "manifests"],
                  (f"{JOB_FILE}:12", "nvidia.com/mig-1g.10gb", "MANIFEST003")),
    "plan": (["plan", "manifests", "--inventory", "nodes.yaml"], (JOB, NOTEBOOK)),
    "convert": (["convert", "manifests", "--diff"], (JOB_FILE,)),
    "cutover": (["cutover", "--from", "exported.yaml", "--pool-label", "pool"],
                ("h100-pool-of-the-research-team", "--decommission")),
    "explain": (["explain", "GPU301"], (CEL, "nvidia.com/gpu.product")),
    "rules": (["rules"], ("gfd-node-selector",)),
    "checks": (["checks"], ("MANIFEST002",)),
}
LIVE_CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "audit-cluster": (["audit"], (f"Job/{JOB}", "NVIDIA_VISIBLE_DEVICES='all'", CEL, NAMESPACE)),
    "verify": (["verify"], (JOB,)),
    "preflight-cluster": (["preflight"], ("gpu-a100-1",)),
}


def _run(args: list[str], width: int, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": str(width),
                                                **(env or {})})
    assert result.exit_code in (0, 1, 4), (args, result.exit_code, result.output)
    return result.stdout


def _assert_whole(text: str, values: tuple[str, ...], width: int) -> None:
    lines = text.splitlines()
    assert "…" not in text, text
    for value in values:
        assert any(value in line for line in lines), f"{value!r} split at {width}:\n{text}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_value_is_split_across_lines(tree: Path, case: str, width: int) -> None:
    args, values = CASES[case]
    _assert_whole(_run(args, width), values, width)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(LIVE_CASES))
def test_no_value_of_a_cluster_is_split_across_lines(cluster: FakeCluster, case: str,
                                                     width: int) -> None:
    args, values = LIVE_CASES[case]
    _assert_whole(_run(args, width, {"KUBECONFIG": str(cluster.kubeconfig)}), values, width)


@pytest.mark.parametrize(("text", "want"), [
    ("container 'server' sets NVIDIA_VISIBLE_DEVICES='all': fights CDI",
     ["container", "'server'", "sets", "NVIDIA_VISIBLE_DEVICES='all':", "fights", "CDI"]),
    (f"(compare {CEL} with the label value)",
     ["(compare", CEL, "with", "the", "label", "value)"]),
    ('memory.compareTo(quantity("<N>Mi"))) and more', ['memory.compareTo(quantity("<N>Mi")))',
                                                      "and", "more"]),
    ("the pod's node (label is MiB, capacity is bytes)",
     ["the", "pod's", "node", "(label", "is", "MiB,", "capacity", "is", "bytes)"]),
    ("path '/srv/my charts/a.yaml' is read", ["path", "'/srv/my charts/a.yaml'", "is", "read"]),
    ("an unclosed call(a b", ["an", "unclosed", "call(a", "b"]),
], ids=["words", "call", "nested", "prose-brackets", "quoted-path", "unclosed"])
def test_units_keep_expressions_whole(text: str, want: list[str]) -> None:
    assert units(text) == want


@pytest.mark.parametrize(("text", "width", "want"), [
    ("a bb ccc dddd", 6, ["a bb", "ccc", "dddd"]),
    ("short NVIDIA_VISIBLE_DEVICES x", 10, ["short", "NVIDIA_VISIBLE_DEVICES", "x"]),
    ("  → run gpudra convert now", 14, ["  → run gpudra", "    convert", "    now"]),
    ("one line whatever its length", None, ["one line whatever its length"]),
], ids=["greedy", "too-long-alone", "hanging-arrow", "no-width"])
def test_wrap_breaks_only_between_units(text: str, width: int | None,
                                        want: list[str]) -> None:
    assert wrap(text, width) == want
