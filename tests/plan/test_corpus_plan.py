"""The corpus's DRA manifests (../shared/corpus) planned against the hand-made inventories.

Skipped cleanly where the corpus is absent. Files that are templates (Helm/Go) do not parse and
are left out, as `gpudra plan` reports them rather than planning them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudra.dra.cel import engine_available
from gpudra.plan import parse_inventory, plan

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = [pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present"),
              pytest.mark.skipif(not engine_available(), reason="cel-expr-python not installed")]

# Workloads (kind/namespace/name) of the corpus's DRA files and what the plan must say.
EXPECTED = {
    ("Pod", "gpu-test1", "pod1"): (True, None),
    ("Pod", "gpu-test1", "pod2"): (True, None),
    ("Pod", "gpu-test2", "pod"): (True, None),  # v1beta1 flat request
    ("Pod", "gpu-test-mps", "test-pod"): (True, None),
    # The NVIDIA quickstart asks for 1g.5gb/2g.10gb/3g.20gb (an A100 40GB); ours are 80GB.
    ("Deployment", "gpu-test4", "pod"): (False, ('profile == "1g.5gb": 0 of 9 devices match; '
                                                 "values present: 1g.10gb (7), 3g.40gb (2)")),
    ("Job", "default", "sample-dra-rct-job-"): (False, "DeviceClass 'gpu.example.com' not found"),
    # Its nodeSelector (a GKE compute class) matches none of the labelled nodes; node-mig has
    # no Node object, so its labels are unknown and it stays eligible, without full GPUs.
    ("Deployment", None, "ccc-gpu"): (False, ("needs 1 matching device on one node; node "
                                             "node-mig has 0")),
    ("Pod", "initcontainer-shared-gpu", "pod0"): (False, "DeviceClass 'gpu.example.com'"),
    ("Pod", "basic-resourceclaimtemplate", "pod0"): (False, "DeviceClass 'gpu.example.com'"),
    ("Pod", "basic-resourceclaimtemplate", "pod1"): (False, "DeviceClass 'gpu.example.com'"),
}


def dra_documents() -> tuple[list[dict[str, Any]], list[str]]:
    objects: list[dict[str, Any]] = []
    templates: list[str] = []
    for path in sorted(CORPUS.rglob("*.y*ml")):
        text = path.read_text(errors="replace")
        if "resource.k8s.io" not in text:
            continue
        try:
            docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        except yaml.YAMLError:
            templates.append(path.name)
            continue
        objects.extend(docs)
    return objects, templates


@pytest.fixture(scope="module")
def report():
    objects, _ = dra_documents()
    slices = [d for name in ("inventory-a100-h100.yaml", "inventory-mig.yaml")
              for d in yaml.safe_load_all((FIXTURES / name).read_text())]
    return plan(objects, parse_inventory(slices))


def test_templates_are_left_out() -> None:
    _, templates = dra_documents()
    assert "templates__resourceclaimtemplate.yaml" in templates  # the ollama Helm chart


def test_every_dra_workload_is_planned(report) -> None:
    got = {(w.kind, w.namespace, w.name): w for w in report.workloads}
    assert set(got) == set(EXPECTED)
    for key, (satisfiable, fragment) in EXPECTED.items():
        workload = got[key]
        assert workload.satisfiable is satisfiable, (key, workload.reason)
        if fragment:
            assert fragment in workload.reason, (key, workload.reason)


def test_extended_resource_pods_are_listed_as_not_on_claims(report) -> None:
    names = {name for _, name, _ in report.unconverted}
    assert {"gpu-full-pod", "mig-1g12gb-pod"} <= names


def test_the_chart_class_for_mig_1g_12gb_is_taken_from_the_input(report) -> None:
    # the extended-resource demo defines its own class; nothing requests it through a claim,
    # so its devices (none here) are not matched and the run has no problems.
    assert report.problems == ()
