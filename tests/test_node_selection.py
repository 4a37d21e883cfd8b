"""gpudra.k8s.node_selection: which nodes a pod template's nodeSelector and required node affinity
select, and how that selection is said (CLUSTER006 says a DaemonSet's own selection)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudra.k8s.node_selection import describe_selection, selects_node

GPU_STACK = {"nodeSelector": {"gpudra.io/gpu-stack": "dra"}}
CHART_DEFAULT = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present",
                               "operator": "In", "values": ["true"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                               "values": ["true"]}]}]}}}}
EXPRESSIONS = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "pool", "operator": "NotIn", "values": ["cpu", "old"]},
        {"key": "gpus", "operator": "Gt", "values": ["3"]},
        {"key": "legacy", "operator": "DoesNotExist"}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}]}}}}
EMPTY_TERM = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{}]}}}}

SELECTS = [
    # (spec, node labels, node name, selected)
    (GPU_STACK, {"gpudra.io/gpu-stack": "dra"}, "n1", True),
    (GPU_STACK, {"gpudra.io/gpu-stack": "plugin"}, "n1", False),
    (GPU_STACK, {}, "n1", False),
    (CHART_DEFAULT, {"nvidia.com/gpu.present": "true"}, "n1", True),
    (CHART_DEFAULT, {"feature.node.kubernetes.io/pci-10de.present": "true"}, "n1", True),
    (CHART_DEFAULT, {"nvidia.com/gpu.present": "false"}, "n1", False),
    (EXPRESSIONS, {"pool": "gpu", "gpus": "8"}, "n1", True),
    (EXPRESSIONS, {"pool": "old", "gpus": "8"}, "n1", False),
    (EXPRESSIONS, {"gpus": "2"}, "n2", False),
    (EXPRESSIONS, {"gpus": "eight"}, "n2", False),
    (EXPRESSIONS, {"gpus": "8", "legacy": ""}, "n2", False),
    (EXPRESSIONS, {"gpus": "8"}, "n3", False),
    (EMPTY_TERM, {"any": "x"}, "n1", False),
    ({}, {}, "n1", True),
    ({**GPU_STACK, **CHART_DEFAULT}, {"gpudra.io/gpu-stack": "dra"}, "n1", False),
    ({**GPU_STACK, **CHART_DEFAULT}, {"gpudra.io/gpu-stack": "dra",
                                      "nvidia.com/gpu.present": "true"}, "n1", True),
]


@pytest.mark.parametrize(("spec", "labels", "name", "selected"), SELECTS)
def test_selects_node(spec: dict[str, Any], labels: dict[str, str], name: str,
                      selected: bool) -> None:
    assert selects_node(spec, labels, name) is selected


DESCRIBED = [
    (GPU_STACK, "nodeSelector gpudra.io/gpu-stack=dra"),
    (CHART_DEFAULT, ("node affinity (feature.node.kubernetes.io/pci-10de.present=true) or "
                     "(nvidia.com/gpu.present=true)")),
    (EXPRESSIONS, ("node affinity pool not in (cpu, old) and gpus > 3 and legacy does not "
                   "exist and metadata.name in (n1, n2)")),
    (EMPTY_TERM, "node affinity an empty term (matches no node)"),
    ({}, "no node selector or required node affinity"),
    ({**GPU_STACK, **CHART_DEFAULT}, ("nodeSelector gpudra.io/gpu-stack=dra and node affinity "
                                      "(feature.node.kubernetes.io/pci-10de.present=true) or "
                                      "(nvidia.com/gpu.present=true)")),
]


@pytest.mark.parametrize(("spec", "said"), DESCRIBED)
def test_describe_selection(spec: dict[str, Any], said: str) -> None:
    assert describe_selection(spec) == said


@pytest.mark.parametrize("junk", [{"nodeSelector": "x"}, {"affinity": []},
                                  {"affinity": {"nodeAffinity": {
                                      "requiredDuringSchedulingIgnoredDuringExecution": {
                                          "nodeSelectorTerms": ["x", {"matchExpressions": 3}]}}}}])
def test_junk_selects_nothing_it_cannot_read_and_is_still_said(junk: dict[str, Any]) -> None:
    """Untrusted input: a malformed selection never raises."""
    assert isinstance(selects_node(junk, {}, "n1"), bool)
    assert describe_selection(junk)
