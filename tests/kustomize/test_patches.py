"""Patch reading: kinds, JSON pointers, device operations, lines of inline patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudra.kustomize.patches import device_ops, pointer, pointer_tokens
from gpudra.kustomize.tree import load_tree


@pytest.mark.parametrize(("text", "tokens"), [
    ("/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
     ("spec", "template", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu")),
    ("/a~0b/c~01", ("a~b", "c~1")),  # ~01 is `~` then `1`, not `/`
    ("", ()),
])
def test_pointer_escapes(text: str, tokens: tuple) -> None:
    assert pointer_tokens(text) == tokens
    assert pointer(tokens) == text


def test_device_ops() -> None:
    ops = [
        {"op": "replace", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu",
         "value": 2},
        {"op": "add", "path": "/spec/containers/1/resources",
         "value": {"limits": {"nvidia.com/mig-1g.10gb": 1, "cpu": 1}}},
        {"op": "add", "path": "/spec/nodeSelector/nvidia.com~1gpu.product", "value": "A100"},
        {"op": "replace", "path": "/spec/replicas", "value": 3},
    ]
    found = device_ops(ops)
    assert [(d.index, d.resource.name, d.value, d.whole) for d in found] == [
        (0, "nvidia.com/gpu", 2, True), (1, "nvidia.com/mig-1g.10gb", 1, False)]


def test_patch_kinds_and_inline_lines(tmp_path: Path) -> None:
    (tmp_path / "ops.yaml").write_text("- op: remove\n  path: /spec/replicas\n")
    (tmp_path / "smp.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    (tmp_path / "kustomization.yaml").write_text(
        "resources: []\n"
        "patches:\n"
        "- path: ops.yaml\n"
        "  target: {kind: Pod}\n"
        "- path: smp.yaml\n"
        "- patch: |-\n"
        "    - op: add\n"
        "      path: /spec/x\n"
        "      value: 1\n"
        "  target: {kind: Pod}\n"
        "patchesStrategicMerge:\n"
        "- \"apiVersion: v1\\nkind: Pod\\nmetadata: {name: p}\\n\"\n")
    tree = load_tree([str(tmp_path)])
    assert not tree.errors
    (k,) = tree.kustomizations.values()
    kinds = {(p.field, p.index): (p.json6902, p.inline) for p in k.patches}
    assert kinds == {("patches", 0): (True, False), ("patches", 1): (False, False),
                     ("patches", 2): (True, True), ("patchesStrategicMerge", 0): (False, True)}
    inline = next(p for p in k.patches if p.field == "patches" and p.index == 2)
    assert inline.line_of(inline.docs[0], (0, "path")) == 8
    quoted = next(p for p in k.patches if p.field == "patchesStrategicMerge")
    assert quoted.line_of(quoted.docs[0], ("metadata",)) == 12  # not a literal block: its entry


def test_remote_resources_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n- https://github.com/org/repo//deploy?ref=v1\n"
        "- github.com/org/repo/base?ref=main\n")
    tree = load_tree([str(tmp_path)])
    (k,) = tree.kustomizations.values()
    assert len(k.remote) == 2 and not k.resources and not tree.errors
