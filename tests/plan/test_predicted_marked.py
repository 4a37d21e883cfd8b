"""plan's verdict lines mark the nodes whose devices are predicted (a node still on the device
plugin: its devices come from its labels), as the JSON counts them `predicted` (issue 36,
item 5: the table showed them like devices a driver publishes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.verify import fleet as f

NS = "ml"

# (inventory, the nodes the table must mark)
CASES: dict[str, tuple[list[dict[str, Any]], set[str]]] = {
    "published": ([f.node("dra-1", 4, dra=True), f.gpu_slice("dra-1", 4), f.device_class()],
                  set()),
    "predicted": ([f.node("plugin-1", 4), f.device_class()], {"plugin-1"}),
    "both": ([f.node("dra-1", 2, dra=True), f.gpu_slice("dra-1", 2), f.node("plugin-1", 4),
              f.device_class()], {"plugin-1"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_predicted_nodes_are_marked_in_the_table(case: str, tmp_path: Path) -> None:
    inventory, marked = CASES[case]
    workload = f.deployment(NS, "serve", f.pod_spec(template_name="gpu"), 3)
    (tmp_path / "w.yaml").write_text(yaml.safe_dump_all([workload, f.template(NS, "gpu")]))
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump_all(inventory))
    args = ["plan", str(tmp_path / "w.yaml"), "--inventory", str(tmp_path / "inventory.yaml")]
    env = {"NO_COLOR": "1", "COLUMNS": ""}
    data = json.loads(CliRunner().invoke(app, [*args, "-o", "json"], env=env).stdout)
    predicted = {n for n, d in data["devices"]["by_node"].items() if d["predicted"]}
    assert predicted == marked
    table = CliRunner().invoke(app, args, env=env).stdout
    named = {n for r in data["workloads"][0]["requests"] for n in r["nodes"]}
    assert named  # the request names nodes: each is marked exactly when predicted
    for node in named:
        assert (f"{node} (predicted)" in table) is (node in marked), table
