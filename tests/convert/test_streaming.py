"""Convert's memory does not grow with the number of GPU documents: each file is planned and
edited as it is read, and its YAML node trees are let go before the next file is read.

The shape is measured by counting node trees (yamledit.yaml_nodes.NodeDocument with a root) alive
each time a new one is composed, not by RSS: that count is exact and independent of the
allocator. The cross-file facts (names unique across the tree, quotas after every workload)
still hold, with the results of a whole-tree reading.
"""

from __future__ import annotations

import tempfile
import weakref
from pathlib import Path

import pytest

from gpudra.convert.converter import convert_paths
from gpudra.convert.planner import ConvertOptions
from gpudra.convert.spool import Spooled
from gpudra.dra.versions import DEFAULT
from gpudra.yamledit import yaml_nodes as nodes

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  template:
    spec:
      containers:
      - name: c
        image: cuda
        resources:
          limits:
            nvidia.com/gpu: 1
"""
CLAIM_TEMPLATE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: ml}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.nvidia.com}}
"""
QUOTA = """apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: ml}
spec:
  hard:
    requests.nvidia.com/gpu: "4"
"""


@pytest.fixture
def alive(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of node trees alive at each compose, recorded as it happens."""
    trees: list[weakref.ref] = []
    counts: list[int] = []
    compose = nodes.compose

    def counting(text: str) -> nodes.NodeDocument:
        doc = compose(text)
        trees.append(weakref.ref(doc))
        counts.append(sum(1 for ref in trees if (t := ref()) is not None and t.root is not None))
        return doc

    monkeypatch.setattr(nodes, "compose", counting)
    return counts


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _convert(root: Path):
    return convert_paths([str(root)], ConvertOptions(target=DEFAULT))


def test_node_trees_do_not_accumulate(tmp_path: Path, alive: list[int]) -> None:
    root = _tree(tmp_path, {f"apps/{i:02d}.yaml": DEPLOYMENT.format(name=f"w{i}")
                            for i in range(40)})
    report = _convert(root)
    assert [r.strategy for r in report.results] == ["rewrite"] * 40
    assert len(report.changes) == 40
    assert len(alive) >= 40
    assert max(alive) <= 2, f"node trees alive at once: {max(alive)}"


def test_a_name_taken_by_a_later_file_is_never_handed_out(tmp_path: Path,
                                                          alive: list[int]) -> None:
    """`w0-gpu` exists in the last file read: the first workload must not get that name, as
    when every file is read before any is planned."""
    files = {f"a{i}.yaml": DEPLOYMENT.format(name=f"w{i}") for i in range(3)}
    files["z.yaml"] = CLAIM_TEMPLATE.format(name="w0-gpu")
    report = _convert(_tree(tmp_path, files))
    created = {r.name: r.created for r in report.results if r.strategy == "rewrite"}
    assert created == {"w0": ("w0-gpu-2",), "w1": ("w1-gpu",), "w2": ("w2-gpu",)}
    new = next(c.new for c in report.changes if c.label.endswith("a0.yaml")).decode()
    assert "name: w0-gpu-2" in new and "name: w0-gpu\n" not in new


def test_a_quota_waits_for_every_workload(tmp_path: Path, alive: list[int]) -> None:
    """The quota is read first; whether its device-plugin key can go depends on a workload
    read after it (blocked here: requests != limits), so it is planned last."""
    blocked = DEPLOYMENT.format(name="late").replace(
        "          limits:\n            nvidia.com/gpu: 1\n",
        "          limits:\n            nvidia.com/gpu: 2\n"
        "          requests:\n            nvidia.com/gpu: 1\n")
    files = {"a-quota.yaml": QUOTA, **{f"b{i}.yaml": DEPLOYMENT.format(name=f"w{i}")
                                       for i in range(5)}, "c.yaml": blocked}
    report = _convert(_tree(tmp_path, files))
    strategies = [(Path(r.file).name, r.strategy) for r in report.results]
    assert strategies[0][0] == "a-quota.yaml"  # results stay in file order
    assert ("c.yaml", "blocked") in strategies
    quota = next(c for c in report.changes if c.label.endswith("a-quota.yaml")).new.decode()
    assert "requests.nvidia.com/gpu" in quota  # kept: a workload stays on the device plugin
    assert max(alive) <= 3  # the quota's own tree waits; the workloads' do not



def test_changed_bytes_wait_on_disk_and_read_back_the_same(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The changed files' bytes are kept in the spool, not in memory; without a writable
    temporary directory they stay in memory, with the same result."""
    root = _tree(tmp_path / "tree", {f"{i}.yaml": DEPLOYMENT.format(name=f"w{i}")
                                     for i in range(3)})
    spooled = _convert(root)
    assert all(isinstance(c.stored_new, Spooled) and isinstance(c.stored_old, Spooled)
               for c in spooled.changes)

    def no_temp(*args, **kwargs):
        raise OSError("no temporary directory")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_temp)
    in_memory = _convert(root)
    assert all(isinstance(c.stored_new, bytes) for c in in_memory.changes)
    assert [(c.label, c.old, c.new) for c in spooled.changes] == \
        [(c.label, c.old, c.new) for c in in_memory.changes]
    assert spooled.changes[0].old == (root / "0.yaml").read_bytes()
